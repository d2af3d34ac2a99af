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
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

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
	if rep.Steps != tr.plan.TotalSteps() {
		t.Errorf("%d optimizer steps, the plan has %d", rep.Steps, tr.plan.TotalSteps())
	}
}
