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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestFirstFailure(t *testing.T) {
	job := makeJob().Replicas(3).Obj()
	running := phase(corev1.PodRunning)
	evicted := func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	}
	preempted := disruptionTarget(corev1.ConditionTrue, "PreemptionByScheduler", "Preempted by ns/big on node n1")
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		pods []corev1.Pod
		want *podFailure
	}{
		"a disrupted pod that failed": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, exit(143, "Error", ""), preempted)},
			want: &podFailure{Pod: "demo-trainer-1", Container: "worker", ExitCode: 143, Reason: "Error",
				Disruption: &podDisruption{Reason: "PreemptionByScheduler", Message: "Preempted by ns/big on node n1"}},
		},
		"a disrupted pod being deleted, still running": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 2, running, preempted, deleting())},
			want: &podFailure{Pod: "demo-trainer-2",
				Disruption: &podDisruption{Reason: "PreemptionByScheduler", Message: "Preempted by ns/big on node n1"}},
		},
		"a pod being deleted without a disruption is no failure": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, exit(143, "Error", ""), deleting())},
		},
		"a disrupted pod of an earlier attempt being deleted is no failure": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, running, preempted, deleting(), attempt("7"))},
		},
		"DisruptionTarget False is an ordinary failure": {
			job: job,
			pods: []corev1.Pod{testPod(job, 0, running),
				testPod(job, 1, exit(137, "OOMKilled", ""), disruptionTarget(corev1.ConditionFalse, "PreemptionByScheduler", ""))},
			want: &podFailure{Pod: "demo-trainer-1", Container: "worker", ExitCode: 137, Reason: "OOMKilled"},
		},
		"a running pod with a stale DisruptionTarget is no failure": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, running), testPod(job, 1, running, preempted)},
		},
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
		"a trainer that exited non-zero while the cuda worker beside it serves": {
			job:  job,
			pods: []corev1.Pod{testPod(job, 0, trainerExited(1)), testPod(job, 1, running)},
			want: &podFailure{Pod: "demo-trainer-0", Container: "trainer", ExitCode: 1},
		},
		"the trainer's Error report is not repeated when the termination message quotes it": {
			job:  makeJob().Replicas(3).Training(&trainingv1alpha1.TrainingStatus{Outcome: trainingv1alpha1.OutcomeError, Message: "worker 1 unreachable"}).Obj(),
			pods: []corev1.Pod{testPod(job, 0, exit(1, "Error", "training ended with Error: worker 1 unreachable"))},
			want: &podFailure{Pod: "demo-trainer-0", Container: "trainer", ExitCode: 1, Reason: "Error",
				Message: "training ended with Error: worker 1 unreachable"},
		},
		"the trainer's Error report is added to its failure": {
			job:  makeJob().Replicas(3).Training(&trainingv1alpha1.TrainingStatus{Outcome: trainingv1alpha1.OutcomeError, Message: "worker 1 unreachable"}).Obj(),
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
		"disrupted, without a container exit": {
			podFailure{Pod: "p", Reason: "Evicted", Message: "The node was low on resource: memory.",
				Disruption: &podDisruption{Reason: "TerminationByKubelet", Message: "The node was low on resource: memory."}},
			"pod p was disrupted (DisruptionTarget: TerminationByKubelet: The node was low on resource: memory.)"},
		"disrupted, with a container exit": {
			podFailure{Pod: "p", Container: "c", ExitCode: 143, Reason: "Error", Message: "checkpointed step 12",
				Disruption: &podDisruption{Reason: "EvictionByEvictionAPI"}},
			"pod p was disrupted (DisruptionTarget: EvictionByEvictionAPI); container c: exit code 143 (Error): checkpointed step 12"},
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
	failed := &podFailure{Pod: "demo-trainer-1", Container: "worker", ExitCode: 137, Reason: "OOMKilled"}
	disrupted := &podFailure{Pod: "demo-trainer-1",
		Disruption: &podDisruption{Reason: "PreemptionByScheduler", Message: "Preempted by ns/big on node n1"}}
	// running is the Running condition of an attempt whose pods all ran for d.
	running := func(d time.Duration) metav1.Condition {
		c := cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 2 trainer pods are running")
		c.LastTransitionTime = metav1.NewTime(now.Add(-d))
		return c
	}
	cases := map[string]struct {
		job             *trainingv1alpha1.ESPOJob
		f               *podFailure // default: failed
		wantRestarts    int32
		wantDisruptions int32
		wantConsecutive int32
		wantConds       []metav1.Condition
		wantDone        bool
	}{
		"the third failed attempt in a row waits 40s": {
			job: makeJob().BackoffLimit(6).Restarts(2).ConsecutiveFailures(2).Obj(), wantRestarts: 3, wantConsecutive: 3,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 3 of at most 6 in 40s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"the backoff is capped at 6 minutes": {
			job: makeJob().BackoffLimit(20).Restarts(9).ConsecutiveFailures(9).Obj(), wantRestarts: 10, wantConsecutive: 10,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 10 of at most 20 in 6m0s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"an attempt that ran 10 minutes resets the backoff": {
			job:          makeJob().BackoffLimit(6).Restarts(4).ConsecutiveFailures(4).Condition(running(10 * time.Minute)).Obj(),
			wantRestarts: 5, wantConsecutive: 1,
			wantConds: []metav1.Condition{running(10 * time.Minute), cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 5 of at most 6 in 10s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"an attempt that ran less than 10 minutes is one more failure in a row": {
			job:          makeJob().BackoffLimit(6).Restarts(4).ConsecutiveFailures(4).Condition(running(10*time.Minute - time.Second)).Obj(),
			wantRestarts: 5, wantConsecutive: 5,
			wantConds: []metav1.Condition{running(10*time.Minute - time.Second), cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 5 of at most 6 in 2m40s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"a failure while the last restart still creates pods waits from now": {
			job: makeJob().Restarts(1).ConsecutiveFailures(1).Condition(metav1.Condition{Type: trainingv1alpha1.ConditionRestarting,
				Status: metav1.ConditionTrue, Reason: trainingv1alpha1.ReasonPodFailed, Message: "restart 1 of at most 3 in 10s after pod demo-trainer-0",
				ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}).Obj(),
			wantRestarts: 2, wantConsecutive: 2,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 2 of at most 3 in 20s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"a disruption ends the failures in a row": {
			job: makeJob().Restarts(2).ConsecutiveFailures(2).Obj(), f: disrupted, wantRestarts: 3, wantDisruptions: 1,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"pod demo-trainer-1 was disrupted (DisruptionTarget: PreemptionByScheduler: Preempted by ns/big on node n1); "+
					"restarting the gang, not counted against backoffLimit (disruption 1)")},
		},
		"a disruption restarts even with backoff limit 0": {
			job: makeJob().BackoffLimit(0).Obj(), f: disrupted, wantRestarts: 1, wantDisruptions: 1,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"pod demo-trainer-1 was disrupted (DisruptionTarget: PreemptionByScheduler: Preempted by ns/big on node n1); "+
					"restarting the gang, not counted against backoffLimit (disruption 1)")},
		},
		"a disruption after spent restarts is not counted": {
			job: makeJob().BackoffLimit(1).Restarts(3).Disruptions(2).MaxDisruptions(3).Obj(), f: disrupted,
			wantRestarts: 4, wantDisruptions: 3,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"pod demo-trainer-1 was disrupted (DisruptionTarget: PreemptionByScheduler: Preempted by ns/big on node n1); "+
					"restarting the gang, not counted against backoffLimit (disruption 3 of at most 3)")},
		},
		"maxDisruptions reached: a disruption counts as a failure": {
			job: makeJob().BackoffLimit(1).Restarts(2).Disruptions(2).MaxDisruptions(2).Obj(), f: disrupted,
			wantRestarts: 3, wantDisruptions: 2, wantConsecutive: 1,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 1 of at most 1 in 10s after pod demo-trainer-1 was disrupted (DisruptionTarget: PreemptionByScheduler: "+
					"Preempted by ns/big on node n1), counted as a failure past maxDisruptions 2")},
		},
		"maxDisruptions 0 and backoff limit 0: a disruption fails the job": {
			job: makeJob().BackoffLimit(0).MaxDisruptions(0).Obj(), f: disrupted, wantDone: true,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonBackoffLimitExceeded,
				"pod demo-trainer-1 was disrupted (DisruptionTarget: PreemptionByScheduler: Preempted by ns/big on node n1), "+
					"counted as a failure past maxDisruptions 0; the job was restarted 0 times (backoffLimit 0)")},
		},
		"disruptions do not spend the backoff limit": {
			job: makeJob().BackoffLimit(1).Restarts(2).Disruptions(2).Obj(), wantRestarts: 3, wantDisruptions: 2, wantConsecutive: 1,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 1 of at most 1 in 10s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"failures past the backoff limit, with disruptions between": {
			job: makeJob().BackoffLimit(1).Restarts(3).Disruptions(2).Obj(), wantRestarts: 3, wantDisruptions: 2, wantDone: true,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonBackoffLimitExceeded,
				"pod demo-trainer-1, container worker: exit code 137 (OOMKilled); "+
					"the job was restarted 1 times after failures and 2 times after disruptions (backoffLimit 1)")},
		},
		"first failure: restart 1": {
			job: makeJob().Obj(), wantRestarts: 1, wantConsecutive: 1,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionRestarting, true, trainingv1alpha1.ReasonPodFailed,
				"restart 1 of at most 3 in 10s after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")},
		},
		"backoff limit reached": {
			job:          makeJob().BackoffLimit(2).Restarts(2).ConsecutiveFailures(2).Condition(cond(trainingv1alpha1.ConditionRestarting, false, trainingv1alpha1.ReasonRestarted, "")).Obj(),
			wantRestarts: 2, wantConsecutive: 2, wantDone: true,
			wantConds: []metav1.Condition{
				cond(trainingv1alpha1.ConditionRestarting, false, trainingv1alpha1.ReasonRestarted, ""),
				cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonBackoffLimitExceeded,
					"pod demo-trainer-1, container worker: exit code 137 (OOMKilled); the job was restarted 2 times (backoffLimit 2)")},
		},
		"backoff limit 0: no restart at all": {
			job: makeJob().BackoffLimit(0).Obj(), wantDone: true,
			wantConds: []metav1.Condition{cond(trainingv1alpha1.ConditionFailed, true, trainingv1alpha1.ReasonBackoffLimitExceeded,
				"pod demo-trainer-1, container worker: exit code 137 (OOMKilled); the job was restarted 0 times (backoffLimit 0)")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, now)
			f := tc.f
			if f == nil {
				f = failed
			}
			applyFailurePolicy(u, f)
			if u.status().Restarts != tc.wantRestarts {
				t.Errorf("restarts = %d, want %d", u.status().Restarts, tc.wantRestarts)
			}
			if u.status().Disruptions != tc.wantDisruptions {
				t.Errorf("disruptions = %d, want %d", u.status().Disruptions, tc.wantDisruptions)
			}
			if u.status().ConsecutiveFailures != tc.wantConsecutive {
				t.Errorf("consecutiveFailures = %d, want %d", u.status().ConsecutiveFailures, tc.wantConsecutive)
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

func TestRestartBackoff(t *testing.T) {
	for n, want := range map[int32]time.Duration{
		-1: 0, 0: 0,
		1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 4: 80 * time.Second,
		5: 160 * time.Second, 6: 320 * time.Second, 7: 6 * time.Minute, 8: 6 * time.Minute, 1000: 6 * time.Minute,
	} {
		if got := restartBackoff(n); got != want {
			t.Errorf("restartBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestRestartWaitLeft(t *testing.T) {
	restarting := func(status bool, since time.Duration) metav1.Condition {
		c := cond(trainingv1alpha1.ConditionRestarting, status, trainingv1alpha1.ReasonPodFailed, "")
		c.LastTransitionTime = metav1.NewTime(now.Add(-since))
		return c
	}
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		want time.Duration
	}{
		"no restart":                          {job: makeJob().Obj()},
		"a restart that is over":              {job: makeJob().ConsecutiveFailures(3).Condition(restarting(false, time.Second)).Obj()},
		"the third failure in a row, 15s ago": {job: makeJob().ConsecutiveFailures(3).Condition(restarting(true, 15*time.Second)).Obj(), want: 25 * time.Second},
		"the wait is over":                    {job: makeJob().ConsecutiveFailures(1).Condition(restarting(true, 11*time.Second)).Obj()},
		"a disruption restarts at once":       {job: makeJob().Condition(restarting(true, 0)).Obj()},
		"the cap: the eighth failure, 1m ago": {job: makeJob().ConsecutiveFailures(8).Condition(restarting(true, time.Minute)).Obj(), want: 5 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := restartWaitLeft(newStatusUpdate(tc.job, now)); got != tc.want {
				t.Errorf("restartWaitLeft = %s, want %s", got, tc.want)
			}
		})
	}
}
