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
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The trainer's identity: a ServiceAccount for the trainer pods, a Role that allows
// only patch of this one ESPOJob's status, and the RoleBinding between them. The
// trainer reports its progress with it (one server-side apply of status.training,
// trainer/kubereporter) and can do nothing else: not read or change the job's spec
// (its deadline, its restart budget, its suspension), not touch another job, not
// list, create or delete. The trainer container runs an image the
// job's author chose, so the token is treated as theirs. A job that names its own
// spec.trainer.serviceAccountName gets none of these.

// ownsIdentity reports whether the controller creates the trainer's identity.
func ownsIdentity(job *trainingv1alpha1.ESPOJob) bool {
	return job.Spec.Trainer.ServiceAccountName == ""
}

// trainerServiceAccountName is the service account the trainer pods run as.
func trainerServiceAccountName(job *trainingv1alpha1.ESPOJob) string {
	if !ownsIdentity(job) {
		return job.Spec.Trainer.ServiceAccountName
	}
	return trainerIdentityName(job)
}

// desiredServiceAccount is the trainer pods' ServiceAccount.
func desiredServiceAccount(job *trainingv1alpha1.ESPOJob) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(trainerIdentityName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job))
}

// desiredRole is the Role that lets the trainer patch its job's status, and nothing
// else.
func desiredRole(job *trainingv1alpha1.ESPOJob) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(trainerIdentityName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithRules(
			rbacv1ac.PolicyRule().
				WithAPIGroups(trainingv1alpha1.GroupVersion.Group).
				WithResources("espojobs/status").
				WithResourceNames(job.Name).
				WithVerbs("patch"))
}

// desiredRoleBinding binds the trainer's Role to its ServiceAccount.
func desiredRoleBinding(job *trainingv1alpha1.ESPOJob) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(trainerIdentityName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(trainerIdentityName(job))).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).WithName(trainerIdentityName(job)).WithNamespace(job.Namespace))
}
