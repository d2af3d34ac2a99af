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
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// slowStepper is a worker whose optimizer steps each take took on clock.
type slowStepper struct {
	worker.Member
	clock *clocktesting.FakeClock
	took  time.Duration
}

func (w *slowStepper) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	w.clock.Step(w.took)
	return w.Member.Step(ctx, o)
}

// throttledRun runs the small ESPO config (5 SFT and 5 ESPO steps, one epoch each)
// with steps of took and the given status interval, and returns every report.
func throttledRun(t *testing.T, interval, took time.Duration) []*trainingv1alpha1.TrainingStatus {
	t.Helper()
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Trainer.StatusInterval = &metav1.Duration{Duration: interval}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := &recorder{}
	w := &slowStepper{Member: cpuMembers(1)[0], clock: clock, took: took}
	rep, _ := run(t, c, Options{Workers: worker.NewGang(w), Reporter: rec, Clock: clock})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	return rec.reports
}

// reportedSteps lists the step of each report, marking evaluation reports with a
// negative step and the final report with 0.
func reportedSteps(reports []*trainingv1alpha1.TrainingStatus) []int64 {
	var steps []int64
	var lastEval *trainingv1alpha1.EvaluationStatus
	for _, r := range reports {
		switch {
		case r.Outcome != "":
			steps = append(steps, 0)
		case !reflect.DeepEqual(r.Evaluation, lastEval):
			steps = append(steps, -r.Step)
			lastEval = r.Evaluation
		default:
			steps = append(steps, r.Step)
		}
	}
	return steps
}

// TestStepReportsAreBoundedByStatusInterval: with steps of 3 s and an interval of 10 s,
// the trainer reports the first step of each epoch at once, then a step only once 10 s
// have passed since the last report; every evaluation and the end at once.
func TestStepReportsAreBoundedByStatusInterval(t *testing.T) {
	got := reportedSteps(throttledRun(t, 10*time.Second, 3*time.Second))
	// SFT epoch: step 1 (new stage) at 3 s, step 5 at 15 s (12 s later), the evaluation;
	// ESPO epoch: step 6 (new stage) at 18 s, step 10 at 30 s, then the validation
	// evaluation, the test evaluation and the end.
	want := []int64{1, 5, -5, 6, 10, -10, -10, 0}
	if !equalSteps(got, want) {
		t.Errorf("reported steps %v, want %v (negative: an evaluation, 0: the end)", got, want)
	}
}

// TestZeroStatusIntervalReportsEveryStep: a config without an API server may set the
// interval to 0; then every step is reported, as before the interval existed.
func TestZeroStatusIntervalReportsEveryStep(t *testing.T) {
	got := reportedSteps(throttledRun(t, 0, 3*time.Second))
	want := []int64{1, 2, 3, 4, 5, -5, 6, 7, 8, 9, 10, -10, -10, 0}
	if !equalSteps(got, want) {
		t.Errorf("reported steps %v, want %v", got, want)
	}
}

func equalSteps(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
