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

package apitest

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// strict is the field validation kubectl uses by default: unknown fields are refused
// instead of silently dropped.
var strict = client.FieldValidation("Strict")

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apitest-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// readManifest reads one YAML object, as kubectl would send it.
func readManifest(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u
}

// getRaw reads the stored object as the server sends it, without Go types in between.
func getRaw(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("training.espo.dev/v1alpha1")
	u.SetKind("ESPOJob")
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// stringAt returns the string at a dotted path of u, failing the test when it is not one.
func stringAt(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	s, found, err := unstructured.NestedString(u.Object, path...)
	if !found || err != nil {
		t.Fatalf("%v: not a string (found %v, %v)", path, found, err)
	}
	return s
}
