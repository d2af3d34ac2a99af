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
	"bytes"
	"context"
	"slices"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// watcher is an Observer that records what it is shown.
type watcher struct {
	advSteps  []int64
	rollouts  int
	advCount  int
	steps     []int64
	kinds     []plan.Kind
	epochEnds []int64
}

func (w *watcher) Advantages(step int64, groups []*experience.Group, adv [][]float64) {
	w.advSteps = append(w.advSteps, step)
	w.rollouts += len(groups)
	for i, g := range groups {
		if len(adv[i]) != len(g.Samples) {
			panic("an advantage per candidate")
		}
		w.advCount += len(adv[i])
	}
}

func (w *watcher) Stepped(_ context.Context, step int64, k plan.Kind, epochEnd bool) error {
	w.steps, w.kinds = append(w.steps, step), append(w.kinds, k)
	if epochEnd {
		w.epochEnds = append(w.epochEnds, step)
	}
	return nil
}

// TestObserverSeesEveryStepAndAdvantage: a run with an Observer tells it of each
// optimizer step, in order, with the ends of the epochs, and shows it the
// advantages of every reinforcement step (one per candidate, before the step),
// and trains the same policy as a run without it.
func TestObserverSeesEveryStepAndAdvantage(t *testing.T) {
	w := &watcher{}
	c := livedConfig(t, trainingv1alpha1.AlgorithmESPO)
	members := cpuMembers(1)
	rep, _ := run(t, c, Options{Workers: worker.NewGang(members...), Observer: w})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(w.steps, want) {
		t.Errorf("Stepped at %v, want %v", w.steps, want)
	}
	if want := []int64{2, 4}; !slices.Equal(w.epochEnds, want) {
		t.Errorf("epoch ends at %v, want %v", w.epochEnds, want)
	}
	if w.kinds[0] != plan.SFT || w.kinds[3] == plan.SFT {
		t.Errorf("kinds %v, want SFT then reinforcement", w.kinds)
	}
	// The reinforcement epoch: two batches of 2 seeds x G = 3 rollouts.
	if want := []int64{2, 3}; !slices.Equal(w.advSteps, want) || w.rollouts != 12 || w.advCount == 0 {
		t.Errorf("advantages at steps %v of %d rollouts (%d candidates), want %v of 12", w.advSteps, w.rollouts, w.advCount, want)
	}
	plain := cpuMembers(1)
	run(t, livedConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(plain...)})
	if !bytes.Equal(savedState(t, members[0]), savedState(t, plain[0])) {
		t.Error("a run with an Observer trained another policy than one without")
	}
}
