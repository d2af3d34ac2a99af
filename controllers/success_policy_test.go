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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// modelIncompleteMessage is a worker's refusal of a model folder, as the trainer
// reports it.
const modelIncompleteMessage = "worker 0 (localhost:50051): model incomplete: the model folder /models/Qwen2.5-VL-3B-Instruct lacks config.json"

func TestApplySuccessPolicy(t *testing.T) {
	job := makeJob().Replicas(2)
	report := func(o trainingv1alpha1.TrainingOutcome, msg string) *trainingv1alpha1.ESPOJob {
		return job.Clone().Training(&trainingv1alpha1.TrainingStatus{Outcome: o, Message: msg}).Obj()
	}
	running := phase(corev1.PodRunning)
	cases := map[string]struct {
		job      *trainingv1alpha1.ESPOJob
		rank0    podOption
		wantDone bool
		wantCond *metav1.Condition
	}{
		"rank 0 still running": {job: report(trainingv1alpha1.OutcomeCompleted, "done"), rank0: running},
		"exit 0, Completed": {
			job: report(trainingv1alpha1.OutcomeCompleted, "every epoch ran"), rank0: exit(0, "Completed", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "every epoch ran")),
		},
		"exit 0, TargetReached": {
			job: report(trainingv1alpha1.OutcomeTargetReached, "recommendationAccuracy 0.31"), rank0: exit(0, "Completed", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonTargetReached, "recommendationAccuracy 0.31")),
		},
		"exit 0 without a report": {
			job: job.Clone().Obj(), rank0: exit(0, "Completed", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "the trainer exited 0 without reporting an outcome")),
		},
		"NonFiniteLoss fails without restart, whatever the exit code": {
			job: report(trainingv1alpha1.OutcomeNonFiniteLoss, "step 7: NaN"), rank0: exit(1, "Error", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonNonFiniteLoss, "step 7: NaN")),
		},
		"RewardCollapsed fails without restart": {
			job: report(trainingv1alpha1.OutcomeRewardCollapsed, "reward -0.4"), rank0: exit(0, "Completed", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonRewardCollapsed, "reward -0.4")),
		},
		"CheckpointMismatch fails without restart: a new pod would refuse the same checkpoint": {
			job: report(trainingv1alpha1.OutcomeCheckpointMismatch, "checkpoint /checkpoints/x/step-000000000560 belongs to another run"), rank0: exit(1, "Error", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonCheckpointMismatch, "checkpoint /checkpoints/x/step-000000000560 belongs to another run")),
		},
		"DatasetInvalid fails without restart: a new pod would read the same bytes": {
			job: report(trainingv1alpha1.OutcomeDatasetInvalid, "spec.datasets.sources[0] (web): /data/web/episodes.jsonl:3: invalid JSON"), rank0: exit(1, "Error", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonDatasetInvalid, "spec.datasets.sources[0] (web): /data/web/episodes.jsonl:3: invalid JSON")),
		},
		"SplitEmpty fails without restart: a new pod would cut the same split": {
			job: report(trainingv1alpha1.OutcomeSplitEmpty, "the split leaves validation empty"), rank0: exit(1, "Error", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonSplitEmpty, "the split leaves validation empty")),
		},
		"ModelIncomplete fails without restart: a new pod would find the same files missing": {
			job: report(trainingv1alpha1.OutcomeModelIncomplete, modelIncompleteMessage), rank0: exit(1, "Error", ""), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonModelIncomplete, modelIncompleteMessage)),
		},
		"cuda: the trainer exited 0, Completed, while the worker beside it serves": {
			job: report(trainingv1alpha1.OutcomeCompleted, "every epoch ran"), rank0: trainerExited(0), wantDone: true,
			wantCond: ptr.To(cond(trainingv1alpha1.ConditionSucceeded, true, trainingv1alpha1.ReasonCompleted, "every epoch ran")),
		},
		"cuda: the trainer exited non-zero while the worker beside it serves": {
			job: report(trainingv1alpha1.OutcomeCompleted, "every epoch ran"), rank0: trainerExited(1),
		},
		"Error is left to the failure policy":           {job: report(trainingv1alpha1.OutcomeError, "worker unreachable"), rank0: exit(0, "Completed", "")},
		"a non-zero exit is left to the failure policy": {job: job.Clone().Obj(), rank0: exit(2, "Error", "")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			pods := splitPods(u.job, []corev1.Pod{testPod(tc.job, 0, tc.rank0), testPod(tc.job, 1, running)})
			if got := applySuccessPolicy(u, pods); got != tc.wantDone {
				t.Fatalf("applySuccessPolicy = %v, want %v", got, tc.wantDone)
			}
			if !tc.wantDone {
				if len(u.status().Conditions) != 0 || u.status().CompletionTime != nil {
					t.Errorf("status changed: %+v", u.status())
				}
				return
			}
			if diff := cmp.Diff([]metav1.Condition{*tc.wantCond}, u.status().Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mtime(now), u.status().CompletionTime); diff != "" {
				t.Errorf("completionTime (-want +got):\n%s", diff)
			}
			typ := corev1.EventTypeNormal
			if tc.wantCond.Type == trainingv1alpha1.ConditionFailed {
				typ = corev1.EventTypeWarning
			}
			wantEvents := []event{{Type: typ, Reason: tc.wantCond.Reason, Message: tc.wantCond.Message}}
			if diff := cmp.Diff(wantEvents, u.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// trainerExited leaves the pod Running, as a cuda worker beside the trainer keeps it,
// with the trainer container exited with code.
func trainerExited(code int32) podOption {
	return func(p *corev1.Pod) {
		phase(corev1.PodRunning)(p)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: ContainerTrainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}},
			{Name: ContainerWorker, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}
	}
}
