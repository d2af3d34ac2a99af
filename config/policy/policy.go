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

// Package policy is the admission policy that holds each trainer to its own job's
// status, as this version of the operator ships it (trainer_status_policy.yaml, which
// the chart copies and config/default installs): the manager compares the installed
// one with it.
package policy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed trainer_status_policy.yaml
var trainerStatusYAML []byte

// TrainerStatus returns the shipped ValidatingAdmissionPolicy and its binding.
func TrainerStatus() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(trainerStatusYAML), 4096)
	policy, binding := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := dec.Decode(policy); err != nil {
		return nil, nil, fmt.Errorf("reading the shipped trainer status policy: %w", err)
	}
	if err := dec.Decode(binding); err != nil {
		return nil, nil, fmt.Errorf("reading the shipped trainer status policy's binding: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("the shipped trainer status policy holds more than a policy and its binding")
	}
	return policy, binding, nil
}
