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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestSetConditionEmitsEventsOnTransitions(t *testing.T) {
	cases := map[string]struct {
		job         *trainingv1alpha1.ESPOJob
		typ         string
		status      bool
		reason, msg string
		wantChanged bool
		wantEvents  []event
	}{
		"first True: an event": {
			job: makeJob().Obj(), typ: trainingv1alpha1.ConditionRunning, status: true, reason: trainingv1alpha1.ReasonPodsRunning, msg: "all running",
			wantChanged: true, wantEvents: []event{{Type: corev1.EventTypeNormal, Reason: trainingv1alpha1.ReasonPodsRunning, Message: "all running"}},
		},
		"first False: nothing happened": {
			job: makeJob().Obj(), typ: trainingv1alpha1.ConditionRunning, reason: trainingv1alpha1.ReasonPodsUnschedulable, msg: "no node", wantChanged: true,
		},
		"a new reason: a warning": {
			job: makeJob().Condition(cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "0 of 1")).Obj(),
			typ: trainingv1alpha1.ConditionRunning, reason: trainingv1alpha1.ReasonImagePullFailed, msg: "cannot pull", wantChanged: true,
			wantEvents: []event{{Type: corev1.EventTypeWarning, Reason: trainingv1alpha1.ReasonImagePullFailed, Message: "cannot pull"}},
		},
		"only the message changes: no event": {
			job: makeJob().Condition(cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonImagePullFailed, "ErrImagePull")).Obj(),
			typ: trainingv1alpha1.ConditionRunning, reason: trainingv1alpha1.ReasonImagePullFailed, msg: "ImagePullBackOff", wantChanged: true,
		},
		"pending is quiet": {
			job: makeJob().Condition(cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "")).Obj(),
			typ: trainingv1alpha1.ConditionRunning, reason: trainingv1alpha1.ReasonPodsPending, msg: "1 of 2", wantChanged: true,
		},
		"no change": {
			job: makeJob().Condition(cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all")).Obj(),
			typ: trainingv1alpha1.ConditionRunning, status: true, reason: trainingv1alpha1.ReasonPodsRunning, msg: "all",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			if got := u.setCondition(tc.typ, tc.status, tc.reason, tc.msg); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantEvents, u.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
