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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// TestALostStatusWriteRaceIsRetriedSoon: a status write that lost a race with another
// writer (a conflict) is not an error, which the work queue's rate limiter would back
// off without a bound that suits it: the job is reconciled again after
// statusConflictRetry, after twice that when the next write loses too, and so on up
// to statusConflictRetryMax; a write that goes through starts the count again.
func TestALostStatusWriteRaceIsRetriedSoon(t *testing.T) {
	job := makeJob().Obj()
	conflict := apierrors.NewConflict(trainingv1alpha1.GroupVersion.WithResource("espojobs").GroupResource(), job.Name, nil)
	applies, losing := 0, true
	c := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithObjects(job).WithStatusSubresource(job).
		WithIndex(&corev1.Pod{}, ownerUIDKey, indexByOwner).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				applies++
				if losing {
					return conflict
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).Build()
	r := &ESPOJobReconciler{client: c, apiReader: c, recorder: events.NewFakeRecorder(100),
		opts: Options{PodOptions: testOpts, Clock: clocktesting.NewFakeClock(now), NetworkPolicy: noNetworkPolicy}}
	reconcile := func() ctrl.Result {
		t.Helper()
		result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)})
		if err != nil {
			t.Fatalf("Reconcile error = %v, want none: a lost race is retried, not backed off", err)
		}
		return result
	}

	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, statusConflictRetryMax, statusConflictRetryMax} {
		if got := reconcile(); got != (ctrl.Result{RequeueAfter: want}) {
			t.Errorf("lost race %d: result %+v, want RequeueAfter %s", i+1, got, want)
		}
		if applies != i+1 {
			t.Fatalf("lost race %d: %d status applies, want %d", i+1, applies, i+1)
		}
	}
	losing = false
	if got := reconcile(); got.RequeueAfter == statusConflictRetryMax {
		t.Fatalf("the write that went through: result %+v, want the job's own requeue", got)
	}
	// The next reconcile has a status to write again: the job's is cleared.
	live := &trainingv1alpha1.ESPOJob{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), live); err != nil {
		t.Fatal(err)
	}
	live.Status = trainingv1alpha1.ESPOJobStatus{}
	if err := c.Status().Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	losing = true
	if got := reconcile(); got != (ctrl.Result{RequeueAfter: statusConflictRetry}) {
		t.Errorf("a lost race after a write that went through: result %+v, want RequeueAfter %s", got, statusConflictRetry)
	}
}
