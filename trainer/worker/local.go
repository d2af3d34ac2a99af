/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package worker

import (
	"context"
	"fmt"
)

// Local is a Member that calls a Policy in this process, with the contracts a
// remote worker has (the order of calls, locking, defaults and checks of the
// options, atomic Save, Save and Load confined to its allowed folders) and no
// serialisation: requests are read, not copied, during a call and must not change
// until it returns; results belong to the caller.
type Local struct{ g guarded }

// NewLocal returns p as a Member, not configured yet, whose Save and Load (and
// Configure's LoadPath) accept only paths under the allowed folders after cleaning
// and resolving symbolic links; any other path, and every path when no folder is allowed, is an error
// wrapping ErrPathNotAllowed. The trainer gives its in-process members its own
// folders: the checkpoint, initial-checkpoint and output folders of its run config.
func NewLocal(p Policy, allowed ...string) *Local { return &Local{g: newGuarded(p, allowed)} }

// String names the member in errors.
func (*Local) String() string { return "in process" }

func (l *Local) Configure(ctx context.Context, s Setup) (Description, error) {
	if err := ctx.Err(); err != nil {
		return Description{}, err
	}
	return l.g.configure(s)
}

func (l *Local) Generate(ctx context.Context, prompts []Prompt, o SampleOptions) ([][]Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cs, err := l.g.generate(promptMsgs(prompts), o)
	if err != nil {
		return nil, err
	}
	return samplesOf(cs), nil
}

func (l *Local) LogProbs(ctx context.Context, items []Scored, o ScoreOptions) ([]TokenLogProbs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lps, err := l.g.logProbs(scoredMsgs(items), o)
	if err != nil {
		return nil, err
	}
	return tokenLogProbsOf(lps), nil
}

func (l *Local) Backward(ctx context.Context, items []Weighted) (Backwarded, error) {
	if err := ctx.Err(); err != nil {
		return Backwarded{}, err
	}
	objective, tokens, err := l.g.backward(weightedMsgs(items))
	return Backwarded{Objective: objective, Tokens: tokens}, err
}

func (l *Local) Gradient(ctx context.Context) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.g.gradient()
}

func (l *Local) Step(ctx context.Context, o StepOptions) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	norm, _, err := l.g.step(o)
	return norm, err
}

func (l *Local) SnapshotReference(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.g.snapshotReference()
}

func (l *Local) Save(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := l.g.save(path)
	return err
}

// Release answers at once: an in-process policy has no process to stop.
func (l *Local) Release(ctx context.Context) error { return ctx.Err() }

// Embed fails with ErrNoEncoder: an in-process policy (the CPU policy) loads no
// sentence encoder.
func (l *Local) Embed(context.Context, []string) ([][]float64, error) {
	return nil, fmt.Errorf("%w: the in-process policy embeds nothing; spec.rewards.intent.embedder.worker needs the PyTorch worker", ErrNoEncoder)
}

// Export fails with ErrNoExport: the in-process policy is no Hugging Face model.
func (l *Local) Export(context.Context, string, bool) (Exported, error) {
	return Exported{}, fmt.Errorf("%w: the in-process CPU policy is no Hugging Face model; export needs the PyTorch worker", ErrNoExport)
}
