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
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The progress deadline policy, a watchdog for hangs: a worker stuck in a
// collective, a call that never returns, a trainer wedged on I/O. With
// spec.runPolicy.progressDeadlineSeconds set, a running attempt (every pod Running)
// whose trainer has reported nothing for that long is taken as hung: the gang
// restarts from its newest checkpoint under the failure policy (counted against
// backoffLimit, after its backoff), with the Restarting condition's reason
// ProgressDeadlineExceeded and a message naming the last progress and when it was.
// The clock starts at the later of the trainer's last report (status.training's
// lastUpdateTime: the trainer reports every step at least every
// spec.trainer.statusInterval, and every change of stage or epoch, evaluation and
// checkpoint at once) and the moment the attempt's pods all ran, so a report of an
// earlier attempt never counts. The trainer's progress-only reports do not wake the
// controller, so it asks to be woken at the deadline instead (RequeueAfter) and
// looks again then.

// progressClock returns when the current attempt last made progress, and false when
// there is no watchdog (no progressDeadlineSeconds) or the attempt is not running.
func progressClock(job *trainingv1alpha1.ESPOJob) (time.Time, bool) {
	running := meta.FindStatusCondition(job.Status.Conditions, trainingv1alpha1.ConditionRunning)
	if job.Spec.RunPolicy.ProgressDeadlineSeconds == nil || running == nil || running.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	last := running.LastTransitionTime.Time
	if t := job.Status.Training; t != nil && t.LastUpdateTime != nil && t.LastUpdateTime.After(last) {
		last = t.LastUpdateTime.Time
	}
	return last, true
}

// applyProgressDeadlinePolicy restarts the gang, or fails the job past its backoff
// limit, when the running attempt has made no progress for progressDeadlineSeconds,
// and reports true; otherwise it returns when to look again (0: no watchdog).
func applyProgressDeadlinePolicy(u *statusUpdate) (time.Duration, bool) {
	last, ok := progressClock(u.job)
	if !ok {
		return 0, false
	}
	deadline := time.Duration(*u.job.Spec.RunPolicy.ProgressDeadlineSeconds) * time.Second
	if left := last.Add(deadline).Sub(u.now); left > 0 {
		return left, false
	}
	restartOrFail(u, trainingv1alpha1.ReasonProgressDeadlineExceeded, fmt.Sprintf(
		"no progress for %s (progressDeadlineSeconds %d): %s",
		u.now.Sub(last).Round(time.Second), *u.job.Spec.RunPolicy.ProgressDeadlineSeconds, lastProgress(u.job, last)))
	return 0, true
}

// lastProgress says what the attempt's last progress was and when: the trainer's
// last report, or the start of the attempt when the trainer has reported nothing
// since.
func lastProgress(job *trainingv1alpha1.ESPOJob, at time.Time) string {
	when := at.UTC().Format(time.RFC3339)
	t := job.Status.Training
	if t == nil || t.LastUpdateTime == nil || !t.LastUpdateTime.Time.Equal(at) {
		return "the trainer has reported nothing since every pod of the attempt ran, at " + when
	}
	return fmt.Sprintf("the trainer last reported at %s, at step %d of %d (stage %s, epoch %d)",
		when, t.Step, t.TotalSteps, t.Stage, t.Epoch)
}
