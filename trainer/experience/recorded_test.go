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
	"fmt"
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/plan"
)

// episodesOfLengths returns one episode per length, with that many steps.
func episodesOfLengths(lens ...int) []dataset.Episode {
	eps := make([]dataset.Episode, len(lens))
	for i, l := range lens {
		eps[i] = dataset.Episode{ID: fmt.Sprintf("e%d", i), Steps: make([]dataset.Step, l)}
	}
	return eps
}

func budgetAlgorithm(name trainingv1alpha1.AlgorithmName, budget int32) *trainingv1alpha1.AlgorithmSpec {
	one := int32(1)
	a := &trainingv1alpha1.AlgorithmSpec{Name: name, SFTEpochs: &one, Epochs: 3, MaxStepsPerBatch: &budget, Seed: 5}
	a.Default()
	return a
}

// TestStepBudgetPacksWholeEpisodes checks maxStepsPerBatch: in every epoch each batch
// holds whole episodes, in order, at most the budget of steps unless it is one
// episode longer than the budget, some batches hold several episodes, and the epoch
// covers every step once.
func TestStepBudgetPacksWholeEpisodes(t *testing.T) {
	train := episodesOfLengths(3, 9, 4, 15, 1, 7, 2, 6, 5, 8)
	r, err := NewRecorded(&Splits{Train: train}, budgetAlgorithm(trainingv1alpha1.AlgorithmESPO, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Plan()
	for i, ep := range p.Epochs {
		plan := r.samplers[i].Epoch(i)
		if plan.Len() != ep.Batches {
			t.Fatalf("epoch %d: %d batches planned, the sampler has %d", i, ep.Batches, plan.Len())
		}
		seen := map[stepRef]bool{}
		var steps []int
		packed := false
		for b := range plan.Len() {
			steps = plan.Steps(steps, b)
			episodes := map[int]int{}
			for k, s := range steps {
				ref := r.steps[s]
				if seen[ref] {
					t.Fatalf("epoch %d: step %+v twice", i, ref)
				}
				seen[ref] = true
				if k > 0 && r.steps[steps[k-1]].episode == ref.episode && r.steps[steps[k-1]].step+1 != ref.step {
					t.Fatalf("epoch %d, batch %d: episode %d out of order", i, b, ref.episode)
				}
				episodes[ref.episode]++
			}
			for e, n := range episodes {
				if n != len(train[e].Steps) {
					t.Fatalf("epoch %d, batch %d: %d of episode %d's %d steps", i, b, n, e, len(train[e].Steps))
				}
			}
			packed = packed || len(episodes) > 1
			if len(steps) > 10 && len(episodes) > 1 {
				t.Fatalf("epoch %d, batch %d: %d steps from %d episodes, over the budget of 10", i, b, len(steps), len(episodes))
			}
		}
		if len(seen) != len(r.steps) {
			t.Fatalf("epoch %d covers %d of %d steps", i, len(seen), len(r.steps))
		}
		if !packed {
			t.Errorf("epoch %d: no batch holds two episodes; the budget packed nothing", i)
		}
	}
}

// TestStepBudgetGRPOKeepsTheFirstEpochsBatches checks that grpo with a step budget
// runs as many batches per epoch as the episodic plan of the first epoch.
func TestStepBudgetGRPOKeepsTheFirstEpochsBatches(t *testing.T) {
	r, err := NewRecorded(&Splits{Train: episodesOfLengths(3, 9, 4, 15, 1, 7, 2, 6, 5, 8)}, budgetAlgorithm(trainingv1alpha1.AlgorithmGRPO, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Plan()
	for i := 1; i < len(p.Epochs); i++ {
		if p.Epochs[i].Kind != plan.GRPO || p.Epochs[i].Batches != p.Epochs[0].Batches {
			t.Errorf("epoch %d (%s): %d batches, want %d like the first", i, p.Epochs[i].Kind, p.Epochs[i].Batches, p.Epochs[0].Batches)
		}
	}
}

// TestStepBudgetAndEpisodesPerBatchConflict checks the error for a run config that
// sets both ways of sizing a batch (the API server refuses it too).
func TestStepBudgetAndEpisodesPerBatchConflict(t *testing.T) {
	a := budgetAlgorithm(trainingv1alpha1.AlgorithmESPO, 10)
	a.EpisodesPerBatch = 2
	_, err := NewRecorded(&Splits{Train: episodesOfLengths(3, 4)}, a, nil)
	if err == nil || !strings.Contains(err.Error(), "episodesPerBatch and maxStepsPerBatch") {
		t.Fatalf("err = %v, want the conflict named", err)
	}
}
