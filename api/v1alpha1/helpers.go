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

package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
)

// IsSuspended reports whether the job's spec asks for it to be suspended.
func (j *ESPOJob) IsSuspended() bool { return j.Spec.RunPolicy.Suspend }

// IsFinished reports whether the job has succeeded or failed: its Succeeded or Failed
// condition is True.
func (j *ESPOJob) IsFinished() bool {
	return meta.IsStatusConditionTrue(j.Status.Conditions, ConditionSucceeded) ||
		meta.IsStatusConditionTrue(j.Status.Conditions, ConditionFailed)
}

// OnAnotherSize reports whether r is a resume on another number of workers than
// wrote its checkpoint: WrittenBy is known and differs from Workers. A nil r is none.
func (r *ResumeStatus) OnAnotherSize() bool {
	return r != nil && r.WrittenBy > 0 && r.WrittenBy != r.Workers
}

// Describe says what a resume on another size (OnAnotherSize) does, in the words of
// the trainer's message and the controller's event: "resumed from the checkpoint of
// step 12, written by 1 worker, on 2 workers: training goes on from its weights and
// optimizer moments, re-sharded or replicated over the workers there are now".
func (r *ResumeStatus) Describe() string {
	return fmt.Sprintf("resumed from the checkpoint of step %d, written by %s, on %s: "+
		"training goes on from its weights and optimizer moments, re-sharded or replicated over the workers there are now",
		r.Step, workerCount(r.WrittenBy), workerCount(r.Workers))
}

// workerCount is "1 worker" or "n workers".
func workerCount(n int32) string {
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}
