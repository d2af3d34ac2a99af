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

package experience

import (
	"context"
	"errors"
	"fmt"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Recorded is the experience of recorded episodes (spec.datasets.sources): samplers
// choose the steps of each batch, and the policy answers each on its recorded
// history (teacher-forced).
type Recorded struct {
	data   *Splits
	policy Policy
	plan   *plan.Plan
	// samplers[i] forms the batches of epoch i.
	samplers []*espo.Sampler
	// steps lists every training step in data order; the samplers index into it.
	steps []stepRef
}

// stepRef names one step of the training data.
type stepRef struct {
	episode, step int
}

// NewRecorded returns the experience of data, batched as alg says and answered by p.
// SFT and ESPO epochs batch whole episodes (episodesPerBatch at a time, or as many as
// fit in maxStepsPerBatch steps, shuffled with the algorithm's seed and the epoch's
// index); GRPO epochs batch shuffled single steps, as many per batch as give the same
// number of batches per epoch as ESPO's first epoch, so both get the same budget.
func NewRecorded(data *Splits, alg *trainingv1alpha1.AlgorithmSpec, p Policy) (*Recorded, error) {
	r := &Recorded{data: data, policy: p}
	episodeOf := make([]string, 0, len(data.Train)*17)
	for e := range data.Train {
		for s := range data.Train[e].Steps {
			r.steps = append(r.steps, stepRef{episode: e, step: s})
			episodeOf = append(episodeOf, data.Train[e].ID)
		}
	}
	base := espo.DefaultSamplerConfig()
	base.Seed = uint64(alg.Seed)
	base.EpisodesPerBatch = int(alg.EpisodesPerBatch)
	if alg.MaxStepsPerBatch != nil {
		if alg.EpisodesPerBatch != 1 {
			return nil, errors.New("spec.algorithm: episodesPerBatch and maxStepsPerBatch are two ways to size a batch: set one (leave episodesPerBatch at 1 with maxStepsPerBatch)")
		}
		base.StepBudget = int(*alg.MaxStepsPerBatch)
	}
	episodic, err := espo.NewEpisodeSampler(episodeOf, base)
	if err != nil {
		return nil, fmt.Errorf("spec.algorithm: %w", err)
	}
	stepwise := episodic
	if _, rl, kind := plan.Counts(alg); kind == plan.GRPO && rl > 0 {
		stepCfg := base
		batches := episodic.Epoch(0).Len()
		stepCfg.EpisodesPerBatch, stepCfg.StepBudget = (len(r.steps)+batches-1)/batches, 0
		if stepwise, err = espo.NewStepSampler(len(r.steps), stepCfg); err != nil {
			return nil, fmt.Errorf("spec.algorithm: %w", err)
		}
	}
	r.plan = plan.New(alg, func(i int, k plan.Kind) int {
		s := episodic
		if k == plan.GRPO {
			s = stepwise
		}
		r.samplers = append(r.samplers, s)
		return s.Epoch(i).Len()
	})
	return r, nil
}

// Plan returns the run's epochs.
func (r *Recorded) Plan() *plan.Plan { return r.plan }

// Recorded returns the loaded episodes.
func (r *Recorded) Recorded() *Splits { return r.data }

// Vocab returns every value of each preference slot of every split.
func (r *Recorded) Vocab() espo.SlotVocab {
	return dataset.SlotVocab(r.data.Train, r.data.Validation, r.data.Test)
}

// Close does nothing: recorded episodes hold nothing open.
func (r *Recorded) Close() error { return nil }

// Demonstrations returns the groups of the batch's steps, answered by their episodes.
func (r *Recorded) Demonstrations(_ context.Context, e, b int) ([]*Group, error) {
	return r.groups(r.batchSteps(e, b)), nil
}

// Candidates returns the groups of the batch's steps with s.G candidates sampled for
// each step.
func (r *Recorded) Candidates(ctx context.Context, e, b int, s Sampling) (Batch, error) {
	gs := r.groups(r.batchSteps(e, b))
	return Batch{Groups: gs}, r.generate(ctx, gs, s)
}

// batchSteps returns the steps of batch b of epoch e, as indices into r.steps.
func (r *Recorded) batchSteps(e, b int) []int {
	return r.samplers[e].Epoch(e).Steps(nil, b)
}

// Evaluation returns the split's recorded episodes with the policy's greedy answers.
func (r *Recorded) Evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
	eps := r.data.Validation
	if split == "test" {
		eps = r.data.Test
	}
	if len(eps) == 0 {
		return nil, nil, nil
	}
	answers, err := GreedyAnswers(ctx, r.policy, eps)
	return eps, answers, err
}

// groups splits a batch's steps (indices into the steps) into per-episode groups, in
// batch order.
func (r *Recorded) groups(steps []int) []*Group {
	var gs []*Group
	for _, i := range steps {
		ref := r.steps[i]
		ep := &r.data.Train[ref.episode]
		if n := len(gs); n == 0 || gs[n-1].Episode != ep {
			gs = append(gs, &Group{Episode: ep})
		}
		g := gs[len(gs)-1]
		g.Steps = append(g.Steps, ref.step)
		g.Prompts = append(g.Prompts, worker.NewPrompt(ep, ref.step))
	}
	return gs
}

// generate samples s.G candidates for every step of every group, one request per
// group, seeded by the run's seed, the step count and the episode.
func (r *Recorded) generate(ctx context.Context, gs []*Group, s Sampling) error {
	reqs := make([]worker.Rollouts, len(gs))
	for i, g := range gs {
		reqs[i] = worker.Rollouts{Prompts: g.Prompts, Options: s.options(s.G, g.Episode.ID)}
	}
	samples, err := r.policy.Generate(ctx, reqs)
	if err != nil {
		return err
	}
	for i, g := range gs {
		g.Samples = samples[i]
	}
	return nil
}
