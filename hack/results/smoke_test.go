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

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmoke runs the whole comparison small (one seed, a few users, one epoch) on
// hard data: the validity checks must hold, every trained arm must learn above the
// untrained policy (step success on the test users, by at least 5 points), and
// results.md and results.json must be written with every arm.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the smoke comparison trains ten arms (about a minute)")
	}
	out := t.TempDir()
	o, err := parseFlags([]string{"-seeds", "1", "-difficulty", "hard", "-train-episodes", "30", "-validation-episodes", "5",
		"-test-episodes", "20", "-validity-episodes", "300", "-epochs", "1", "-bootstrap", "200", "-out", out})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.validity {
		if !v.ok() {
			t.Errorf("the test bed is not valid: %s", v.summary())
		}
	}
	floor := res.arms[armUntrained].scores.seedValue(0, metricStepSR)
	for _, name := range o.arms {
		if a := armNamed(name); !a.trained() || name == armUntrained {
			continue
		}
		if got := res.arms[name].scores.seedValue(0, metricStepSR); !(got >= floor+0.05) {
			t.Errorf("%s: test StepSR %.3f, not above the untrained policy's %.3f by 5 points", name, got, floor)
		}
	}
	if err := writeResults(o, res, []string{"-seeds", "1"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range o.arms {
		if !strings.Contains(string(md), "| "+name+" |") {
			t.Errorf("results.md has no row for %s", name)
		}
	}
	for _, f := range []string{"results.json", "results-curve.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}
