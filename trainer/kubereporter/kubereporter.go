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

// Package kubereporter reports trainer progress to Kubernetes: it writes
// status.training of the trainer's ESPOJob.
package kubereporter

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Reporter writes status.training of one ESPOJob with server-side apply under the field
// manager espo-trainer (trainingv1alpha1.TrainerFieldManager), so the controller's status
// writes never clobber it and it never clobbers theirs. It needs only patch of its own
// job's status: the Role the controller gives the trainer pods.
type Reporter struct {
	Client client.Client
	Job    trainingv1alpha1.JobRef
}

// Report applies s as the job's status.training.
func (r *Reporter) Report(ctx context.Context, s *trainingv1alpha1.TrainingStatus) error {
	training, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(trainingv1alpha1.GroupVersion.String())
	u.SetKind("ESPOJob")
	u.SetNamespace(r.Job.Namespace)
	u.SetName(r.Job.Name)
	if err := unstructured.SetNestedMap(u.Object, training, "status", "training"); err != nil {
		return err
	}
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(trainingv1alpha1.TrainerFieldManager), client.ForceOwnership)
}
