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

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The deadline policy: spec.runPolicy.activeDeadlineSeconds bounds the time from the
// job's startTime (its first running pod). The controller asks to be woken at the
// deadline (RequeueAfter) instead of polling; past it the job fails with
// DeadlineExceeded. A suspended job is not judged: Kueue may hold it for as long as
// it likes, and the deadline is checked again on resume.

// timeToDeadline returns how long the job has left before its deadline, and false
// when the job has no deadline (none set, not started yet).
func timeToDeadline(job *trainingv1alpha1.ESPOJob, now time.Time) (time.Duration, bool) {
	ads := job.Spec.RunPolicy.ActiveDeadlineSeconds
	if ads == nil || job.Status.StartTime == nil {
		return 0, false
	}
	return job.Status.StartTime.Add(time.Duration(*ads) * time.Second).Sub(now), true
}

// applyDeadlinePolicy fails the job if its deadline has passed, and otherwise returns
// when to look again (0: no deadline).
func applyDeadlinePolicy(u *statusUpdate) time.Duration {
	left, ok := timeToDeadline(u.job, u.now)
	if !ok {
		return 0
	}
	if left > 0 {
		return left
	}
	finish(u, false, trainingv1alpha1.ReasonDeadlineExceeded, fmt.Sprintf(
		"the job was active longer than activeDeadlineSeconds (%ds) since %s",
		*u.job.Spec.RunPolicy.ActiveDeadlineSeconds, u.status().StartTime.UTC().Format(time.RFC3339)))
	return 0
}
