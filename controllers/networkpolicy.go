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
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// NetworkPolicyOptions say whether and how each job's trainer pods are fenced in by
// a NetworkPolicy. The policy takes effect only where the cluster's network plugin
// enforces NetworkPolicies.
type NetworkPolicyOptions struct {
	// Disabled makes no NetworkPolicies and removes those the controller made. The
	// zero value makes one per job.
	Disabled bool
	// MetricsNamespaces are the namespaces (by name) whose pods may scrape the
	// trainer's metrics port, Prometheus' for example; none: no one may.
	MetricsNamespaces []string
}

// namespaceNameLabel is the label the API server sets on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// desiredNetworkPolicy is the NetworkPolicy of the job's trainer pods: ingress only
// from the job's own pods to the worker ports and the driver port, and to the
// trainer's metrics port from the pods of o.MetricsNamespaces; everything else in is
// refused. Egress is not restricted: the trainer reaches the API server and,
// configured so, an embedding service.
func desiredNetworkPolicy(job *trainingv1alpha1.ESPOJob, o NetworkPolicyOptions) *networkingv1ac.NetworkPolicyApplyConfiguration {
	jobPods := metav1ac.LabelSelector().WithMatchLabels(serviceSelector(job))
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(jobPods).
		WithPolicyTypes(networkingv1.PolicyTypeIngress).
		WithIngress(networkingv1ac.NetworkPolicyIngressRule().
			WithFrom(networkingv1ac.NetworkPolicyPeer().WithPodSelector(jobPods)).
			WithPorts(workerPorts(job), tcpPort(DriverPort)))
	if len(o.MetricsNamespaces) > 0 {
		spec.WithIngress(networkingv1ac.NetworkPolicyIngressRule().
			WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(metav1ac.LabelSelector().
				WithMatchExpressions(metav1ac.LabelSelectorRequirement().
					WithKey(namespaceNameLabel).WithOperator(metav1.LabelSelectorOpIn).WithValues(o.MetricsNamespaces...)))).
			WithPorts(tcpPort(TrainerMetricsPort)))
	}
	return networkingv1ac.NetworkPolicy(networkPolicyName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithSpec(spec)
}

// workerPorts is the range of the job's worker ports: WorkerPort and, with several
// worker processes per pod, the ports after it.
func workerPorts(job *trainingv1alpha1.ESPOJob) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	p := tcpPort(WorkerPort)
	if n := workerProcesses(job); n > 1 {
		p.WithEndPort(WorkerPort + n - 1)
	}
	return p
}

func tcpPort(port int32) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(port))
}

// removeNetworkPolicy deletes the job's NetworkPolicy, if the job controls one: what
// a controller with NetworkPolicies disabled does with those it made before. It looks
// in the cache only, which holds every NetworkPolicy the controller made (they carry
// LabelManagedBy), so that a reconcile reads nothing from the API server; one someone
// stripped of the label goes with the job.
func (r *ESPOJobReconciler) removeNetworkPolicy(ctx context.Context, job *trainingv1alpha1.ESPOJob) error {
	live := &networkingv1.NetworkPolicy{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: networkPolicyName(job)}, live)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting NetworkPolicy %s: %w", networkPolicyName(job), err)
	}
	if !metav1.IsControlledBy(live, job) {
		return nil
	}
	if err := r.client.Delete(ctx, live, client.Preconditions{UID: new(live.GetUID())}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting NetworkPolicy %s: %w", networkPolicyName(job), err)
	}
	return nil
}
