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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=espo-trainer-status

// installPolicyHint says how to install the trainer status policy.
const installPolicyHint = "install it with the Helm chart, kubectl apply -k config/default, or kubectl apply -f config/policy/trainer_status_policy.yaml"

// CheckTrainerStatusPolicy returns an error, which names what is missing and how to
// install it, unless the admission policy that holds each trainer to its own job's
// status (TrainerStatusPolicyName) and a binding of it that denies are installed.
// Without them every trainer in a namespace could write the status of every job
// there, so the manager does not start.
func CheckTrainerStatusPolicy(ctx context.Context, reader client.Reader) error {
	key := client.ObjectKey{Name: TrainerStatusPolicyName}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := reader.Get(ctx, key, policy); err != nil {
		return policyError("ValidatingAdmissionPolicy", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := reader.Get(ctx, key, binding); err != nil {
		return policyError("ValidatingAdmissionPolicyBinding", err)
	}
	if binding.Spec.PolicyName != TrainerStatusPolicyName || !slices.Contains(binding.Spec.ValidationActions, admissionregistrationv1.Deny) {
		return fmt.Errorf("the ValidatingAdmissionPolicyBinding %s binds policy %q with actions %v; it must bind %s with action Deny: %s",
			TrainerStatusPolicyName, binding.Spec.PolicyName, binding.Spec.ValidationActions, TrainerStatusPolicyName, installPolicyHint)
	}
	return nil
}

// policyError is the error of reading the trainer status policy's object of kind.
func policyError(kind string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the %s %s, which holds each trainer to its own job's status, is not installed: %s",
			kind, TrainerStatusPolicyName, installPolicyHint)
	}
	return fmt.Errorf("reading the %s %s: %w", kind, TrainerStatusPolicyName, err)
}
