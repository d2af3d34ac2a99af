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
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

// shippedPolicy reads the admission policy and binding as config/policy ships them.
func shippedPolicy(t *testing.T) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	raw, err := os.ReadFile("../config/policy/trainer_status_policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("want the policy and its binding, got %d documents", len(docs))
	}
	policy, binding := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), policy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), binding); err != nil {
		t.Fatal(err)
	}
	return policy, binding
}

// TestTheShippedPolicyNamesTheTrainerIdentity: the policy and binding carry the
// names the manager looks for, and the policy matches the identity's user name.
func TestTheShippedPolicyNamesTheTrainerIdentity(t *testing.T) {
	policy, binding := shippedPolicy(t)
	if policy.Name != TrainerStatusPolicyName || binding.Name != TrainerStatusPolicyName || binding.Spec.PolicyName != TrainerStatusPolicyName {
		t.Errorf("policy %q, binding %q of policy %q; want all %q", policy.Name, binding.Name, binding.Spec.PolicyName, TrainerStatusPolicyName)
	}
	if len(policy.Spec.MatchConditions) != 1 || !strings.Contains(policy.Spec.MatchConditions[0].Expression, "':"+TrainerIdentityName+"'") {
		t.Errorf("match conditions %+v do not name the service account %s", policy.Spec.MatchConditions, TrainerIdentityName)
	}
}

func TestCheckTrainerStatusPolicy(t *testing.T) {
	policy, binding := shippedPolicy(t)
	audit := binding.DeepCopy()
	audit.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	otherPolicy := binding.DeepCopy()
	otherPolicy.Spec.PolicyName = "something-else"
	hint := "install it with the Helm chart, kubectl apply -k config/default, or kubectl apply -f config/policy/trainer_status_policy.yaml"
	cases := map[string]struct {
		objs    []client.Object
		wantErr string
	}{
		"installed": {objs: []client.Object{policy, binding}},
		"no policy": {objs: []client.Object{binding},
			wantErr: "the ValidatingAdmissionPolicy espo-trainer-status, which holds each trainer to its own job's status, is not installed: " + hint},
		"no binding": {objs: []client.Object{policy},
			wantErr: "the ValidatingAdmissionPolicyBinding espo-trainer-status, which holds each trainer to its own job's status, is not installed: " + hint},
		"a binding that only audits": {objs: []client.Object{policy, audit},
			wantErr: `the ValidatingAdmissionPolicyBinding espo-trainer-status binds policy "espo-trainer-status" with actions [Audit]; it must bind espo-trainer-status with action Deny: ` + hint},
		"a binding of another policy": {objs: []client.Object{policy, otherPolicy},
			wantErr: `the ValidatingAdmissionPolicyBinding espo-trainer-status binds policy "something-else" with actions [Deny]; it must bind espo-trainer-status with action Deny: ` + hint},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(tc.objs...).Build()
			err := CheckTrainerStatusPolicy(context.Background(), c)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error %q, want %q", got, tc.wantErr)
			}
		})
	}
}

// errString is err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
