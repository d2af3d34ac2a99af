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
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The TTL policy: spec.runPolicy.ttlSecondsAfterFinished deletes a finished job that
// long after its completionTime; its children go with it (owner references). The
// controller asks to be woken when the time is up.

// timeToExpiry returns how long a finished job has left before it is deleted, and
// false when it is kept (no TTL, or not finished).
func timeToExpiry(job *trainingv1alpha1.ESPOJob, now time.Time) (time.Duration, bool) {
	ttl := job.Spec.RunPolicy.TTLSecondsAfterFinished
	if ttl == nil || job.Status.CompletionTime == nil || !job.IsFinished() {
		return 0, false
	}
	return job.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second).Sub(now), true
}
