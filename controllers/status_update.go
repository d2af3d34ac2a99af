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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// event is an event to emit once the status that caused it has been written. Its
// reason is one of the constant condition reasons of v1alpha1, or an event-only
// reason of this package: ReasonPodTemplateChanged, ReasonResumedOnAnotherSize.
type event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// send records e about job with recorder, its reason also as the action.
func (e event) send(recorder events.EventRecorder, job *trainingv1alpha1.ESPOJob) {
	recorder.Eventf(job, nil, e.Type, e.Reason, e.Reason, "%s", e.Message)
}

// ReasonPodTemplateChanged is the reason of the Normal event that says a running gang
// built from an older spec is being recreated from the current one (the pod template
// policy). It is an event reason only, no condition's, so it lives here rather than
// among the condition reasons of v1alpha1.
const ReasonPodTemplateChanged = "PodTemplateChanged"

// quietReasons change a condition without an event: the ordinary waiting states.
var quietReasons = map[string]bool{trainingv1alpha1.ReasonPodsPending: true}

// warningReasons are emitted as Warning events; all others as Normal.
var warningReasons = map[string]bool{
	trainingv1alpha1.ReasonTrackerUnavailable:       true,
	trainingv1alpha1.ReasonCreateFailed:             true,
	trainingv1alpha1.ReasonPodsUnschedulable:        true,
	trainingv1alpha1.ReasonImagePullFailed:          true,
	trainingv1alpha1.ReasonVolumeUnavailable:        true,
	trainingv1alpha1.ReasonPodFailed:                true,
	trainingv1alpha1.ReasonRewardCollapsed:          true,
	trainingv1alpha1.ReasonNonFiniteLoss:            true,
	trainingv1alpha1.ReasonCheckpointMismatch:       true,
	trainingv1alpha1.ReasonDatasetInvalid:           true,
	trainingv1alpha1.ReasonSplitEmpty:               true,
	trainingv1alpha1.ReasonModelIncomplete:          true,
	trainingv1alpha1.ReasonConfigInvalid:            true,
	trainingv1alpha1.ReasonTrainerError:             true,
	trainingv1alpha1.ReasonBackoffLimitExceeded:     true,
	trainingv1alpha1.ReasonDeadlineExceeded:         true,
	trainingv1alpha1.ReasonProgressDeadlineExceeded: true,
}

// statusUpdate is the status being recomputed in one reconcile, with the clock
// reading of that reconcile and the events its changes call for.
type statusUpdate struct {
	job    *trainingv1alpha1.ESPOJob // a copy of the job whose status is recomputed
	now    time.Time
	events []event
	// pods are the job's pods as listed, plus those created in this reconcile;
	// listed tells whether the list succeeded.
	pods   []corev1.Pod
	listed bool
	// missing is an object the job names that does not exist while a pod waits
	// for it (findMissingReference); nil otherwise.
	missing *missingReference
}

// newStatusUpdate starts recomputing the status of a copy of job at now.
func newStatusUpdate(job *trainingv1alpha1.ESPOJob, now time.Time) *statusUpdate {
	return &statusUpdate{job: job.DeepCopy(), now: now}
}

// status is the status being recomputed.
func (u *statusUpdate) status() *trainingv1alpha1.ESPOJobStatus { return &u.job.Status }

// setCondition sets a condition of the job and reports whether it changed. A change
// of status or reason queues an event, unless the reason is a quiet one or the
// condition is set False for the first time (nothing happened).
func (u *statusUpdate) setCondition(typ string, status bool, reason, message string) bool {
	next := u.newCondition(typ, status, reason, message)
	var old *metav1.Condition // a copy: SetStatusCondition changes the condition in place
	if c := meta.FindStatusCondition(u.status().Conditions, typ); c != nil {
		old = c.DeepCopy()
	}
	changed := meta.SetStatusCondition(&u.status().Conditions, next)
	transition := old != nil && (old.Status != next.Status || old.Reason != reason) || old == nil && status
	if changed && transition && !quietReasons[reason] {
		typ := corev1.EventTypeNormal
		if warningReasons[reason] {
			typ = corev1.EventTypeWarning
		}
		u.events = append(u.events, event{Type: typ, Reason: reason, Message: trainingv1alpha1.BoundMessage(message)})
	}
	return changed
}

// newCondition is a condition of the job's current generation, at the reconcile's
// time, with its message bounded.
func (u *statusUpdate) newCondition(typ string, status bool, reason, message string) metav1.Condition {
	st := metav1.ConditionFalse
	if status {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type: typ, Status: st, Reason: reason, Message: trainingv1alpha1.BoundMessage(message),
		ObservedGeneration: u.job.Generation, LastTransitionTime: metav1.NewTime(u.now),
	}
}

// clearCondition sets a condition False, if it is present and True, with reason
// and message; a condition never set stays absent.
func (u *statusUpdate) clearCondition(typ, reason, message string) {
	if meta.IsStatusConditionTrue(u.status().Conditions, typ) {
		u.setCondition(typ, false, reason, message)
	}
}

// isTrue reports whether a condition of the recomputed status is True.
func (u *statusUpdate) isTrue(typ string) bool {
	return meta.IsStatusConditionTrue(u.status().Conditions, typ)
}

// finish ends the job: its Succeeded or Failed condition True with the reason, the
// completion time, and no restart in progress.
func finish(u *statusUpdate, succeeded bool, reason, message string) {
	typ := trainingv1alpha1.ConditionFailed
	if succeeded {
		typ = trainingv1alpha1.ConditionSucceeded
	}
	u.setCondition(typ, true, reason, message)
	u.clearCondition(trainingv1alpha1.ConditionRestarting, reason, message)
	if u.status().CompletionTime == nil {
		t := metav1.NewTime(u.now)
		u.status().CompletionTime = &t
	}
}
