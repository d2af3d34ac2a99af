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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// TrainerPodTemplate is the pod template of the job's trainer pods as the controller
// builds them: rank 0's labels, annotations and spec. Every rank asks for the same
// resources (spec.trainer.resources, on the container that holds the model), so a
// queue such as Kueue can count the job as spec.trainer.replicas copies of it.
func TrainerPodTemplate(job *trainingv1alpha1.ESPOJob, o PodOptions) corev1.PodTemplateSpec {
	p := buildPod(job, 0, o)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations},
		Spec:       p.Spec,
	}
}
