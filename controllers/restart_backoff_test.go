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
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// backoffHarness reconciles one job against a fake API server on a fake clock.
type backoffHarness struct {
	t     *testing.T
	c     client.Client
	r     *ESPOJobReconciler
	clock *clocktesting.FakeClock
	key   client.ObjectKey
}

// newBackoffHarness makes the harness of job; funcs, when given, intercept the fake
// API server's calls.
func newBackoffHarness(t *testing.T, job *trainingv1alpha1.ESPOJob, funcs ...interceptor.Funcs) *backoffHarness {
	b := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithObjects(job).WithStatusSubresource(job).
		WithIndex(&corev1.Pod{}, ownerUIDKey, indexByOwner)
	for _, f := range funcs {
		b = b.WithInterceptorFuncs(f)
	}
	c := b.Build()
	clock := clocktesting.NewFakeClock(now)
	return &backoffHarness{t: t, c: c, clock: clock, key: client.ObjectKeyFromObject(job),
		r: &ESPOJobReconciler{client: c, apiReader: c, recorder: events.NewFakeRecorder(100),
			opts: Options{PodOptions: testOpts, Clock: clock, NetworkPolicy: noNetworkPolicy}}}
}

// result runs one reconcile and returns its result; an error fails the test.
func (h *backoffHarness) result() ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// reconcile runs one reconcile and returns its RequeueAfter.
func (h *backoffHarness) reconcile() time.Duration {
	h.t.Helper()
	return h.result().RequeueAfter
}

func (h *backoffHarness) job() *trainingv1alpha1.ESPOJob {
	h.t.Helper()
	job := &trainingv1alpha1.ESPOJob{}
	if err := h.c.Get(context.Background(), h.key, job); err != nil {
		h.t.Fatal(err)
	}
	return job
}

func (h *backoffHarness) pods() []corev1.Pod {
	h.t.Helper()
	var list corev1.PodList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.key.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// failTrainer makes the trainer pod exit 1 with message, as a trainer that cannot
// read its dataset does at once.
func (h *backoffHarness) failTrainer(message string) {
	h.t.Helper()
	p := h.pods()[0]
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerTrainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: message}},
	}}}
	if err := h.c.Status().Update(context.Background(), &p); err != nil {
		h.t.Fatal(err)
	}
}

// TestRestartsWaitTheBackoff: a trainer that fails at once (a corrupt dataset) gets
// its next pod 10s, 20s, then 40s after each failure on the controller's clock, the
// reconcile asking to be woken then and creating no pod before; the fourth failure
// spends backoffLimit 3, after 70s rather than at once.
func TestRestartsWaitTheBackoff(t *testing.T) {
	const corrupt = "spec.datasets.sources[0] (smartspot): dataset: 1 problem(s)\n  /data/smartspot/a.jsonl:1: bad JSON"
	h := newBackoffHarness(t, makeJob().BackoffLimit(3).Obj())
	h.reconcile()
	if len(h.pods()) != 1 {
		t.Fatalf("pods = %d, want the trainer's", len(h.pods()))
	}
	start := h.clock.Now()
	for i, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		h.failTrainer(corrupt)
		failedAt := h.clock.Now()
		h.reconcile() // judges the failure
		restarting := meta.FindStatusCondition(h.job().Status.Conditions, trainingv1alpha1.ConditionRestarting)
		want := "restart " + string(rune('1'+i)) + " of at most 3 in " + wait.String() + " after pod demo-trainer-0, container trainer: exit code 1 (Error): " + corrupt
		if restarting == nil || restarting.Message != want {
			t.Fatalf("failure %d: Restarting = %+v, want the message %q", i+1, restarting, want)
		}
		if got := h.reconcile(); got != wait { // deletes the failed pod, then waits
			t.Errorf("failure %d: RequeueAfter = %s, want %s", i+1, got, wait)
		}
		h.clock.Step(wait - time.Second)
		if got := h.reconcile(); got != time.Second || len(h.pods()) != 0 {
			t.Fatalf("failure %d, 1s before the backoff ends: RequeueAfter = %s, %d pods; want 1s and none", i+1, got, len(h.pods()))
		}
		h.clock.Step(time.Second)
		h.reconcile()
		if len(h.pods()) != 1 {
			t.Fatalf("failure %d: %d pods once the backoff ended, want the next attempt's", i+1, len(h.pods()))
		}
		if created := h.clock.Since(failedAt); created != wait {
			t.Errorf("failure %d: the next attempt's pod was created %s after it, want %s", i+1, created, wait)
		}
	}
	h.failTrainer(corrupt)
	h.reconcile()
	job := h.job()
	if !job.IsFinished() || job.Status.Restarts != 3 || job.Status.ConsecutiveFailures != 3 {
		t.Fatalf("after the fourth failure: phase %s, restarts %d, consecutiveFailures %d; want Failed, 3, 3",
			job.Status.Phase, job.Status.Restarts, job.Status.ConsecutiveFailures)
	}
	if spent := h.clock.Since(start); spent != 70*time.Second {
		t.Errorf("backoffLimit 3 was spent in %s, want 70s", spent)
	}
}

// TestALongRunResetsTheBackoff: after an attempt whose pod ran for 10 minutes, the
// next failure waits 10s again.
func TestALongRunResetsTheBackoff(t *testing.T) {
	h := newBackoffHarness(t, makeJob().BackoffLimit(6).Obj())
	h.reconcile()
	for _, wait := range []time.Duration{10 * time.Second, 20 * time.Second} {
		h.failTrainer("boom")
		h.reconcile()
		h.reconcile()
		h.clock.Step(wait)
		h.reconcile()
	}
	p := h.pods()[0]
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := h.c.Status().Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if h.job().Status.Phase != trainingv1alpha1.PhaseRunning {
		t.Fatalf("phase = %s, want Running", h.job().Status.Phase)
	}
	h.clock.Step(backoffResetAfter)
	h.failTrainer("boom")
	h.reconcile()
	if got := h.reconcile(); got != 10*time.Second {
		t.Errorf("RequeueAfter after a 10-minute run = %s, want 10s", got)
	}
	if n := h.job().Status.ConsecutiveFailures; n != 1 {
		t.Errorf("consecutiveFailures = %d, want 1", n)
	}
}
