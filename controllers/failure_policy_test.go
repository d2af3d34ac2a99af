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

	v1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestFirstFailure(t *testing.T) {
	job := makeJob().Replicas(3).Obj()
	running := phase(corev1.PodRunning)
	evicted := func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	}
	cases := map[string]struct {
		job  *v1.ESPOJob
		pods []corev1.Pod
		want *podFailure
	}{
		"all running": {job: job, pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, running), testPod(job, 2, running)}},
		"the lowest failed rank, with its container's exit": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, exit(137, "OOMKilled", "")), testPod(job, 2, exit(1, "Error", "panic"))},
			want: &podFailure{Pod: "demo-trainer-1", Container: "worker", ExitCode: 137, Reason: "OOMKilled"},
		},
		"an evicted pod has no container exit": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 2, evicted)},
			want: &podFailure{Pod: "demo-trainer-2", Reason: "Evicted", Message: "The node was low on resource: memory."},
		},
		"a worker that exited 0 before the trainer finished": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, exit(0, "Completed", ""))},
			want: &podFailure{Pod: "demo-trainer-1", Container: "worker", Reason: "Completed",
				Message: "the worker exited before the trainer finished"},
		},
		"the trainer's Error report is added to its failure": {
			job:  makeJob().Replicas(3).Training(&v1.TrainingStatus{Outcome: v1.OutcomeError, Message: "worker 1 unreachable"}).Obj(),
			pods: []corev1.Pod{testPod(job, 0, exit(1, "Error", "rpc error"))},
			want: &podFailure{Pod: "demo-trainer-0", Container: "trainer", ExitCode: 1, Reason: "Error",
				Message: "rpc error the trainer reported: worker 1 unreachable"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			if diff := cmp.Diff(tc.want, firstFailure(u, splitPods(u.job, tc.pods))); diff != "" {
				t.Errorf("firstFailure (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodFailureString(t *testing.T) {
	cases := map[string]struct {
		f    podFailure
		want string
	}{
		"container exit": {podFailure{Pod: "p", Container: "c", ExitCode: 2, Reason: "Error", Message: " bad config \n"},
			"pod p, container c: exit code 2 (Error): bad config"},
		"pod failure": {podFailure{Pod: "p", Reason: "Evicted"}, "pod p: failed (Evicted)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.f.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApplyFailurePolicy(t *testing.T) {
	f := &podFailure{Pod: "demo-trainer-1", Container: "worker", ExitCode: 137, Reason: "OOMKilled"}
	cases := map[string]struct {
		job          *v1.ESPOJob
		wantRestarts int32
		wantConds    []metav1.Condition
		wantDone     bool
	}{
		"first failure: restart 1": {
			job: makeJob().Obj(), wantRestarts: 1,
			wantConds: []metav1.Condition{cond(v1.ConditionRestarting, true, v1.ReasonPodFailed,
				"restart 1 of at most 3 after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"backoff limit reached": {
			job:          makeJob().BackoffLimit(2).Restarts(2).Condition(cond(v1.ConditionRestarting, false, v1.ReasonRestarted, "")).Obj(),
			wantRestarts: 2, wantDone: true,
			wantConds: []metav1.Condition{
				cond(v1.ConditionRestarting, false, v1.ReasonRestarted, ""),
				cond(v1.ConditionFailed, true, v1.ReasonBackoffLimitExceeded,
					"pod demo-trainer-1, container worker: exit code 137 (OOMKilled); the job was restarted 2 times (backoffLimit 2)")},
		},
		"backoff limit 0: no restart at all": {
			job: makeJob().BackoffLimit(0).Obj(), wantDone: true,
			wantConds: []metav1.Condition{cond(v1.ConditionFailed, true, v1.ReasonBackoffLimitExceeded,
				"pod demo-trainer-1, container worker: exit code 137 (OOMKilled); the job was restarted 0 times (backoffLimit 0)")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			applyFailurePolicy(u, f)
			if u.status().Restarts != tc.wantRestarts {
				t.Errorf("restarts = %d, want %d", u.status().Restarts, tc.wantRestarts)
			}
			if diff := cmp.Diff(tc.wantConds, u.status().Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if done := u.status().CompletionTime != nil; done != tc.wantDone {
				t.Errorf("finished = %v, want %v", done, tc.wantDone)
			}
			if len(u.events) != 1 || u.events[0].Type != corev1.EventTypeWarning {
				t.Errorf("events = %+v, want one warning", u.events)
			}
		})
	}
}
