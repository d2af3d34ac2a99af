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
	"testing"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestTimeToExpiry(t *testing.T) {
	done := cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "")
	cases := map[string]struct {
		job      *trainingv1alpha1.ESPOJob
		wantLeft time.Duration
		wantTTL  bool
	}{
		"no TTL":       {job: makeJob().Condition(done).CompletionTime(now).Obj()},
		"not finished": {job: makeJob().TTLSecondsAfterFinished(60).Obj()},
		"kept a while": {job: makeJob().TTLSecondsAfterFinished(60).Condition(done).CompletionTime(now.Add(-20 * time.Second)).Obj(),
			wantLeft: 40 * time.Second, wantTTL: true},
		"expired": {job: makeJob().TTLSecondsAfterFinished(0).Condition(done).CompletionTime(now.Add(-time.Second)).Obj(),
			wantLeft: -time.Second, wantTTL: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			left, ok := timeToExpiry(tc.job, now)
			if left != tc.wantLeft || ok != tc.wantTTL {
				t.Errorf("timeToExpiry = %v, %v; want %v, %v", left, ok, tc.wantLeft, tc.wantTTL)
			}
		})
	}
}
