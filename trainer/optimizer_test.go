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
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// stepRecorder is a member that keeps the options of every optimizer step.
type stepRecorder struct {
	worker.Member
	mu    sync.Mutex
	steps []worker.StepOptions
}

func (w *stepRecorder) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	w.mu.Lock()
	w.steps = append(w.steps, o)
	w.mu.Unlock()
	return w.Member.Step(ctx, o)
}

// TestAnUnsetOptimizerStepsAsBefore: a job that sets no optimizer, defaulted or not,
// sends every step the constants the trainer sent before spec.algorithm.optimizer
// existed (betas 0.9 and 0.999, epsilon 1e-8, weight decay 0.01) and its epoch's
// learning rate, unscheduled (the SFT cold start's ten times learningRate); so does
// a run of the CPU workers, step by step.
func TestAnUnsetOptimizerStepsAsBefore(t *testing.T) {
	constants := worker.StepOptions{MaxGradNorm: 1.0, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, WeightDecay: 0.01}
	defaulted := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	if o := defaulted.Spec.Algorithm.Optimizer; o == nil || *o != (trainingv1alpha1.OptimizerSpec{
		Beta1: "0.9", Beta2: "0.999", Epsilon: "1e-8", WeightDecay: "0.01", Schedule: trainingv1alpha1.ScheduleConstant}) {
		t.Fatalf("the defaulted optimizer is %+v", o)
	}
	unset := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	unset.Spec.Algorithm.Optimizer = nil // a run config that did not pass the defaulting
	for name, c := range map[string]*Config{"defaulted": defaulted, "unset": unset} {
		tr, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		for s := range tr.plan.TotalSteps() + 1 {
			if got, want := tr.stepOptions(s), unscheduled(tr, constants, s); !cmp.Equal(got, want) {
				t.Fatalf("%s: step %d's options %+v, want today's %+v", name, s, got, want)
			}
		}
	}
	rec := &stepRecorder{Member: cpuMembers(1)[0]}
	rep, tr := run(t, defaulted, Options{Workers: worker.NewGang(rec)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || int64(len(rec.steps)) != tr.plan.TotalSteps() {
		t.Fatalf("outcome %s after %d steps, want Completed after %d", rep.Outcome, len(rec.steps), tr.plan.TotalSteps())
	}
	for s, got := range rec.steps {
		if want := unscheduled(tr, constants, int64(s)); !cmp.Equal(got, want) {
			t.Fatalf("the workers' step %d had options %+v, want %+v", s, got, want)
		}
	}
}

// unscheduled returns the constants with the unscheduled rate of step s of
// smallConfig's run: 0.1 in the SFT cold start (ten times learningRate), 0.01 after.
func unscheduled(tr *Trainer, constants worker.StepOptions, s int64) worker.StepOptions {
	constants.LearningRate = 0.01
	if tr.plan.KindAt(s) == plan.SFT {
		constants.LearningRate = 0.1
	}
	return constants
}

// TestSFTEpochsStepAtTheirOwnRate: with spec.algorithm.sftLearningRate set, the
// cold start's steps take that rate and the main epochs' steps learningRate, both
// under the one schedule over the whole run; unset, the cold start takes ten times
// learningRate.
func TestSFTEpochsStepAtTheirOwnRate(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmGRPO)
	c.Spec.Algorithm.SFTLearningRate = "0.05"
	c.Spec.Algorithm.Optimizer.Schedule = trainingv1alpha1.ScheduleLinear
	rec := &stepRecorder{Member: cpuMembers(1)[0]}
	rep, tr := run(t, c, Options{Workers: worker.NewGang(rec)})
	total := tr.plan.TotalSteps()
	sft := int64(tr.plan.Epochs[0].Batches)
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || int64(len(rec.steps)) != total || sft < 1 || sft >= total {
		t.Fatalf("outcome %s after %d steps (%d of SFT), want Completed after the plan's %d with both kinds", rep.Outcome, len(rec.steps), sft, total)
	}
	for s, got := range rec.steps {
		base := 0.01
		if int64(s) < sft {
			base = 0.05
		}
		if want := espo.ScheduledRate(base, espo.ScheduleLinear, int64(s), 0, total); got.LearningRate != want {
			t.Errorf("step %d (SFT: %t) took rate %v, want %v", s, int64(s) < sft, got.LearningRate, want)
		}
	}
	c.Spec.Algorithm.SFTLearningRate = ""
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.stepOptions(1).LearningRate, espo.ScheduledRate(0.1, espo.ScheduleLinear, 1, 0, total); got != want {
		t.Errorf("unset, the second SFT step takes rate %v, want ten times learningRate's %v", got, want)
	}
}

// scheduledConfig is smallConfig with a cosine schedule after 3 warm-up steps and
// the AdamW constants changed.
func scheduledConfig(t *testing.T) *Config {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Algorithm.Optimizer = &trainingv1alpha1.OptimizerSpec{Beta1: "0.8", Beta2: "0.99", Epsilon: "1e-6", WeightDecay: "0",
		WarmupSteps: 3, Schedule: trainingv1alpha1.ScheduleCosine}
	c.Spec.Default()
	return c
}

// TestTheScheduleResumesWhereItStopped: a scheduled run sends the workers the set
// AdamW constants and, at step s, espo.ScheduledRate of s over the plan's total
// steps, of its epoch's rate; drained during its decay and resumed from the checkpoint, it sends exactly
// the uninterrupted run's options, step for step, and ends with its weights.
func TestTheScheduleResumesWhereItStopped(t *testing.T) {
	whole := &stepRecorder{Member: cpuMembers(1)[0]}
	rep, tr := run(t, scheduledConfig(t), Options{Workers: worker.NewGang(whole)})
	total := tr.plan.TotalSteps()
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || int64(len(whole.steps)) != total || total < 6 {
		t.Fatalf("outcome %s after %d steps, want Completed after the plan's %d (at least 6)", rep.Outcome, len(whole.steps), total)
	}
	for s, got := range whole.steps {
		want := worker.StepOptions{LearningRate: espo.ScheduledRate(unscheduled(tr, worker.StepOptions{}, int64(s)).LearningRate, espo.ScheduleCosine, int64(s), 3, total),
			MaxGradNorm: 1.0, Beta1: 0.8, Beta2: 0.99, Epsilon: 1e-6, WeightDecay: 0}
		if !cmp.Equal(got, want) {
			t.Errorf("step %d's options %+v, want %+v", s, got, want)
		}
	}
	if first, last := whole.steps[0].LearningRate, whole.steps[total-1].LearningRate; first != 0 || !(last > 0 && last < 0.01*0.1) {
		t.Errorf("rates %v at the first step, %v at the last: want 0 (the warm-up's start) and a small positive rate", first, last)
	}

	c := scheduledConfig(t)
	c.CheckpointDir = t.TempDir()
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 100, Keep: 2}
	c.Spec.Trainer.StatusInterval = &metav1.Duration{} // report every step: the drain comes with that step's report
	at := total - 2                                    // in the decay, in the ESPO epoch
	d := &drainAt{step: at, stage: trainingv1alpha1.StageESPO, drain: make(chan struct{})}
	drained := &stepRecorder{Member: cpuMembers(1)[0]}
	tr, err := newTrainer(c, Options{Workers: worker.NewGang(drained), Reporter: d, Drain: d.drain, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatalf("Run returned %v, want ErrDrained at step %d", err, at)
	}
	resumed := &stepRecorder{Member: cpuMembers(1)[0]}
	rep, _ = run(t, c, Options{Workers: worker.NewGang(resumed)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("resumed run: outcome %s: %s", rep.Outcome, rep.Message)
	}
	if int64(len(drained.steps)) != at {
		t.Fatalf("the drained run took %d steps, want %d", len(drained.steps), at)
	}
	if diff := cmp.Diff(whole.steps, append(drained.steps, resumed.steps...)); diff != "" {
		t.Errorf("drained and resumed, the steps' options differ from the uninterrupted run's (-whole +drained, resumed):\n%s", diff)
	}
}

// TestResolveRefusesABadOptimizer: a run config that did not pass through the API
// server is held to its rules on spec.algorithm.optimizer, each named by its path.
func TestResolveRefusesABadOptimizer(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Algorithm.Optimizer = &trainingv1alpha1.OptimizerSpec{Beta1: "0", Beta2: "1", Epsilon: "0", WeightDecay: "-0.1",
		WarmupSteps: -1, Schedule: "step"}
	_, err := Resolve(c)
	for _, want := range []string{"spec.algorithm.optimizer.beta1: 0 must be greater than 0 and less than 1",
		"spec.algorithm.optimizer.beta2: 1 must be", "spec.algorithm.optimizer.epsilon: 0 must be greater than 0",
		"spec.algorithm.optimizer.weightDecay: -0.1 must be at least 0", "spec.algorithm.optimizer.warmupSteps: -1",
		`spec.algorithm.optimizer.schedule: "step" is none of`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve: %v; want it to say %q", err, want)
		}
	}
	c.Spec.Algorithm.Optimizer.Beta1 = "x"
	if _, err := Resolve(c); err == nil || !strings.Contains(err.Error(), "spec.algorithm.optimizer.beta1: ") {
		t.Errorf("Resolve with beta1 \"x\": %v; want the field named", err)
	}
}

// TestTheDefaultOptimizerBindsAsNone: the algorithm's digest, which binds the
// checkpoints, is the same for a job without the optimizer section (one from before
// it existed) and for one with its defaults written out, as the API server stores
// every job now; another optimizer binds differently.
func TestTheDefaultOptimizerBindsAsNone(t *testing.T) {
	binding := func(o *trainingv1alpha1.OptimizerSpec) string {
		c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
		c.Spec.Algorithm.Optimizer = o
		b, err := runBinding(c, &experience.Splits{})
		if err != nil {
			t.Fatal(err)
		}
		return b.Parts["algorithm"]
	}
	none := binding(nil)
	var d trainingv1alpha1.OptimizerSpec
	d.Default()
	// the digest adds the JSON encoding: without the key, it is the encoding of the
	// algorithm section before the optimizer existed
	asRun, err := json.Marshal(algorithmAsRun(trainingv1alpha1.AlgorithmSpec{Optimizer: &d}))
	if err != nil || strings.Contains(string(asRun), "optimizer") {
		t.Errorf("the default optimizer binds as %s (%v), want no optimizer key", asRun, err)
	}
	if got := binding(&d); got != none {
		t.Error("the default optimizer written out binds differently from none")
	}
	d.WarmupSteps = 10
	if got := binding(&d); got == none {
		t.Error("10 warm-up steps bind as the default optimizer")
	}
}
