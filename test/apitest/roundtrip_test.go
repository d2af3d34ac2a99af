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
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// roundTripManifest writes decimals in every spelling the pattern allows; none may
// be rewritten on the way through the API server or the Go types.
const roundTripManifest = `
apiVersion: training.espo.dev/v1alpha1
kind: ESPOJob
metadata:
  name: round-trip
spec:
  datasets:
    sources:
    - name: s
      synthetic: {}
  algorithm:
    learningRate: "5E-07"
    clip: {low: "0.20", high: "+0.3", dual: "3"}
    kl: {coefficient: "1.0e-2"}
  rewards:
    format: "0.500"
    gui: {exact: "5e-1", typeOnly: "0.2000", valueOnly: "-0.2", wrong: "-00.5"}
    intent: {correct: "0.5", threshold: "0.75"}
    decision: {correct: "+0.5", wrong: "-5.0E-01"}
    cout: {temperature: "1", weight: "0.999999999999999999"}
`

// roundTripFields are the paths under spec of the decimals written above.
var roundTripFields = [][]string{
	{"algorithm", "learningRate"}, {"algorithm", "clip", "low"}, {"algorithm", "clip", "high"},
	{"algorithm", "clip", "dual"}, {"algorithm", "kl", "coefficient"}, {"rewards", "format"},
	{"rewards", "gui", "exact"}, {"rewards", "gui", "typeOnly"}, {"rewards", "gui", "valueOnly"},
	{"rewards", "gui", "wrong"}, {"rewards", "intent", "correct"}, {"rewards", "intent", "threshold"},
	{"rewards", "decision", "correct"}, {"rewards", "decision", "wrong"},
	{"rewards", "cout", "temperature"}, {"rewards", "cout", "weight"},
}

// TestDecimalsRoundTrip creates the manifest, reads it back raw and compares every
// decimal with what the YAML said, byte for byte; then it does the same after an
// update through the Go types and after a second server-side apply of the same
// manifest, which must not even bump the generation (GitOps stays quiet).
func TestDecimalsRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	sent := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(roundTripManifest), &sent.Object); err != nil {
		t.Fatal(err)
	}
	sent.SetNamespace(ns)
	applied := sent.DeepCopy()
	//lint:ignore SA1019 a patch of type apply is the only apply that takes field validation Strict, as kubectl apply does
	if err := env.Client.Patch(ctx, applied, client.Apply, client.FieldOwner("gitops"), strict); err != nil {
		t.Fatalf("applying: %v", err)
	}
	check := func(stage string) {
		t.Helper()
		raw := getRaw(t, ns, sent.GetName())
		for _, path := range roundTripFields {
			want := stringAt(t, sent, append([]string{"spec"}, path...)...)
			if got := stringAt(t, raw, append([]string{"spec"}, path...)...); got != want {
				t.Errorf("%s: spec.%v = %q, want %q", stage, path, got, want)
			}
		}
	}
	check("after apply")

	var typed trainingv1alpha1.ESPOJob
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: sent.GetName()}, &typed); err != nil {
		t.Fatal(err)
	}
	gen := typed.Generation
	if err := env.Client.Update(ctx, &typed, strict); err != nil {
		t.Fatalf("updating through the Go types: %v", err)
	}
	check("after a Go update")

	again := sent.DeepCopy()
	//lint:ignore SA1019 a patch of type apply is the only apply that takes field validation Strict, as kubectl apply does
	if err := env.Client.Patch(ctx, again, client.Apply, client.FieldOwner("gitops"), strict); err != nil {
		t.Fatalf("applying again: %v", err)
	}
	check("after a second apply")
	if again.GetGeneration() != gen {
		t.Errorf("re-applying the same manifest moved the generation from %d to %d", gen, again.GetGeneration())
	}
}
