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
	"fmt"
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
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
	p, err := newPlan(budgetAlgorithm(trainingv1alpha1.AlgorithmESPO, 10), train)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range p.epochs {
		plan := ep.sampler.Epoch(i)
		if plan.Len() != p.batches[i] {
			t.Fatalf("epoch %d: %d batches planned, the sampler has %d", i, p.batches[i], plan.Len())
		}
		seen := map[stepRef]bool{}
		var steps []int
		packed := false
		for b := range plan.Len() {
			steps = plan.Steps(steps, b)
			episodes := map[int]int{}
			for k, s := range steps {
				ref := p.steps[s]
				if seen[ref] {
					t.Fatalf("epoch %d: step %+v twice", i, ref)
				}
				seen[ref] = true
				if k > 0 && p.steps[steps[k-1]].episode == ref.episode && p.steps[steps[k-1]].step+1 != ref.step {
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
		if len(seen) != len(p.steps) {
			t.Fatalf("epoch %d covers %d of %d steps", i, len(seen), len(p.steps))
		}
		if !packed {
			t.Errorf("epoch %d: no batch holds two episodes; the budget packed nothing", i)
		}
	}
}

// TestStepBudgetGRPOKeepsTheFirstEpochsBatches checks that grpo with a step budget
// runs as many batches per epoch as the episodic plan of the first epoch.
func TestStepBudgetGRPOKeepsTheFirstEpochsBatches(t *testing.T) {
	p, err := newPlan(budgetAlgorithm(trainingv1alpha1.AlgorithmGRPO, 10), episodesOfLengths(3, 9, 4, 15, 1, 7, 2, 6, 5, 8))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(p.batches); i++ {
		if p.epochs[i].kind != KindGRPO || p.batches[i] != p.batches[0] {
			t.Errorf("epoch %d (%s): %d batches, want %d like the first", i, p.epochs[i].kind, p.batches[i], p.batches[0])
		}
	}
}

// TestStepBudgetAndEpisodesPerBatchConflict checks the error for a run config that
// sets both ways of sizing a batch (the API server refuses it too).
func TestStepBudgetAndEpisodesPerBatchConflict(t *testing.T) {
	a := budgetAlgorithm(trainingv1alpha1.AlgorithmESPO, 10)
	a.EpisodesPerBatch = 2
	_, err := newPlan(a, episodesOfLengths(3, 4))
	if err == nil || !strings.Contains(err.Error(), "episodesPerBatch and maxStepsPerBatch") {
		t.Fatalf("err = %v, want the conflict named", err)
	}
}

// TestRunWithAStepBudget runs ESPO end to end with maxStepsPerBatch and checks that
// it completes with as many optimizer steps as the plan.
func TestRunWithAStepBudget(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	budget := int32(12)
	c.Spec.Algorithm.EpisodesPerBatch, c.Spec.Algorithm.MaxStepsPerBatch = 1, &budget
	rep, tr := run(t, c, Options{Workers: cpuGang(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if rep.Steps != tr.plan.totalSteps() {
		t.Errorf("%d optimizer steps, the plan has %d", rep.Steps, tr.plan.totalSteps())
	}
}

// TestPlanPositions checks plan.at: a checkpoint's position is an epoch of the plan,
// a batch within it or its end, and the step count of the batches before it.
func TestPlanPositions(t *testing.T) {
	p := &plan{epochs: make([]epochPlan, 2), batches: []int{3, 4}}
	cases := []struct {
		epoch, batch int
		step         int64
		want         bool
	}{
		{0, 0, 0, true},
		{0, 2, 2, true},
		{0, 3, 3, true}, // the first epoch's own checkpoint
		{1, 0, 3, true},
		{1, 4, 7, true}, // the plan's end, before the last evaluation
		{1, 2, 4, false},
		{1, 5, 8, false},
		{2, 0, 7, false}, // past the plan's epochs
		{-1, 0, 0, false},
		{0, -1, -1, false},
	}
	for _, c := range cases {
		if got := p.at(c.epoch, c.batch, c.step); got != c.want {
			t.Errorf("at(epoch %d, batch %d, step %d) = %t, want %t", c.epoch, c.batch, c.step, got, c.want)
		}
	}
}
