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

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestApplyDeadlinePolicy(t *testing.T) {
	started := now.Add(-30 * time.Second)
	cases := map[string]struct {
		job       *trainingv1alpha1.ESPOJob
		after     time.Duration // the clock moves on by this much
		wantWake  time.Duration
		wantConds []metav1.Condition
	}{
		"no deadline":          {job: makeJob().StartTime(started).Obj()},
		"not started yet":      {job: makeJob().ActiveDeadlineSeconds(60).Obj()},
		"wake at the deadline": {job: makeJob().ActiveDeadlineSeconds(60).StartTime(started).Obj(), wantWake: 30 * time.Second},
		"at the deadline": {
			job: makeJob().ActiveDeadlineSeconds(60).StartTime(started).Obj(), after: 30 * time.Second,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonDeadlineExceeded,
				"the job was active longer than activeDeadlineSeconds (60s) since 2026-11-30T11:59:30Z")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(now)
			clock.Step(tc.after)
			u := newStatusUpdate(tc.job, clock.Now())
			if got := applyDeadlinePolicy(u); got != tc.wantWake {
				t.Errorf("wake after %v, want %v", got, tc.wantWake)
			}
			for i := range tc.wantConds {
				tc.wantConds[i].LastTransitionTime = metav1.NewTime(clock.Now())
			}
			if diff := cmp.Diff(tc.wantConds, u.status().Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
