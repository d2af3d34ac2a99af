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
	rbacv1 "k8s.io/api/rbac/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The trainer's identity: a ServiceAccount for the trainer pods, a Role that allows
// only get and patch of this one ESPOJob and its status, and the RoleBinding between
// them. The trainer reports its progress with it and can do nothing else. A job that
// names its own spec.trainer.serviceAccountName gets none of these.

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

// buildServiceAccount builds the trainer pods' ServiceAccount.
func buildServiceAccount(job *trainingv1alpha1.ESPOJob) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: childMeta(job, trainerIdentityName(job))}
}

// buildRole builds the Role that lets the trainer read its job and patch its status.
func buildRole(job *trainingv1alpha1.ESPOJob) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: childMeta(job, trainerIdentityName(job)),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{trainingv1alpha1.GroupVersion.Group},
			Resources:     []string{"espojobs", "espojobs/status"},
			ResourceNames: []string{job.Name},
			Verbs:         []string{"get", "patch"},
		}},
	}
}

// buildRoleBinding binds the trainer's Role to its ServiceAccount.
func buildRoleBinding(job *trainingv1alpha1.ESPOJob) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: childMeta(job, trainerIdentityName(job)),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: trainerIdentityName(job)},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: trainerIdentityName(job), Namespace: job.Namespace,
		}},
	}
}
