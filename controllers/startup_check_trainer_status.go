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
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/espo-dev/espo-operator/config/policy"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=espo-trainer-status

// installPolicyHint says how to install the trainer status policy.
const installPolicyHint = "install it with the Helm chart, kubectl apply -k config/default, or kubectl apply -f config/policy/trainer_status_policy.yaml"

// CheckTrainerStatusPolicy returns an error, which names what is missing or differs
// and how to install it, unless the admission policy that holds each trainer to its
// own job's status (TrainerStatusPolicyName) and its binding are installed and
// enforce what this version ships (config/policy): the same rules, conditions and
// validations, failing closed, over every namespace and object, with a binding that
// denies. Without them every trainer in a namespace could write the status of every
// job there, so the manager does not start, and is not ready.
func CheckTrainerStatusPolicy(ctx context.Context, reader client.Reader) error {
	wantPolicy, wantBinding, err := policy.TrainerStatus()
	if err != nil {
		return err
	}
	key := client.ObjectKey{Name: TrainerStatusPolicyName}
	live := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := reader.Get(ctx, key, live); err != nil {
		return policyError("ValidatingAdmissionPolicy", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := reader.Get(ctx, key, binding); err != nil {
		return policyError("ValidatingAdmissionPolicyBinding", err)
	}
	drift := append(policyDrift(&live.Spec, &wantPolicy.Spec), bindingDrift(&binding.Spec, &wantBinding.Spec)...)
	if len(drift) > 0 {
		return fmt.Errorf("the trainer status policy %s as installed differs from the one this version of the operator ships, in %s: %s",
			TrainerStatusPolicyName, strings.Join(drift, ", "), installPolicyHint)
	}
	return nil
}

// policyError is the error of reading the trainer status policy's object of kind.
func policyError(kind string, err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the API server does not serve %s/v1 %s: the operator needs Kubernetes 1.30 or later, "+
			"for the admission policy that holds each trainer to its own job's status", admissionregistrationv1.GroupName, kind)
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the %s %s, which holds each trainer to its own job's status, is not installed: %s",
			kind, TrainerStatusPolicyName, installPolicyHint)
	}
	return fmt.Errorf("reading the %s %s: %w", kind, TrainerStatusPolicyName, err)
}

// policyDrift names the fields of the policy's spec that enforce something else than
// want's. The API server's defaults (matchPolicy, empty selectors, a rule's scope)
// count as the values they stand for.
func policyDrift(got, want *admissionregistrationv1.ValidatingAdmissionPolicySpec) []string {
	d := drift{}
	d.compare("the policy's failurePolicy", got.FailurePolicy, want.FailurePolicy)
	d.compare("the policy's matchConstraints", withDefaults(got.MatchConstraints), withDefaults(want.MatchConstraints))
	d.compare("the policy's matchConditions", got.MatchConditions, want.MatchConditions)
	d.compare("the policy's variables", got.Variables, want.Variables)
	d.compare("the policy's validations", got.Validations, want.Validations)
	d.compare("the policy's paramKind", got.ParamKind, want.ParamKind)
	return d
}

// bindingDrift names the fields of the binding's spec that enforce something else
// than want's; actions besides Deny (Audit, Warn) are allowed.
func bindingDrift(got, want *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) []string {
	d := drift{}
	d.compare("the binding's policyName", got.PolicyName, want.PolicyName)
	d.compare("the binding's matchResources", withDefaults(got.MatchResources), withDefaults(want.MatchResources))
	d.compare("the binding's paramRef", got.ParamRef, want.ParamRef)
	if !slices.Contains(got.ValidationActions, admissionregistrationv1.Deny) {
		d = append(d, "the binding's validationActions (without Deny)")
	}
	return d
}

// drift collects the names of differing fields.
type drift []string

// compare adds field when got and want differ.
func (d *drift) compare(field string, got, want any) {
	if !equality.Semantic.DeepEqual(got, want) {
		*d = append(*d, field)
	}
}

// withDefaults is m with the API server's defaults filled in: no MatchResources
// matches like an empty one, which matches every namespace and object, with
// matchPolicy Equivalent and every rule's scope "*".
func withDefaults(m *admissionregistrationv1.MatchResources) *admissionregistrationv1.MatchResources {
	out := &admissionregistrationv1.MatchResources{}
	if m != nil {
		out = m.DeepCopy()
	}
	if out.NamespaceSelector == nil {
		out.NamespaceSelector = &metav1.LabelSelector{}
	}
	if out.ObjectSelector == nil {
		out.ObjectSelector = &metav1.LabelSelector{}
	}
	if out.MatchPolicy == nil {
		out.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{out.ResourceRules, out.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
			}
		}
	}
	return out
}
