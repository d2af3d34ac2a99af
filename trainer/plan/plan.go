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

// Package plan lays out a run: its epochs in order, what kind of training each is,
// and how many batches (optimizer steps) each takes. A source of experience says how
// many batches an epoch of each kind has; the plan says nothing of what is in them.
package plan

import (
	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Kind is how one epoch trains.
type Kind string

// The kinds of epoch.
const (
	// SFT is supervised cross-entropy on the demonstrated answers.
	SFT Kind = "sft"
	// ESPO is ESPO: episodic batches, step rewards, COUT, fused advantages.
	ESPO Kind = "espo"
	// GRPO is plain step-wise GRPO: shuffled steps, step advantages only.
	GRPO Kind = "grpo"
)

// Stage returns the status stage of the kind.
func (k Kind) Stage() trainingv1alpha1.TrainingStage {
	switch k {
	case ESPO:
		return trainingv1alpha1.StageESPO
	case GRPO:
		return trainingv1alpha1.StageGRPO
	}
	return trainingv1alpha1.StageSFT
}

// Epoch is one epoch of the run: its kind, its number within its kind (from 1) and
// its number of batches.
type Epoch struct {
	Kind    Kind
	Number  int
	Batches int
}

// Plan is the whole run: every epoch in order.
type Plan struct {
	Epochs []Epoch
}

// New lays out the epochs of alg: algorithm sft runs sftEpochs + epochs epochs of
// SFT; espo and grpo run sftEpochs of SFT, then epochs of their own kind. batches
// returns the number of batches of epoch index i, of kind k; New calls it once
// per epoch, in order.
func New(alg *trainingv1alpha1.AlgorithmSpec, batches func(i int, k Kind) int) *Plan {
	p := &Plan{}
	sft, rl, rlKind := Counts(alg)
	for i := range sft {
		p.Epochs = append(p.Epochs, Epoch{Kind: SFT, Number: i + 1})
	}
	for i := range rl {
		p.Epochs = append(p.Epochs, Epoch{Kind: rlKind, Number: i + 1})
	}
	for i := range p.Epochs {
		p.Epochs[i].Batches = batches(i, p.Epochs[i].Kind)
	}
	return p
}

// Counts returns the number of SFT epochs and of epochs of the main kind: algorithm
// sft runs sftEpochs + epochs of SFT, espo and grpo sftEpochs of SFT then epochs of
// their own kind.
func Counts(alg *trainingv1alpha1.AlgorithmSpec) (sft, rl int, rlKind Kind) {
	sft, rl, rlKind = int(*alg.SFTEpochs), int(alg.Epochs), Kind(alg.Name)
	if rlKind == SFT {
		sft, rl = sft+rl, 0
	}
	return sft, rl, rlKind
}

// TotalSteps returns the number of optimizer steps of the run.
func (p *Plan) TotalSteps() int64 {
	var n int64
	for _, e := range p.Epochs {
		n += int64(e.Batches)
	}
	return n
}

// KindAt returns the kind of the epoch that optimizer step s (counted from 0)
// belongs to; a step past the plan's end is the last epoch's, an empty plan's SFT.
func (p *Plan) KindAt(s int64) Kind {
	for _, e := range p.Epochs {
		if s < int64(e.Batches) {
			return e.Kind
		}
		s -= int64(e.Batches)
	}
	if len(p.Epochs) == 0 {
		return SFT
	}
	return p.Epochs[len(p.Epochs)-1].Kind
}

// At reports whether a checkpoint of this plan can hold the position (epoch, batch,
// step): epoch is an epoch of the plan, batch one of its batches or its end (the
// epoch's own checkpoint), and step the number of batches before that position.
func (p *Plan) At(epoch, batch int, step int64) bool {
	if epoch < 0 || epoch >= len(p.Epochs) || batch < 0 || batch > p.Epochs[epoch].Batches {
		return false
	}
	before := int64(batch)
	for _, e := range p.Epochs[:epoch] {
		before += int64(e.Batches)
	}
	return step == before
}
