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
	"k8s.io/apimachinery/pkg/util/intstr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// buildService builds the job's headless Service: it gives every trainer pod the DNS
// name <hostname>.<service>.<namespace>.svc, published before the pod is ready so
// that rank 0 can reach its workers while they start.
func buildService(job *trainingv1alpha1.ESPOJob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: childMeta(job, serviceName(job)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 serviceSelector(job),
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				{Name: "worker", Port: WorkerPort, TargetPort: intstr.FromInt32(WorkerPort), Protocol: corev1.ProtocolTCP},
				{Name: "driver", Port: DriverPort, TargetPort: intstr.FromInt32(DriverPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}
