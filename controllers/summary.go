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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// summarize recomputes the pod counts, startTime, the Running condition, the phase,
// the conditions kstatus reads and observedGeneration from the pods of the (possibly
// new) current attempt, and status.model from the spec.
func summarize(u *statusUpdate) {
	if u.listed {
		updatePodStatus(u, splitPods(u.job, u.pods))
	}
	setTrackingCondition(u)
	u.status().Model = modelSummary(&u.job.Spec.Model)
	u.status().Phase = computePhase(u.status())
	setKstatusConditions(u)
	u.status().ObservedGeneration = u.job.Generation
}

// updatePodStatus recomputes the pod counts, startTime and the Running condition from
// the pods of the current attempt. A job that is finished or suspended is not running,
// for the reason of its Succeeded, Failed or Suspended condition; one whose pods all
// run but whose trainer waits for a worker says so (WorkerUnavailable).
func updatePodStatus(u *statusUpdate, pods *podSet) {
	st := u.status()
	st.Active, st.Ready, st.Succeeded, st.Failed = 0, 0, 0, 0
	running := int32(0)
	for _, p := range pods.current {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			st.Succeeded++
		case corev1.PodFailed:
			st.Failed++
		case corev1.PodRunning:
			running++
			st.Active++
		default:
			st.Active++
		}
		if podReady(p) {
			st.Ready++
		}
	}
	if running > 0 && st.StartTime == nil {
		t := metav1.NewTime(u.now)
		st.StartTime = &t
	}
	n := replicas(u.job)
	switch {
	case u.isTrue(trainingv1alpha1.ConditionFailed) || u.isTrue(trainingv1alpha1.ConditionSucceeded) || u.isTrue(trainingv1alpha1.ConditionSuspended):
		u.clearCondition(trainingv1alpha1.ConditionRunning, finishedReason(st), "the job has no running trainer pods")
	case running == n:
		reason, msg := trainingv1alpha1.ReasonPodsRunning, podsRunning(running, n)
		if wait := trainerWaitsFor(st); wait != "" {
			reason, msg = trainingv1alpha1.ReasonWorkerUnavailable, wait
		}
		u.setCondition(trainingv1alpha1.ConditionRunning, true, reason, msg)
	default:
		reason, msg := pendingProblem(pods.ranks())
		if reason == "" && u.missing != nil {
			reason, msg = u.missing.reason, u.missing.message
		}
		if reason == "" {
			reason, msg = trainingv1alpha1.ReasonPodsPending, podsRunning(running, n)
		}
		u.setCondition(trainingv1alpha1.ConditionRunning, false, reason, msg)
	}
}

// setTrackingCondition sets TrackingDegraded from the trainer's report of its
// experiment trackers (status.training.tracking) for a job with spec.tracking: True
// (TrackerUnavailable) with the trainer's message while a tracker does not record
// the run, False (TrackersRecording) once every one does. Before the trainer first
// reports on them the condition is left as it is.
func setTrackingCondition(u *statusUpdate) {
	t := u.status().Training
	if u.job.Spec.Tracking == nil || t == nil || t.Tracking == nil {
		return
	}
	if d := t.Tracking.Degraded; d != "" {
		u.setCondition(trainingv1alpha1.ConditionTrackingDegraded, true, trainingv1alpha1.ReasonTrackerUnavailable,
			fmt.Sprintf("training goes on; %s (%d values waiting, %d dropped)", d, t.Tracking.Pending, t.Tracking.Dropped))
		return
	}
	u.setCondition(trainingv1alpha1.ConditionTrackingDegraded, false, trainingv1alpha1.ReasonTrackersRecording,
		"every tracker of spec.tracking records the run")
}

// trainerWaitsFor is the worker the trainer reports it waits for
// (status.training.waitingForWorker), or "". The Running condition, True while every
// trainer pod runs, then says so with reason WorkerUnavailable: the pods run, the
// training does not. A report older than the last restart's transition is a killed
// trainer's, which could not clear it: the current trainer has not reported yet.
func trainerWaitsFor(st *trainingv1alpha1.ESPOJobStatus) string {
	t := st.Training
	if t == nil || t.WaitingForWorker == "" {
		return ""
	}
	if r := meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionRestarting); r != nil &&
		(t.LastUpdateTime == nil || t.LastUpdateTime.Before(&r.LastTransitionTime)) {
		return ""
	}
	return t.WaitingForWorker
}

// finishedReason is the reason of the condition that stopped the job: its Failed,
// Succeeded or Suspended condition, whichever is True.
func finishedReason(st *trainingv1alpha1.ESPOJobStatus) string {
	for _, typ := range []string{trainingv1alpha1.ConditionFailed, trainingv1alpha1.ConditionSucceeded, trainingv1alpha1.ConditionSuspended} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return trainingv1alpha1.ReasonPodsPending
}

// podReady reports whether a pod has the Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// computePhase is the one-word summary of the conditions: Failed, Succeeded,
// Suspended, Restarting, Running or Pending, the first whose condition is True.
func computePhase(st *trainingv1alpha1.ESPOJobStatus) trainingv1alpha1.JobPhase {
	for _, p := range []struct {
		cond  string
		phase trainingv1alpha1.JobPhase
	}{
		{trainingv1alpha1.ConditionFailed, trainingv1alpha1.PhaseFailed},
		{trainingv1alpha1.ConditionSucceeded, trainingv1alpha1.PhaseSucceeded},
		{trainingv1alpha1.ConditionSuspended, trainingv1alpha1.PhaseSuspended},
		{trainingv1alpha1.ConditionRestarting, trainingv1alpha1.PhaseRestarting},
		{trainingv1alpha1.ConditionRunning, trainingv1alpha1.PhaseRunning},
	} {
		if meta.IsStatusConditionTrue(st.Conditions, p.cond) {
			return p.phase
		}
	}
	return trainingv1alpha1.PhasePending
}
