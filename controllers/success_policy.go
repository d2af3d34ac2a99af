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

package controllers

import (
	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The success policy: the job is done when rank 0, the trainer, has terminated and
// its report (status.training.outcome, written before it exits) says how:
//
//	rank 0 exit | outcome                 | job
//	------------+-------------------------+------------------------------------------
//	0           | Completed, TargetReached| Succeeded, reason = outcome
//	0           | (none)                  | Succeeded, Completed: the exit code is the
//	            |                         | contract; the report may have been lost
//	any         | NonFiniteLoss,          | Failed, reason = outcome, no restart: the
//	            | RewardCollapsed,        | run would repeat it from its checkpoint (or
//	            | CheckpointMismatch,     | refuse the same checkpoint again, read the
//	            | DatasetInvalid,         | same bytes, cut the same split, find the
//	            | SplitEmpty,             | same files missing from the model folder)
//	            | ModelIncomplete         |
//	non-zero,   | Error or (none)         | not decided here: a pod failure, for the
//	or 0        | Error                   | failure policy (restart or backoff limit)
//
// Error is retried because it is also what the trainer reports when a worker pod it
// drives died, which a gang restart cures.

// finalFailure reports whether outcome fails the job without a restart: one that a
// new pod would only repeat.
func finalFailure(outcome trainingv1alpha1.TrainingOutcome) bool {
	switch outcome {
	case trainingv1alpha1.OutcomeNonFiniteLoss, trainingv1alpha1.OutcomeRewardCollapsed,
		trainingv1alpha1.OutcomeCheckpointMismatch, trainingv1alpha1.OutcomeDatasetInvalid,
		trainingv1alpha1.OutcomeSplitEmpty, trainingv1alpha1.OutcomeModelIncomplete, trainingv1alpha1.OutcomeConfigInvalid:
		return true
	}
	return false
}

// applySuccessPolicy finishes the job if rank 0's trainer has ended (trainerExit) with a final outcome,
// and reports whether it did.
func applySuccessPolicy(u *statusUpdate, pods *podSet) bool {
	p := pods.current[0]
	if p == nil {
		return false
	}
	ended, exited0 := trainerExit(p)
	if !ended {
		return false
	}
	var outcome trainingv1alpha1.TrainingOutcome
	message := ""
	if t := u.status().Training; t != nil {
		outcome, message = t.Outcome, t.Message
	}
	switch {
	case finalFailure(outcome):
		finish(u, false, string(outcome), message)
	case exited0 && (outcome == trainingv1alpha1.OutcomeCompleted || outcome == trainingv1alpha1.OutcomeTargetReached):
		finish(u, true, string(outcome), message)
	case exited0 && outcome == "":
		finish(u, true, trainingv1alpha1.ReasonCompleted, "the trainer exited 0 without reporting an outcome")
	default:
		return false
	}
	return true
}
