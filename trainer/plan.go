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
	"errors"
	"fmt"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Kind is how one epoch trains.
type Kind string

// The kinds of epoch.
const (
	// KindSFT is supervised cross-entropy on the demonstrated answers.
	KindSFT Kind = "sft"
	// KindESPO is ESPO: episodic batches, step rewards, COUT, fused advantages.
	KindESPO Kind = "espo"
	// KindGRPO is plain step-wise GRPO: shuffled steps, step advantages only.
	KindGRPO Kind = "grpo"
)

// Stage returns the status stage of the kind.
func (k Kind) Stage() trainingv1alpha1.TrainingStage {
	switch k {
	case KindESPO:
		return trainingv1alpha1.StageESPO
	case KindGRPO:
		return trainingv1alpha1.StageGRPO
	}
	return trainingv1alpha1.StageSFT
}

// epochPlan is one epoch of the run: its kind, its number within its kind (from 1) and
// the sampler that forms its batches of recorded steps (nil in an environment).
type epochPlan struct {
	kind    Kind
	number  int
	sampler *espo.Sampler
}

// plan is the whole run: every epoch in order, and the flattened training steps.
type plan struct {
	epochs []epochPlan
	// steps lists every training step (episode index, step index) in data order; the
	// samplers index into it.
	steps []stepRef
	// batches[i] is the number of batches of epoch i.
	batches []int
}

// stepRef names one step of the training data.
type stepRef struct {
	episode, step int
}

// newPlan lays out the run: algorithm sft runs sftEpochs + epochs epochs of SFT; espo
// and grpo run sftEpochs of SFT, then epochs of their own kind. SFT and ESPO epochs
// batch whole episodes (episodesPerBatch at a time, or as many as fit in
// maxStepsPerBatch steps, shuffled with the algorithm's seed and the epoch's index);
// GRPO epochs batch shuffled single steps, as many per batch as give the same number
// of batches per epoch as ESPO's first epoch, so both get the same budget.
func newPlan(alg *trainingv1alpha1.AlgorithmSpec, train []dataset.Episode) (*plan, error) {
	p := &plan{}
	episodeOf := make([]string, 0, len(train)*17)
	for e := range train {
		for s := range train[e].Steps {
			p.steps = append(p.steps, stepRef{episode: e, step: s})
			episodeOf = append(episodeOf, train[e].ID)
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
	sft, rl, rlKind := epochCounts(alg)
	for i := range sft {
		p.epochs = append(p.epochs, epochPlan{kind: KindSFT, number: i + 1, sampler: episodic})
	}
	rlSampler := episodic
	if rlKind == KindGRPO && rl > 0 {
		stepCfg := base
		batches := episodic.Epoch(0).Len()
		stepCfg.EpisodesPerBatch, stepCfg.StepBudget = (len(p.steps)+batches-1)/batches, 0
		if rlSampler, err = espo.NewStepSampler(len(p.steps), stepCfg); err != nil {
			return nil, fmt.Errorf("spec.algorithm: %w", err)
		}
	}
	for i := range rl {
		p.epochs = append(p.epochs, epochPlan{kind: rlKind, number: i + 1, sampler: rlSampler})
	}
	for i := range p.epochs {
		p.batches = append(p.batches, p.epochs[i].sampler.Epoch(i).Len())
	}
	return p, nil
}

// newLivedPlan lays out a run that lives in an environment: the epochs of newPlan,
// each of the given number of batches (of episodesPerBatch episode seeds each) and
// without a sampler, since the environment's seeds, not recorded steps, make up
// the batches.
func newLivedPlan(alg *trainingv1alpha1.AlgorithmSpec, batches int) *plan {
	p := &plan{}
	sft, rl, rlKind := epochCounts(alg)
	for i := range sft {
		p.epochs = append(p.epochs, epochPlan{kind: KindSFT, number: i + 1})
	}
	for i := range rl {
		p.epochs = append(p.epochs, epochPlan{kind: rlKind, number: i + 1})
	}
	for range p.epochs {
		p.batches = append(p.batches, batches)
	}
	return p
}

// epochCounts returns the number of SFT epochs and of epochs of the main kind:
// algorithm sft runs sftEpochs + epochs of SFT, espo and grpo sftEpochs of SFT then
// epochs of their own kind.
func epochCounts(alg *trainingv1alpha1.AlgorithmSpec) (sft, rl int, rlKind Kind) {
	sft, rl, rlKind = int(*alg.SFTEpochs), int(alg.Epochs), Kind(alg.Name)
	if rlKind == KindSFT {
		sft, rl = sft+rl, 0
	}
	return sft, rl, rlKind
}

// totalSteps returns the number of optimizer steps of the run.
func (p *plan) totalSteps() int64 {
	var n int64
	for _, b := range p.batches {
		n += int64(b)
	}
	return n
}

// at reports whether a checkpoint of this plan can hold the position (epoch, batch,
// step): epoch is an epoch of the plan, batch one of its batches or its end (the
// epoch's own checkpoint), and step the number of batches before that position.
func (p *plan) at(epoch, batch int, step int64) bool {
	if epoch < 0 || epoch >= len(p.epochs) || batch < 0 || batch > p.batches[epoch] {
		return false
	}
	before := int64(batch)
	for _, b := range p.batches[:epoch] {
		before += int64(b)
	}
	return step == before
}
