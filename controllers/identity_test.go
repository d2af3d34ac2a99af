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
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestDesiredTrainerIdentity(t *testing.T) {
	cases := map[string]struct {
		job     *trainingv1alpha1.ESPOJob
		owns    bool
		account string
	}{
		"the namespace's trainer identity": {job: makeJob().Obj(), owns: true, account: "espo-trainer"},
		"a service account the job names":  {job: makeJob().ServiceAccountName("mine").Obj(), owns: false, account: "mine"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownsIdentity(tc.job); got != tc.owns {
				t.Errorf("ownsIdentity = %v, want %v", got, tc.owns)
			}
			if got := trainerServiceAccountName(tc.job); got != tc.account {
				t.Errorf("trainerServiceAccountName = %q, want %q", got, tc.account)
			}
			waves := desiredCompanions(tc.job, "", "token", NetworkPolicyOptions{})
			var identity []string
			for _, c := range slices.Concat(waves...) {
				if c.shared {
					identity = append(identity, c.String())
				}
			}
			want := []string{"ServiceAccount espo-trainer", "Role espo-trainer", "RoleBinding espo-trainer"}
			if !tc.owns {
				want = nil
			}
			if diff := cmp.Diff(want, identity); diff != "" {
				t.Errorf("shared companions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheTrainerIdentityIsTheNamespaces: one ServiceAccount, Role and RoleBinding per
// namespace, owned by no job; the Role allows patch of ESPOJob status and nothing
// else (the admission policy narrows it to the trainer's own job).
func TestTheTrainerIdentityIsTheNamespaces(t *testing.T) {
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelComponent: ComponentTrainerIdentity}
	sa := typed[corev1.ServiceAccount](t, desiredServiceAccount("ns"))
	role := typed[rbacv1.Role](t, desiredRole("ns"))
	rb := typed[rbacv1.RoleBinding](t, desiredRoleBinding("ns"))
	for _, m := range []metav1.ObjectMeta{sa.ObjectMeta, role.ObjectMeta, rb.ObjectMeta} {
		if m.Name != "espo-trainer" || m.Namespace != "ns" || len(m.OwnerReferences) != 0 || !maps.Equal(m.Labels, labels) {
			t.Errorf("%+v: want espo-trainer in ns, no owner, labels %v", m, labels)
		}
	}
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{"training.espo.dev"}, Resources: []string{"espojobs/status"}, Verbs: []string{"patch"}}}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
		t.Errorf("role rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "espo-trainer", Namespace: "ns"}}, rb.Subjects); diff != "" {
		t.Errorf("binding subjects (-want +got):\n%s", diff)
	}
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "espo-trainer"}) {
		t.Errorf("role ref: %+v", rb.RoleRef)
	}
}
