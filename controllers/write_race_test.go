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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	h := newBackoffHarness(t, job, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			applies++
			if losing {
				return conflict
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})

	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, statusConflictRetryMax, statusConflictRetryMax} {
		if got := h.result(); got != (ctrl.Result{RequeueAfter: want}) {
			t.Errorf("lost race %d: result %+v, want RequeueAfter %s", i+1, got, want)
		}
		if applies != i+1 {
			t.Fatalf("lost race %d: %d status applies, want %d", i+1, applies, i+1)
		}
	}
	losing = false
	if got := h.result(); got.RequeueAfter == statusConflictRetryMax {
		t.Fatalf("the write that went through: result %+v, want the job's own requeue", got)
	}
	// The next reconcile has a status to write again: the job's is cleared.
	live := h.job()
	live.Status = trainingv1alpha1.ESPOJobStatus{}
	if err := h.c.Status().Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	losing = true
	if got := h.result(); got != (ctrl.Result{RequeueAfter: statusConflictRetry}) {
		t.Errorf("a lost race after a write that went through: result %+v, want RequeueAfter %s", got, statusConflictRetry)
	}
}
