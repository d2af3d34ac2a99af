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
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// desiredService is the job's headless Service: it gives every trainer pod the DNS
// name <hostname>.<service>.<namespace>.svc, published before the pod is ready so
// that rank 0 can reach its workers while they start.
func desiredService(job *trainingv1alpha1.ESPOJob) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(serviceName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(serviceSelector(job)).
			WithPublishNotReadyAddresses(true).
			WithPorts(
				servicePort("worker", WorkerPort),
				servicePort("driver", DriverPort),
			))
}

// servicePort is a TCP port of the Service, sent to the same port of the pods.
func servicePort(name string, port int32) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(name).WithPort(port).
		WithTargetPort(intstr.FromInt32(port)).WithProtocol(corev1.ProtocolTCP)
}
