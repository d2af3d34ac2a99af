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

	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The trainer's identity. The trainer pods of every job in a namespace run as one
// ServiceAccount, TrainerIdentityName, whose Role of the same name allows only patch
// of ESPOJob status, bound to it by a RoleBinding of that name too. The admission
// policy TrainerStatusPolicyName (config/policy) holds each trainer to its own job:
// it lets the patch through only for the job whose trainer pod the token is bound
// to. So the trainer reports its progress (one server-side apply of
// status.training, trainer/kubereporter) and can do nothing else: not read or
// change a job's spec (its deadline, its restart budget, its suspension), not touch
// another job, not list, create or delete. The trainer container runs an image the
// job's author chose, so the token is treated as theirs. A job that names its own
// spec.trainer.serviceAccountName uses that instead.
//
// The three objects are the namespace's, not a job's: the first job that needs them
// creates them, labelled LabelManagedBy and owned by no job, and they stay when the
// last job goes (they grant nothing without a trainer pod's token). One identity per
// namespace costs no write per job; one per job, as earlier versions made, cost
// three of a job's eleven.

const (
	// TrainerIdentityName names the trainer pods' ServiceAccount, its Role and its
	// RoleBinding in every namespace with jobs.
	TrainerIdentityName = "espo-trainer"
	// TrainerStatusPolicyName names the ValidatingAdmissionPolicy that holds each
	// trainer to its own job's status, and its binding.
	TrainerStatusPolicyName = "espo-trainer-status"
)

// ownsIdentity reports whether the job's pods run as the operator's trainer identity.
func ownsIdentity(job *trainingv1alpha1.ESPOJob) bool {
	return job.Spec.Trainer.ServiceAccountName == ""
}

// trainerServiceAccountName is the service account the trainer pods run as.
func trainerServiceAccountName(job *trainingv1alpha1.ESPOJob) string {
	if !ownsIdentity(job) {
		return job.Spec.Trainer.ServiceAccountName
	}
	return TrainerIdentityName
}

// identityLabels are the labels of the trainer identity's objects.
func identityLabels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelComponent: ComponentTrainerIdentity}
}

// desiredServiceAccount is the trainer pods' ServiceAccount in namespace.
func desiredServiceAccount(namespace string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(TrainerIdentityName, namespace).WithLabels(identityLabels())
}

// desiredRole is the Role that lets the trainer patch ESPOJob status in namespace,
// and nothing else; the admission policy narrows it to the trainer's own job.
func desiredRole(namespace string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(TrainerIdentityName, namespace).WithLabels(identityLabels()).
		WithRules(
			rbacv1ac.PolicyRule().
				WithAPIGroups(trainingv1alpha1.GroupVersion.Group).
				WithResources("espojobs/status").
				WithVerbs("patch"))
}

// desiredRoleBinding binds the trainer's Role to its ServiceAccount in namespace.
func desiredRoleBinding(namespace string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(TrainerIdentityName, namespace).WithLabels(identityLabels()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(TrainerIdentityName)).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).WithName(TrainerIdentityName).WithNamespace(namespace))
}

// identityEventHandler requeues, when the trainer identity of a namespace is changed
// or deleted, the unfinished jobs of that namespace whose pods run as it, so that one
// of them puts it back. Its creation requeues nothing: a job created it, and a
// manager that starts reconciles every job anyway.
func identityEventHandler(reader client.Reader) (handler.EventHandler, builder.WatchesOption) {
	changedOrDeleted := predicate.Funcs{
		CreateFunc:  func(crevent.CreateEvent) bool { return false },
		GenericFunc: func(crevent.GenericEvent) bool { return false },
	}
	named := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == TrainerIdentityName })
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return jobsOfIdentity(ctx, reader, obj.GetNamespace())
	}), builder.WithPredicates(named, changedOrDeleted)
}

// jobsOfIdentity lists the unfinished jobs of namespace whose pods run as the
// trainer identity, from the cache.
func jobsOfIdentity(ctx context.Context, reader client.Reader, namespace string) []reconcile.Request {
	var jobs trainingv1alpha1.ESPOJobList
	if err := reader.List(ctx, &jobs, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).Error(err, "listing the jobs of a changed trainer identity", "namespace", namespace)
		return nil
	}
	var requests []reconcile.Request
	for i := range jobs.Items {
		if job := &jobs.Items[i]; ownsIdentity(job) && !job.IsFinished() {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)})
		}
	}
	return requests
}
