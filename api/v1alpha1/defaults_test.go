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

package v1alpha1

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdSchema returns the openAPIV3Schema of the generated CRD's one version.
func crdSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/bases/training.espo.dev_espojobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil || len(crd.Spec.Versions) != 1 {
		t.Fatalf("reading the CRD: %v (%d versions)", err, len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// property follows a path of property names (and "items" for a list's elements)
// down a schema.
func property(t *testing.T, schema map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, name := range path {
		var next any
		if name == "items" {
			next = schema["items"]
		} else {
			props, _ := schema["properties"].(map[string]any)
			next = props[name]
		}
		s, ok := next.(map[string]any)
		if !ok {
			t.Fatalf("the CRD schema has no %v", path)
		}
		schema = s
	}
	return schema
}

// TestSyntheticDefaultsMatchTheCRD holds the CRD's default markers of a synthetic
// source to the Go defaults that SyntheticSource.Default and "espo dataset generate"
// read: one truth, so the CLI and a job generate the same data.
func TestSyntheticDefaultsMatchTheCRD(t *testing.T) {
	synthetic := property(t, crdSchema(t), "spec", "datasets", "sources", "items", "synthetic")
	var goDefaults SyntheticSource
	goDefaults.Default()
	for field, want := range map[string]any{
		"channels":   goDefaults.Channels,
		"episodes":   goDefaults.Episodes,
		"seed":       DefaultSyntheticSeed,
		"difficulty": goDefaults.Difficulty,
	} {
		got, ok := property(t, synthetic, field)["default"]
		if !ok {
			t.Errorf("synthetic.%s has no default in the CRD, Go's is %v", field, want)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("synthetic.%s: the CRD defaults to %v, Go to %v", field, got, want)
		}
	}
	if goDefaults.Seed != DefaultSyntheticSeed {
		t.Errorf("SyntheticSource.Default leaves seed %d, DefaultSyntheticSeed is %d: Seed is a plain int64, its default must be its zero value",
			goDefaults.Seed, DefaultSyntheticSeed)
	}
}

// TestOptimizerDefaultsMatchTheCRD holds the CRD's default markers of
// spec.algorithm.optimizer to OptimizerSpec.Default, and the section's own default
// ({}) to AlgorithmSpec.Default's, which writes the section out for a job that sets
// none.
func TestOptimizerDefaultsMatchTheCRD(t *testing.T) {
	optimizer := property(t, crdSchema(t), "spec", "algorithm", "optimizer")
	if d, ok := optimizer["default"].(map[string]any); !ok || len(d) != 0 {
		t.Errorf("spec.algorithm.optimizer's CRD default is %v, want {}", optimizer["default"])
	}
	var a AlgorithmSpec
	a.Default()
	o := a.Optimizer
	if o == nil {
		t.Fatal("AlgorithmSpec.Default left the optimizer unset")
	}
	for field, want := range map[string]any{
		"beta1": o.Beta1, "beta2": o.Beta2, "epsilon": o.Epsilon, "weightDecay": o.WeightDecay,
		"warmupSteps": o.WarmupSteps, "schedule": o.Schedule,
	} {
		got, ok := property(t, optimizer, field)["default"]
		if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("optimizer.%s: the CRD defaults to %v, Go to %v", field, got, want)
		}
	}
	if *o != (OptimizerSpec{Beta1: "0.9", Beta2: "0.999", Epsilon: "1e-8", WeightDecay: "0.01", Schedule: ScheduleConstant}) {
		t.Errorf("the optimizer's defaults %+v are not the trainer's constants before the section existed", *o)
	}
}

// TestSFTRate: the SFT epochs' rate is sftLearningRate when set, else ten times
// learningRate written as a short decimal, at most 1; a learningRate that is no
// number is left for its own field's error.
func TestSFTRate(t *testing.T) {
	for _, c := range []struct {
		lr, sft, want Decimal
	}{
		{"1e-6", "", "1e-05"},
		{"1e-3", "", "0.01"},
		{"0.003", "", "0.03"},
		{"0.5", "", "1"},
		{"1e-6", "2e-5", "2e-5"},
		{"x", "", "x"},
	} {
		a := AlgorithmSpec{LearningRate: c.lr, SFTLearningRate: c.sft}
		if got := a.SFTRate(); got != c.want {
			t.Errorf("learningRate %q, sftLearningRate %q: SFTRate %q, want %q", c.lr, c.sft, got, c.want)
		}
	}
}
