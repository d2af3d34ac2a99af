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

package trainer

import (
	"context"
	"fmt"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// experience is where a run's batches come from: recorded episodes, whose steps
// the policy answers on their recorded histories (recorded), or an environment the
// policy lives through, its answers changing what it sees next (lived). The
// training loop is one for both: it asks for a batch, scores its candidates
// against their ground truths, computes their advantages and takes a step.
type experience interface {
	// demonstrations returns batch b of SFT epoch e: groups whose steps are
	// answered by their episodes' own answers (backwardSFT trains on them).
	demonstrations(ctx context.Context, e, b int) ([]*group, error)
	// candidates returns batch b of reinforcement epoch e, its candidates sampled
	// by the current policy.
	candidates(ctx context.Context, e, b int) (batch, error)
	// evaluation returns the episodes of split ("validation" or "test"), their
	// answers the references the policy is judged against, and the policy's
	// greedy answer to each of their steps; no episodes when the run has no such
	// split.
	evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error)
}

// batch is the groups of one optimizer step.
type batch struct {
	groups []*group
	// families holds, for a batch lived through an environment, the indices in
	// groups of the G rollouts of each episode seed: each of those groups is one
	// rollout, one candidate per step. It is nil for recorded episodes, whose
	// groups hold G candidates of each step.
	families [][]int
}

// recorded is the experience of recorded episodes (spec.datasets.sources): the
// plan's samplers choose the steps of each batch, and the policy answers each on
// its recorded history (teacher-forced).
type recorded struct{ t *Trainer }

func (r recorded) demonstrations(_ context.Context, e, b int) ([]*group, error) {
	return r.t.groups(r.steps(e, b)), nil
}

func (r recorded) candidates(ctx context.Context, e, b int) (batch, error) {
	gs := r.t.groups(r.steps(e, b))
	return batch{groups: gs}, r.t.generate(ctx, gs)
}

// steps returns the plan's steps of batch b of epoch e.
func (r recorded) steps(e, b int) []int {
	return r.t.plan.epochs[e].sampler.Epoch(e).Steps(nil, b)
}

func (r recorded) evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
	eps := r.t.data.Validation
	if split == "test" {
		eps = r.t.data.Test
	}
	if len(eps) == 0 {
		return nil, nil, nil
	}
	answers, err := r.t.GreedyAnswers(ctx, eps)
	return eps, answers, err
}

// groups splits a batch's steps (indices into the plan's steps) into per-episode
// groups, in batch order.
func (t *Trainer) groups(steps []int) []*group {
	var gs []*group
	for _, i := range steps {
		ref := t.plan.steps[i]
		ep := &t.data.Train[ref.episode]
		if n := len(gs); n == 0 || gs[n-1].ep != ep {
			gs = append(gs, &group{ep: ep})
		}
		g := gs[len(gs)-1]
		g.steps = append(g.steps, ref.step)
		g.prompts = append(g.prompts, worker.NewPrompt(ep, ref.step))
	}
	return gs
}

// generate samples G candidates for every step of every group, one request per
// group with a seed derived from the run's seed, the step count and the episode, so
// candidates do not depend on how groups are dealt to workers.
func (t *Trainer) generate(ctx context.Context, gs []*group) error {
	reqs := make([]worker.Rollouts, len(gs))
	for i, g := range gs {
		reqs[i] = worker.Rollouts{Prompts: g.prompts, Options: t.sampling(int(t.cfg.Spec.Algorithm.GroupSize), g.ep.ID)}
	}
	samples, err := t.opts.Workers.Generate(ctx, reqs)
	if err != nil {
		return err
	}
	for i, g := range gs {
		g.samples = samples[i]
	}
	return nil
}

// sampling returns the options of sampling n candidates of a step of the episode
// named id at the current optimizer step.
func (t *Trainer) sampling(n int, id string) worker.SampleOptions {
	return worker.SampleOptions{Samples: n, Temperature: t.res.Temperature,
		Seed: sampleSeed(uint64(t.cfg.Spec.Algorithm.Seed), t.state.Step, id)}
}

// EvaluationEpisodes returns the episodes of split ("validation" or "test") with the
// policy's greedy answer to each step: the recorded episodes, answered on their
// recorded histories, or, in an environment, the split's held-out episodes lived
// through (their answers the references the policy is judged against).
func (t *Trainer) EvaluationEpisodes(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
	return t.exp.evaluation(ctx, split)
}

// evaluationSplit lives through (or replays) split's episodes and scores the
// policy's greedy answers; nil without episodes of that split.
func (t *Trainer) evaluationSplit(ctx context.Context, split string) (*EvalResult, error) {
	eps, answers, err := t.exp.evaluation(ctx, split)
	if err != nil {
		return nil, fmt.Errorf("evaluating the %s split: %w", split, err)
	}
	if len(eps) == 0 {
		return nil, nil
	}
	return t.EvaluateAnswers(ctx, split, eps, answers)
}
