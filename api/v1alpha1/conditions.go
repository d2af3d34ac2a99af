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

package v1alpha1

import "unicode/utf8"

// Condition types of an ESPOJob (status.conditions[].type). Each is present at most
// once; the controller sets them, and Phase is computed from them.
const (
	// ConditionCreated is True once the job's children (ConfigMap, Service, service
	// account and role, pods) have been created.
	ConditionCreated = "Created"
	// ConditionRunning is True while every trainer pod of the current attempt runs.
	ConditionRunning = "Running"
	// ConditionSuspended is True while spec.runPolicy.suspend is true.
	ConditionSuspended = "Suspended"
	// ConditionRestarting is True while the gang of trainer pods is being recreated
	// after a failure.
	ConditionRestarting = "Restarting"
	// ConditionSucceeded is True once training finished with success.
	ConditionSucceeded = "Succeeded"
	// ConditionFailed is True once the job failed for good.
	ConditionFailed = "Failed"

	// The conditions that kstatus (sigs.k8s.io/cli-utils, which Flux uses) reads, set
	// from the phase on every status write, with the reason of the phase (JobPending,
	// JobRunning, JobRestarting, JobSuspended) or the reason of the Succeeded or Failed
	// condition, and the message that explains it. A suspended job is not Ready, not
	// Reconciling and not Stalled: kstatus reads it InProgress, never Failed.

	// ConditionReady is True once the job succeeded, and False in every other phase.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the job is Pending, Running or Restarting.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True once the job failed, with the Failed condition's reason
	// and message.
	ConditionStalled = "Stalled"
	// ConditionTrackingDegraded is True while an experiment tracker of spec.tracking
	// does not record the run (status.training.tracking.degraded says why, naming the
	// field to fix when one can); False once every tracker records again. Training
	// goes on either way. Absent for a job without spec.tracking.
	ConditionTrackingDegraded = "TrackingDegraded"
)

// Condition reasons (status.conditions[].reason, and the reasons of the events the
// controller emits). CamelCase, as metav1.Condition requires.
const (
	// ReasonChildrenCreated: Created is True.
	ReasonChildrenCreated = "ChildrenCreated"
	// ReasonCreateFailed: a child could not be created; the message says which and
	// why.
	ReasonCreateFailed = "CreateFailed"
	// ReasonPodsPending: some trainer pods are not running yet (Running is False).
	ReasonPodsPending = "PodsPending"
	// ReasonPodsRunning: every trainer pod runs (Running is True).
	ReasonPodsRunning = "PodsRunning"
	// ReasonWorkerUnavailable: every trainer pod runs (Running stays True), but the
	// trainer waits for a worker that does not answer; the message is
	// status.training.waitingForWorker: the worker, its address, how long the trainer
	// has waited and the last error.
	ReasonWorkerUnavailable = "WorkerUnavailable"
	// ReasonPodsUnschedulable: a trainer pod cannot be scheduled.
	ReasonPodsUnschedulable = "PodsUnschedulable"
	// ReasonImagePullFailed: a container image cannot be pulled.
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonVolumeUnavailable: a claim or ConfigMap the job mounts does not exist.
	ReasonVolumeUnavailable = "VolumeUnavailable"
	// ReasonSuspended: the job was suspended (Suspended is True).
	ReasonSuspended = "JobSuspended"
	// ReasonResumed: the job was resumed (Suspended is False).
	ReasonResumed = "JobResumed"
	// ReasonJobPending: the phase is Pending (Reconciling is True, Ready False); the
	// message says what the job waits for.
	ReasonJobPending = "JobPending"
	// ReasonJobRunning: the phase is Running (Reconciling is True, Ready False).
	ReasonJobRunning = "JobRunning"
	// ReasonJobRestarting: the phase is Restarting (Reconciling is True, Ready False);
	// the message says after which failure.
	ReasonJobRestarting = "JobRestarting"
	// ReasonPodFailed: a trainer pod failed, or was disrupted (the message says
	// which), and the gang is restarting.
	ReasonPodFailed = "PodFailed"
	// ReasonRestarted: the gang was recreated (Restarting is False again).
	ReasonRestarted = "Restarted"
	// ReasonCompleted: the trainer finished every epoch (Succeeded is True).
	ReasonCompleted = string(OutcomeCompleted)
	// ReasonTargetReached: the early-stopping target was reached (Succeeded is True).
	ReasonTargetReached = string(OutcomeTargetReached)
	// ReasonRewardCollapsed: the early-stopping reward floor was crossed (Failed).
	ReasonRewardCollapsed = string(OutcomeRewardCollapsed)
	// ReasonNonFiniteLoss: a loss was NaN or infinite (Failed).
	ReasonNonFiniteLoss = string(OutcomeNonFiniteLoss)
	// ReasonCheckpointMismatch: the checkpoint folder holds a checkpoint of another
	// job or spec, which the trainer refused to resume (Failed).
	ReasonCheckpointMismatch = string(OutcomeCheckpointMismatch)
	// ReasonDatasetInvalid: a dataset source cannot be read as episodes (Failed).
	ReasonDatasetInvalid = string(OutcomeDatasetInvalid)
	// ReasonSplitEmpty: the split leaves the validation or the test set empty (Failed).
	ReasonSplitEmpty = string(OutcomeSplitEmpty)
	// ReasonModelIncomplete: the model folder lacks files the model needs (Failed).
	ReasonModelIncomplete = string(OutcomeModelIncomplete)
	// ReasonConfigInvalid: the trainer found that the spec cannot run on its data or
	// volumes as written (Failed at once, no restart).
	ReasonConfigInvalid = string(OutcomeConfigInvalid)
	// ReasonTrainerError: the trainer reported an error it cannot recover from
	// (Failed).
	ReasonTrainerError = "TrainerError"
	// ReasonBackoffLimitExceeded: more gang restarts after failures than
	// runPolicy.backoffLimit (Failed); the message names the pod, the container and
	// its exit code.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	// ReasonDeadlineExceeded: the job ran longer than runPolicy.activeDeadlineSeconds
	// (Failed).
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonProgressDeadlineExceeded: the trainer reported no progress for
	// spec.runPolicy.progressDeadlineSeconds; the gang restarts (or, past
	// backoffLimit, the job fails).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonPodGroupUnavailable: spec.trainer.scheduling.gang names a gang scheduler
	// whose PodGroup kind the cluster does not serve (Created=False); the message
	// names the kind and what to install or enable. No pods are created until it is.
	ReasonPodGroupUnavailable = "PodGroupUnavailable"
	// ReasonTrackerUnavailable (TrackingDegraded True): an experiment tracker of
	// spec.tracking does not record the run; the message says which and why.
	ReasonTrackerUnavailable = "TrackerUnavailable"
	// ReasonTrackersRecording (TrackingDegraded False): every tracker records.
	ReasonTrackersRecording = "TrackersRecording"
)

// MaxConditionMessageLength bounds the messages written into conditions, events and
// status.training.message, so that a long termination message cannot bloat the object.
const MaxConditionMessageLength = 1024

// BoundMessage cuts a message to MaxConditionMessageLength bytes, ending it with "..."
// when it cuts, and never in the middle of a UTF-8 character.
func BoundMessage(s string) string {
	if len(s) <= MaxConditionMessageLength {
		return s
	}
	const ellipsis = "..."
	n := MaxConditionMessageLength - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}
