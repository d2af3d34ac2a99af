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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestDesiredTrainerIdentity(t *testing.T) {
	cases := map[string]struct {
		job       *trainingv1alpha1.ESPOJob
		owns      bool
		account   string
		wantRules []rbacv1.PolicyRule
	}{
		"the job's own identity: patch of this job's status, nothing else": {
			job: makeJob().Obj(), owns: true, account: "demo-trainer",
			wantRules: []rbacv1.PolicyRule{{
				APIGroups: []string{"training.espo.dev"}, Resources: []string{"espojobs/status"},
				ResourceNames: []string{"demo"}, Verbs: []string{"patch"},
			}},
		},
		"a service account the job names: none created": {
			job: makeJob().ServiceAccountName("mine").Obj(), owns: false, account: "mine",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownsIdentity(tc.job); got != tc.owns {
				t.Errorf("ownsIdentity = %v, want %v", got, tc.owns)
			}
			if got := trainerServiceAccountName(tc.job); got != tc.account {
				t.Errorf("trainerServiceAccountName = %q, want %q", got, tc.account)
			}
			if !tc.owns {
				return
			}
			if sa := typed[corev1.ServiceAccount](t, desiredServiceAccount(tc.job)); sa.Name != "demo-trainer" || len(sa.OwnerReferences) != 1 {
				t.Errorf("service account: %+v", sa.ObjectMeta)
			}
			if diff := cmp.Diff(tc.wantRules, typed[rbacv1.Role](t, desiredRole(tc.job)).Rules); diff != "" {
				t.Errorf("role rules (-want +got):\n%s", diff)
			}
			rb := typed[rbacv1.RoleBinding](t, desiredRoleBinding(tc.job))
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "demo-trainer", Namespace: "ns"}}
			if diff := cmp.Diff(want, rb.Subjects); diff != "" {
				t.Errorf("binding subjects (-want +got):\n%s", diff)
			}
			if rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "demo-trainer"}) {
				t.Errorf("role ref: %+v", rb.RoleRef)
			}
		})
	}
}
