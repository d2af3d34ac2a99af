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
// off exponentially: the job is reconciled again after statusConflictRetry.
func TestALostStatusWriteRaceIsRetriedSoon(t *testing.T) {
	job := makeJob().Obj()
	conflict := apierrors.NewConflict(trainingv1alpha1.GroupVersion.WithResource("espojobs").GroupResource(), job.Name, nil)
	applies := 0
	c := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithObjects(job).WithStatusSubresource(job).
		WithIndex(&corev1.Pod{}, ownerUIDKey, indexByOwner).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
				applies++
				return conflict
			},
		}).Build()
	r := &ESPOJobReconciler{client: c, apiReader: c, recorder: events.NewFakeRecorder(10),
		opts: Options{PodOptions: testOpts, Clock: clocktesting.NewFakeClock(now), NetworkPolicy: noNetworkPolicy}}

	result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)})
	if err != nil {
		t.Errorf("Reconcile error = %v, want none: a lost race is retried, not backed off", err)
	}
	if want := (ctrl.Result{RequeueAfter: statusConflictRetry}); result != want {
		t.Errorf("Reconcile result = %+v, want %+v", result, want)
	}
	if applies != 1 {
		t.Errorf("status applies = %d, want 1", applies)
	}
}
