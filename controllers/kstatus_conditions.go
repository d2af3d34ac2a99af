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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The conditions that kstatus reads (sigs.k8s.io/cli-utils' status.Compute, which Flux
// and other GitOps tools use for resources they have no rule for): Reconciling True
// reads InProgress, Stalled True reads Failed, then Ready True reads Current and Ready
// False InProgress. They restate the phase, on every status write:
//
//	phase                        | Ready | Reconciling | Stalled | kstatus
//	-----------------------------+-------+-------------+---------+-----------
//	Pending, Running, Restarting | False | True        | False   | InProgress
//	Suspended                    | False | False       | False   | InProgress
//	Succeeded                    | True  | False       | False   | Current
//	Failed                       | False | False       | True    | Failed
//
// All three carry one reason and message: JobPending, JobRunning or JobRestarting
// with what the job waits for, JobSuspended, or the reason and message of the
// Succeeded or Failed condition. A suspended job waits without reconciling: it is not
// Ready, and never Stalled, so no tool reads it as failed.

// setKstatusConditions sets Ready, Reconciling and Stalled from the phase just
// computed. They emit no events: the conditions they restate had theirs.
func setKstatusConditions(u *statusUpdate) {
	phase := u.status().Phase
	reason, message := explainPhase(u.status())
	reconciling := phase == trainingv1alpha1.PhasePending || phase == trainingv1alpha1.PhaseRunning || phase == trainingv1alpha1.PhaseRestarting
	for _, c := range []struct {
		typ    string
		status bool
	}{
		{trainingv1alpha1.ConditionReady, phase == trainingv1alpha1.PhaseSucceeded},
		{trainingv1alpha1.ConditionReconciling, reconciling},
		{trainingv1alpha1.ConditionStalled, phase == trainingv1alpha1.PhaseFailed},
	} {
		meta.SetStatusCondition(&u.status().Conditions, u.newCondition(c.typ, c.status, reason, message))
	}
}

// explainPhase is the reason and message of the job's phase: those of the Succeeded,
// Failed or Suspended condition; JobRestarting with the Restarting condition's
// message; JobRunning with the Running condition's; JobPending with why the job waits
// ("<reason>: <message>" of the Created condition when it is False, else of the
// Running condition).
func explainPhase(st *trainingv1alpha1.ESPOJobStatus) (reason, message string) {
	find := func(typ string) *metav1.Condition { return meta.FindStatusCondition(st.Conditions, typ) }
	switch st.Phase {
	case trainingv1alpha1.PhaseSucceeded:
		return reasonAndMessage(find(trainingv1alpha1.ConditionSucceeded), string(st.Phase))
	case trainingv1alpha1.PhaseFailed:
		return reasonAndMessage(find(trainingv1alpha1.ConditionFailed), string(st.Phase))
	case trainingv1alpha1.PhaseSuspended:
		return reasonAndMessage(find(trainingv1alpha1.ConditionSuspended), trainingv1alpha1.ReasonSuspended)
	case trainingv1alpha1.PhaseRestarting:
		return trainingv1alpha1.ReasonJobRestarting, messageOf(find(trainingv1alpha1.ConditionRestarting))
	case trainingv1alpha1.PhaseRunning:
		return trainingv1alpha1.ReasonJobRunning, messageOf(find(trainingv1alpha1.ConditionRunning))
	}
	waiting := find(trainingv1alpha1.ConditionRunning)
	if created := find(trainingv1alpha1.ConditionCreated); created != nil && created.Status == metav1.ConditionFalse {
		waiting = created
	}
	if waiting == nil {
		return trainingv1alpha1.ReasonJobPending, "the trainer pods are being created"
	}
	return trainingv1alpha1.ReasonJobPending, waiting.Reason + ": " + waiting.Message
}

// messageOf is a condition's message, or "" when it is absent.
func messageOf(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Message
}

// reasonAndMessage is a condition's reason and message; fallback is the reason of a
// condition that is absent or has none.
func reasonAndMessage(c *metav1.Condition, fallback string) (reason, message string) {
	if c == nil || c.Reason == "" {
		return fallback, messageOf(c)
	}
	return c.Reason, c.Message
}
