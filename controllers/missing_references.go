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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// An object the job names that does not exist leaves its pods waiting, and the
// controller names it in the Running condition (looking up each by name, its metadata
// only and uncached: the controller caches no ConfigMaps or service accounts of users):
//
//   - a ConfigMap dataset source leaves a scheduled pod in ContainerCreating (the
//     kubelet says FailedMount in an event only, never in the pod's status), so it is
//     looked up while a pod waits so (findMissingReference);
//   - a service account makes the API server's ServiceAccount admission plugin refuse
//     the pods, so it is looked up before they are created, which waits for it
//     (missingServiceAccount).

// missingReferenceRecheck is how often a job whose pods wait for a missing object
// that the controller does not watch looks for it again.
const missingReferenceRecheck = 5 * time.Second

// missingReference is an object the job names that does not exist: the Running
// condition's reason and message.
type missingReference struct {
	reason, message string
}

// findMissingReference sets u.missing to the first ConfigMap dataset source that does
// not exist, in order, when a listed pod is scheduled and pending; it looks nothing up
// otherwise. An error other than NotFound is returned, u left as it is.
func findMissingReference(ctx context.Context, r client.Reader, u *statusUpdate) error {
	if !anyScheduledPending(u.pods) {
		return nil
	}
	job := u.job
	for i, src := range job.Spec.Datasets.Sources {
		if src.ConfigMap == nil {
			continue
		}
		missing, err := notFound(ctx, r, "ConfigMap", job.Namespace, src.ConfigMap.Name)
		if err != nil {
			return err
		}
		if missing {
			u.missing = &missingReference{trainingv1alpha1.ReasonVolumeUnavailable, fmt.Sprintf(
				"spec.datasets.sources[%d] (%s): ConfigMap %q does not exist in namespace %s: "+
					"create it, or name an existing one in spec.datasets.sources[%d].configMap.name",
				i, src.Name, src.ConfigMap.Name, job.Namespace, i)}
			return nil
		}
	}
	return nil
}

// missingServiceAccount is spec.trainer.serviceAccountName when it names a service
// account that does not exist, else nil (also when the field is unset: the job's own
// identity is applied before its pods).
func missingServiceAccount(ctx context.Context, r client.Reader, job *trainingv1alpha1.ESPOJob) (*missingReference, error) {
	sa := job.Spec.Trainer.ServiceAccountName
	if sa == "" {
		return nil, nil
	}
	missing, err := notFound(ctx, r, "ServiceAccount", job.Namespace, sa)
	if err != nil || !missing {
		return nil, err
	}
	return &missingReference{trainingv1alpha1.ReasonPodsPending, fmt.Sprintf(
		"spec.trainer.serviceAccountName: ServiceAccount %q does not exist in namespace %s: create it (allowed to "+
			"patch this job's status), or leave the field unset for the job's own identity; the trainer pods are "+
			"created once it exists", sa, job.Namespace)}, nil
}

// notFound looks up the metadata of the object of kind (a core kind) ns/name and
// reports whether it does not exist; an error other than NotFound is returned.
func notFound(ctx context.Context, r client.Reader, kind, ns, name string) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up %s %q: %w", kind, name, err)
	}
	return false, nil
}

// anyScheduledPending reports whether one of pods is bound to a node and pending:
// waiting for its volumes or containers.
func anyScheduledPending(pods []corev1.Pod) bool {
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodPending && pods[i].Spec.NodeName != "" {
			return true
		}
	}
	return false
}
