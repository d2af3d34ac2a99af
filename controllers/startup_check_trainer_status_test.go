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
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/espo-dev/espo-operator/config/policy"
)

// shippedPolicy is the admission policy and binding as config/policy ships them.
func shippedPolicy(t *testing.T) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	p, b, err := policy.TrainerStatus()
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestTheShippedPolicyNamesTheTrainerIdentity: the policy and binding carry the
// names the manager looks for, and the policy matches the identity's user name.
func TestTheShippedPolicyNamesTheTrainerIdentity(t *testing.T) {
	vap, binding := shippedPolicy(t)
	if vap.Name != TrainerStatusPolicyName || binding.Name != TrainerStatusPolicyName || binding.Spec.PolicyName != TrainerStatusPolicyName {
		t.Errorf("policy %q, binding %q of policy %q; want all %q", vap.Name, binding.Name, binding.Spec.PolicyName, TrainerStatusPolicyName)
	}
	if len(vap.Spec.MatchConditions) != 1 || !strings.Contains(vap.Spec.MatchConditions[0].Expression, "':"+TrainerIdentityName+"'") {
		t.Errorf("match conditions %+v do not name the service account %s", vap.Spec.MatchConditions, TrainerIdentityName)
	}
}

func TestCheckTrainerStatusPolicy(t *testing.T) {
	vap, binding := shippedPolicy(t)
	defaulted := vap.DeepCopy() // as the API server stores it
	defaulted.Spec.MatchConstraints.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	defaulted.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{}
	defaulted.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{}
	defaulted.Spec.MatchConstraints.ResourceRules[0].Scope = ptr.To(admissionregistrationv1.AllScopes)
	alsoAudits := binding.DeepCopy()
	alsoAudits.Spec.ValidationActions = append(alsoAudits.Spec.ValidationActions, admissionregistrationv1.Audit)

	weakened := vap.DeepCopy()
	weakened.Spec.Validations[0].Expression = "true"
	narrowed := vap.DeepCopy()
	narrowed.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"audited": "yes"}}
	ignoring := vap.DeepCopy()
	ignoring.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	audit := binding.DeepCopy()
	audit.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	otherPolicy := binding.DeepCopy()
	otherPolicy.Spec.PolicyName = "something-else"
	someNamespaces := binding.DeepCopy()
	someNamespaces.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}

	hint := "install it with the Helm chart, kubectl apply -k config/default, or kubectl apply -f config/policy/trainer_status_policy.yaml"
	differs := func(fields string) string {
		return "the trainer status policy espo-trainer-status as installed differs from the one this version of the operator ships, in " +
			fields + ": " + hint
	}
	cases := map[string]struct {
		objs    []client.Object
		wantErr string
	}{
		"as shipped":                     {objs: []client.Object{vap, binding}},
		"with the API server's defaults": {objs: []client.Object{defaulted, binding}},
		"a binding that also audits":     {objs: []client.Object{vap, alsoAudits}},
		"no policy": {objs: []client.Object{binding},
			wantErr: "the ValidatingAdmissionPolicy espo-trainer-status, which holds each trainer to its own job's status, is not installed: " + hint},
		"no binding": {objs: []client.Object{vap},
			wantErr: "the ValidatingAdmissionPolicyBinding espo-trainer-status, which holds each trainer to its own job's status, is not installed: " + hint},
		"a validation that lets everything through": {objs: []client.Object{weakened, binding}, wantErr: differs("the policy's validations")},
		"a policy for some namespaces only":         {objs: []client.Object{narrowed, binding}, wantErr: differs("the policy's matchConstraints")},
		"a policy that fails open":                  {objs: []client.Object{ignoring, binding}, wantErr: differs("the policy's failurePolicy")},
		"a binding that only audits": {objs: []client.Object{vap, audit},
			wantErr: differs("the binding's validationActions (without Deny)")},
		"a binding of another policy":        {objs: []client.Object{vap, otherPolicy}, wantErr: differs("the binding's policyName")},
		"a binding for some namespaces only": {objs: []client.Object{vap, someNamespaces}, wantErr: differs("the binding's matchResources")},
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

// TestCheckTrainerStatusPolicyOnAnOlderCluster: an API server that does not serve
// ValidatingAdmissionPolicy (before Kubernetes 1.30) is named as such, not as a
// policy left uninstalled.
func TestCheckTrainerStatusPolicyOnAnOlderCluster(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingAdmissionPolicy"}, SearchedVersions: []string{"v1"}}
		},
	}).Build()
	want := "the API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy: the operator needs Kubernetes 1.30 or later, " +
		"for the admission policy that holds each trainer to its own job's status"
	if got := errString(CheckTrainerStatusPolicy(context.Background(), c)); got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// errString is err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
