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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

func TestApplyProgressDeadlinePolicy(t *testing.T) {
	ran := now.Add(-100 * time.Second) // every pod of the attempt Running since
	running := func(status bool) metav1.Condition {
		c := cond(trainingv1alpha1.ConditionRunning, status, trainingv1alpha1.ReasonPodsRunning, "")
		c.LastTransitionTime = metav1.NewTime(ran)
		return c
	}
	report := func(ago time.Duration) *trainingv1alpha1.TrainingStatus {
		at := metav1.NewTime(now.Add(-ago))
		return &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 2, Step: 12, TotalSteps: 40, LastUpdateTime: &at}
	}
	watched := func() *builders.ESPOJobWrapper { return makeJob().ProgressDeadlineSeconds(60).BackoffLimit(2) }
	cases := map[string]struct {
		job          *trainingv1alpha1.ESPOJob
		wantWake     time.Duration
		wantStalled  bool
		wantRestarts int32
		wantReason   string // of Restarting, or of Failed once the backoff is spent
		wantMessage  string
	}{
		"no watchdog": {job: makeJob().Condition(running(true)).Training(report(500 * time.Second)).Obj()},
		"not running": {job: watched().Condition(running(false)).Obj()},
		"moving":      {job: watched().Condition(running(true)).Training(report(20 * time.Second)).Obj(), wantWake: 40 * time.Second},
		"a report of an earlier attempt does not count": {
			job: watched().Condition(running(true)).Training(report(300 * time.Second)).Obj(), wantStalled: true, wantRestarts: 1,
			wantReason: trainingv1alpha1.ReasonProgressDeadlineExceeded,
			wantMessage: "restart 1 of at most 2 in 10s after no progress for 1m40s (progressDeadlineSeconds 60): " +
				"the trainer has reported nothing since every pod of the attempt ran, at 2026-11-30T11:58:20Z",
		},
		"stalled after a report": {
			job: watched().Condition(running(true)).Training(report(61 * time.Second)).Obj(), wantStalled: true, wantRestarts: 1,
			wantReason: trainingv1alpha1.ReasonProgressDeadlineExceeded,
			wantMessage: "restart 1 of at most 2 in 10s after no progress for 1m1s (progressDeadlineSeconds 60): " +
				"the trainer last reported at 2026-11-30T11:58:59Z, at step 12 of 40 (stage espo, epoch 2)",
		},
		"stalled past the backoff limit": {
			job:         watched().Restarts(2).Condition(running(true)).Training(report(61 * time.Second)).Obj(),
			wantStalled: true, wantRestarts: 2, wantReason: trainingv1alpha1.ReasonBackoffLimitExceeded,
			wantMessage: "no progress for 1m1s (progressDeadlineSeconds 60): the trainer last reported at " +
				"2026-11-30T11:58:59Z, at step 12 of 40 (stage espo, epoch 2); the job was restarted 2 times (backoffLimit 2)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			wake, stalled := applyProgressDeadlinePolicy(u)
			if wake != tc.wantWake || stalled != tc.wantStalled {
				t.Errorf("wake %v, stalled %v; want %v, %v", wake, stalled, tc.wantWake, tc.wantStalled)
			}
			if got := u.status().Restarts; got != tc.wantRestarts {
				t.Errorf("restarts %d, want %d", got, tc.wantRestarts)
			}
			if tc.wantReason == "" {
				return
			}
			typ := trainingv1alpha1.ConditionRestarting
			if tc.wantReason == trainingv1alpha1.ReasonBackoffLimitExceeded {
				typ = trainingv1alpha1.ConditionFailed
			}
			c := meta.FindStatusCondition(u.status().Conditions, typ)
			if c == nil {
				t.Fatalf("no %s condition in %v", typ, u.status().Conditions)
			}
			if diff := cmp.Diff([]string{tc.wantReason, tc.wantMessage}, []string{c.Reason, c.Message}); diff != "" {
				t.Errorf("%s condition (-want +got):\n%s", typ, diff)
			}
		})
	}
}
