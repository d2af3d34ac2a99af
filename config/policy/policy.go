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
// one with it, and the test control planes install it.
package policy

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed trainer_status_policy.yaml
var trainerStatusYAML []byte

// shipped decodes trainerStatusYAML once.
var shipped = sync.OnceValues(func() (objects, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(trainerStatusYAML), 4096)
	o := objects{policy: &admissionregistrationv1.ValidatingAdmissionPolicy{}, binding: &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}}
	if err := dec.Decode(o.policy); err != nil {
		return o, fmt.Errorf("reading the shipped trainer status policy: %w", err)
	}
	if err := dec.Decode(o.binding); err != nil {
		return o, fmt.Errorf("reading the shipped trainer status policy's binding: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return o, fmt.Errorf("the shipped trainer status policy holds more than a policy and its binding")
	}
	return o, nil
})

// objects are the shipped policy and its binding.
type objects struct {
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// TrainerStatus returns copies of the shipped ValidatingAdmissionPolicy and its
// binding.
func TrainerStatus() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	o, err := shipped()
	if err != nil {
		return nil, nil, err
	}
	return o.policy.DeepCopy(), o.binding.DeepCopy(), nil
}

// installFieldManager is the field manager of Install.
const installFieldManager = "espo-policy-install"

// Install server-side applies the shipped policy and binding through c, as
// kubectl apply --server-side -f trainer_status_policy.yaml would.
func Install(ctx context.Context, c client.Client) error {
	p, b, err := TrainerStatus()
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{p, b} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err == nil {
			err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
				client.FieldOwner(installFieldManager), client.ForceOwnership)
		}
		if err != nil {
			return fmt.Errorf("installing %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return nil
}
