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
)

func TestSetKstatusConditions(t *testing.T) {
	const (
		ready       = trainingv1alpha1.ConditionReady
		reconciling = trainingv1alpha1.ConditionReconciling
		stalled     = trainingv1alpha1.ConditionStalled
	)
	failedMsg := "pod demo-trainer-0, container trainer: exit code 1; the job was restarted 3 times (backoffLimit 3)"
	restartMsg := "restart 1 of at most 3 after pod demo-trainer-0, container trainer: exit code 137 (OOMKilled)"
	// three is Ready, Reconciling and Stalled with one reason and message.
	three := func(isReady, isReconciling, isStalled bool, reason, message string) []metav1.Condition {
		return []metav1.Condition{cond(ready, isReady, reason, message), cond(reconciling, isReconciling, reason, message), cond(stalled, isStalled, reason, message)}
	}
	cases := map[string]struct {
		conds []metav1.Condition
		want  []metav1.Condition
	}{
		"nothing yet: pending, the pods being created": {
			want: three(false, true, false, trainingv1alpha1.ReasonJobPending, "the trainer pods are being created"),
		},
		"pending: why the pods do not run": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionCreated, true, trainingv1alpha1.ReasonChildrenCreated, "created"),
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsUnschedulable, "pod demo-trainer-0 cannot be scheduled: no GPU")},
			want: three(false, true, false, trainingv1alpha1.ReasonJobPending, "PodsUnschedulable: pod demo-trainer-0 cannot be scheduled: no GPU"),
		},
		"pending: a child could not be created": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonCreateFailed, "ConfigMap demo-config exists"),
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "0 of 1 trainer pods are running")},
			want: three(false, true, false, trainingv1alpha1.ReasonJobPending, "CreateFailed: ConfigMap demo-config exists"),
		},
		"running": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 2 trainer pods are running")},
			want:  three(false, true, false, trainingv1alpha1.ReasonJobRunning, "all 2 trainer pods are running"),
		},
		"restarting: after which failure": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed, restartMsg)},
			want:  three(false, true, false, trainingv1alpha1.ReasonJobRestarting, restartMsg),
		},
		"suspended: waiting, neither reconciling nor stalled": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionSuspended, true, trainingv1alpha1.ReasonSuspended, "the job is suspended")},
			want:  three(false, false, false, trainingv1alpha1.ReasonSuspended, "the job is suspended"),
		},
		"succeeded: ready for the outcome": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonTargetReached, "recommendationAccuracy reached 0.3")},
			want:  three(true, false, false, trainingv1alpha1.ReasonTargetReached, "recommendationAccuracy reached 0.3"),
		},
		"failed: stalled for the failure": {
			conds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonBackoffLimitExceeded, failedMsg)},
			want:  three(false, false, true, trainingv1alpha1.ReasonBackoffLimitExceeded, failedMsg),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob().Obj()
			job.Status.Conditions = tc.conds
			u := newStatusUpdate(job, now)
			summarize(u)
			var got []metav1.Condition
			for _, typ := range []string{ready, reconciling, stalled} {
				if c := meta.FindStatusCondition(u.status().Conditions, typ); c != nil {
					got = append(got, *c)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if len(u.events) != 0 {
				t.Errorf("events %v: the conditions kstatus reads restate others, whose events were queued", u.events)
			}
		})
	}
}

// TestKstatusConditionsFollowTheGeneration checks that the conditions carry the
// generation of the latest status write, and keep their transition time while their
// status stays.
func TestKstatusConditionsFollowTheGeneration(t *testing.T) {
	earlier := now.Add(-time.Hour)
	job := makeJob().Generation(3).Obj()
	job.Status.Conditions = []metav1.Condition{
		cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 1 trainer pods are running"),
		{Type: trainingv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonJobPending,
			ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(earlier)},
	}
	u := newStatusUpdate(job, now)
	summarize(u)
	for _, typ := range []string{trainingv1alpha1.ConditionReady, trainingv1alpha1.ConditionReconciling, trainingv1alpha1.ConditionStalled} {
		if c := meta.FindStatusCondition(u.status().Conditions, typ); c == nil || c.ObservedGeneration != 3 {
			t.Errorf("%s = %+v, want observedGeneration 3", typ, c)
		}
	}
	ready := meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionReady)
	if !ready.LastTransitionTime.Time.Equal(earlier) || ready.Reason != trainingv1alpha1.ReasonJobRunning {
		t.Errorf("Ready = %+v: want still False since %s, for JobRunning", ready, earlier)
	}
}
