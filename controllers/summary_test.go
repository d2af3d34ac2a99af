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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// workerWait is a trainer's report of a worker that does not answer.
const workerWait = "waiting 2m10s for worker 1 (demo-trainer-1.demo.default.svc:50051): connection refused"

func TestUpdatePodStatus(t *testing.T) {
	job := makeJob().Replicas(2).Obj()
	started := now.Add(-time.Hour)
	restarted := now.Add(-time.Minute)
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		pods []corev1.Pod
		want trainingv1alpha1.ESPOJobStatus
	}{
		"no pods yet": {
			job: job,
			want: trainingv1alpha1.ESPOJobStatus{Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "0 of 2 trainer pods are running")}},
		},
		"one of two running: started, not Running": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, phase(corev1.PodPending))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Ready: 1, StartTime: mtime(now), Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "1 of 2 trainer pods are running")}},
		},
		"all running: Running; the start time is kept": {
			job:  makeJob().Replicas(2).StartTime(started).Obj(),
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, phase(corev1.PodRunning))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Ready: 2, StartTime: mtime(started), Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 2 trainer pods are running")}},
		},
		"all running, the trainer waiting for a worker: Running, WorkerUnavailable with the wait": {
			job:  makeJob().Replicas(2).StartTime(started).Training(&trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait}).Obj(),
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, phase(corev1.PodRunning))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Ready: 2, StartTime: mtime(started),
				Training: &trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait}, Conditions: []metav1.Condition{
					cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonWorkerUnavailable, workerWait)}},
		},
		"all running, a wait reported before the last restart: a killed trainer's, not shown": {
			job: makeJob().Replicas(2).StartTime(started).Training(&trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait, LastUpdateTime: mtime(restarted.Add(-time.Second))}).
				Condition(metav1.Condition{Type: trainingv1alpha1.ConditionRestarting, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonRestarted, LastTransitionTime: *mtime(restarted)}).Obj(),
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, phase(corev1.PodRunning))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Ready: 2, StartTime: mtime(started),
				Training: &trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait, LastUpdateTime: mtime(restarted.Add(-time.Second))}, Conditions: []metav1.Condition{
					{Type: trainingv1alpha1.ConditionRestarting, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonRestarted, LastTransitionTime: *mtime(restarted)},
					cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 2 trainer pods are running")}},
		},
		"all running, a wait reported since the last restart: shown": {
			job: makeJob().Replicas(2).StartTime(started).Training(&trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait, LastUpdateTime: mtime(restarted)}).
				Condition(metav1.Condition{Type: trainingv1alpha1.ConditionRestarting, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonRestarted, LastTransitionTime: *mtime(restarted)}).Obj(),
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, phase(corev1.PodRunning))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Ready: 2, StartTime: mtime(started),
				Training: &trainingv1alpha1.TrainingStatus{WaitingForWorker: workerWait, LastUpdateTime: mtime(restarted)}, Conditions: []metav1.Condition{
					{Type: trainingv1alpha1.ConditionRestarting, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonRestarted, LastTransitionTime: *mtime(restarted)},
					cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonWorkerUnavailable, workerWait)}},
		},
		"a failed and a succeeded pod are counted": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, exit(0, "Completed", "")), testPod(job, 1, exit(1, "Error", ""))},
			want: trainingv1alpha1.ESPOJobStatus{Succeeded: 1, Failed: 1, Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "0 of 2 trainer pods are running")}},
		},
		"pods of another attempt are not counted": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning), attempt("7"))},
			want: trainingv1alpha1.ESPOJobStatus{Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsPending, "0 of 2 trainer pods are running")}},
		},
		"a pending pod's problem explains why the job is not running": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")), testPod(job, 1)},
			want: trainingv1alpha1.ESPOJobStatus{Active: 2, Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonPodsUnschedulable,
					"pod demo-trainer-0 cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")}},
		},
		"a finished job is not running, for its reason": {
			job: makeJob().Replicas(2).Condition(cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "")).
				Condition(cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "")).Obj(),
			pods: []corev1.Pod{testPod(job, 0, exit(0, "Completed", "")), testPod(job, 1, phase(corev1.PodRunning))},
			want: trainingv1alpha1.ESPOJobStatus{Active: 1, Ready: 1, Succeeded: 1, StartTime: mtime(now), Conditions: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRunning, false, trainingv1alpha1.ReasonCompleted, "the job has no running trainer pods"),
				cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			updatePodStatus(u, splitPods(u.job, tc.pods))
			if diff := cmp.Diff(tc.want, u.job.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputePhase(t *testing.T) {
	cases := map[string]struct {
		conds []metav1.Condition
		want  trainingv1alpha1.JobPhase
	}{
		"nothing yet":             {want: trainingv1alpha1.PhasePending},
		"created, pods pending":   {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionCreated, true, "", ""), cond(trainingv1alpha1.ConditionRunning, false, "", "")}, want: trainingv1alpha1.PhasePending},
		"running":                 {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionRunning, true, "", "")}, want: trainingv1alpha1.PhaseRunning},
		"restarting wins running": {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionRunning, true, "", ""), cond(trainingv1alpha1.ConditionRestarting, true, "", "")}, want: trainingv1alpha1.PhaseRestarting},
		"suspended wins restarting": {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, "", ""), cond(trainingv1alpha1.ConditionSuspended, true, "", "")},
			want: trainingv1alpha1.PhaseSuspended},
		"resumed": {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionSuspended, false, "", ""), cond(trainingv1alpha1.ConditionRunning, true, "", "")}, want: trainingv1alpha1.PhaseRunning},
		"succeeded": {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionSucceeded, true, "", ""), cond(trainingv1alpha1.ConditionSuspended, true, "", "")},
			want: trainingv1alpha1.PhaseSucceeded},
		"failed": {conds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, "", "")}, want: trainingv1alpha1.PhaseFailed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := computePhase(&trainingv1alpha1.ESPOJobStatus{Conditions: tc.conds}); got != tc.want {
				t.Errorf("computePhase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTrackingCondition: TrackingDegraded follows the trainer's report of its
// trackers (True with its message while one does not record, False once all do),
// and is absent before the trainer reports on them and for a job without tracking.
func TestTrackingCondition(t *testing.T) {
	now := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	tracked := func(report *trainingv1alpha1.TrackingStatus) *trainingv1alpha1.ESPOJob {
		j := makeJob().Obj()
		j.Spec.Tracking = &trainingv1alpha1.TrackingSpec{MLflow: &trainingv1alpha1.MLflowTracking{TrackingURI: "http://mlflow:5000"}}
		j.Status.Training = &trainingv1alpha1.TrainingStatus{Step: 4, Tracking: report}
		return j
	}
	down := "spec.tracking.mlflow: http://mlflow:5000 does not answer (connection refused)"
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		want *metav1.Condition
	}{
		"degraded": {tracked(&trainingv1alpha1.TrackingStatus{Degraded: down, Pending: 120, Dropped: 3}),
			&metav1.Condition{Type: trainingv1alpha1.ConditionTrackingDegraded, Status: metav1.ConditionTrue, Reason: trainingv1alpha1.ReasonTrackerUnavailable,
				Message: "training goes on; " + down + " (120 values waiting, 3 dropped)"}},
		"recording": {tracked(&trainingv1alpha1.TrackingStatus{MLflowRunID: "abc"}),
			&metav1.Condition{Type: trainingv1alpha1.ConditionTrackingDegraded, Status: metav1.ConditionFalse, Reason: trainingv1alpha1.ReasonTrackersRecording,
				Message: "every tracker of spec.tracking records the run"}},
		"not reported yet": {tracked(nil), nil},
		"no tracking":      {makeJob().Obj(), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			setTrackingCondition(u)
			got := meta.FindStatusCondition(u.job.Status.Conditions, trainingv1alpha1.ConditionTrackingDegraded)
			if tc.want == nil {
				if got != nil {
					t.Errorf("condition %+v, want none", got)
				}
				return
			}
			if got == nil || got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message {
				t.Errorf("condition %+v, want %+v", got, tc.want)
			}
		})
	}
}
