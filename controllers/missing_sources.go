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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A ConfigMap dataset source that does not exist leaves its pod scheduled but
// waiting in ContainerCreating: the kubelet says FailedMount in an event only, never
// in the pod's status. While a pod waits so, the controller looks up each ConfigMap
// source by name (its metadata, uncached: the controller caches no ConfigMaps of
// users) and names the missing one in the Running condition.

// findMissingSource sets u.missingSource to the first ConfigMap dataset source that
// does not exist, when a listed pod is scheduled and pending; it looks nothing up
// otherwise. An error other than NotFound is returned, u left as it is.
func findMissingSource(ctx context.Context, r client.Reader, u *statusUpdate) error {
	if !anyScheduledPending(u.pods) {
		return nil
	}
	for i, src := range u.job.Spec.Datasets.Sources {
		if src.ConfigMap == nil {
			continue
		}
		cm := &metav1.PartialObjectMetadata{}
		cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		err := r.Get(ctx, client.ObjectKey{Namespace: u.job.Namespace, Name: src.ConfigMap.Name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			u.missingSource = fmt.Sprintf("spec.datasets.sources[%d] (%s): ConfigMap %q does not exist in namespace %s: "+
				"create it, or name an existing one in spec.datasets.sources[%d].configMap.name",
				i, src.Name, src.ConfigMap.Name, u.job.Namespace, i)
			return nil
		case err != nil:
			return fmt.Errorf("looking up ConfigMap %q of spec.datasets.sources[%d]: %w", src.ConfigMap.Name, i, err)
		}
	}
	return nil
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
