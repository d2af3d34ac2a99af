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

	ctrl "sigs.k8s.io/controller-runtime"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// holdUnadmitted reports whether the job, not suspended, must still have no pods
// because Options.Admission has not admitted it: a job created running that names a
// queue, in the moment before the queue suspends it. It creates nothing then; the
// queue's suspend, then its admission, reconcile the job again.
func (r *ESPOJobReconciler) holdUnadmitted(ctx context.Context, job *trainingv1alpha1.ESPOJob) bool {
	if r.opts.Admission == nil {
		return false
	}
	admitted, why := r.opts.Admission(job)
	if !admitted {
		ctrl.LoggerFrom(ctx).V(1).Info("no pods until admitted", "why", why)
	}
	return !admitted
}
