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
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// answerOf is the answer text of an action with text (a decision) or a click.
func answerOf(typ, text string) string {
	return espo.FormatAnswer("", espo.Action{Type: typ, Point: espo.NoPoint, Text: text})
}

// handBatch is two rollouts (G = 1) of a GUI step and three recommend steps.
// Rollout 0 (advantage -1 on every step: it failed elsewhere), whose steps want
// Yes, Yes, No, answers Yes (right), No (wrong), Yes (wrong); rollout 1
// (advantage +2), whose steps want No, Yes, No, answers No (right), a scroll (no
// decision) and Yes (wrong). Every sampled decision had probability 0.25.
func handBatch() ([]*experience.Group, [][]float64) {
	step := func(stage dataset.Stage, want string) dataset.Step {
		return dataset.Step{Stage: stage, Answer: dataset.Answer{Action: espo.ActionRecommendation, InputText: want}}
	}
	ep := &dataset.Episode{Steps: []dataset.Step{step(dataset.StageGUI, ""), step(dataset.StageRecommend, dataset.Yes),
		step(dataset.StageRecommend, dataset.Yes), step(dataset.StageRecommend, dataset.No)}}
	lp := math.Log(0.25) // the sampled decision's probability, 0.25 every time
	sample := func(text string) worker.Sample {
		return worker.Sample{Answer: worker.Answer{Text: text}, LogProbs: []float64{-0.1, lp}}
	}
	rec := func(d string) worker.Sample { return sample(answerOf(espo.ActionRecommendation, d)) }
	g0 := &experience.Group{Episode: ep, Steps: []int{0, 1, 2, 3},
		Samples: []worker.Sample{sample(answerOf(espo.ActionScroll, "down")), rec(dataset.Yes), rec(dataset.No), rec(dataset.Yes)}}
	g1 := &experience.Group{Episode: ep, Steps: []int{0, 1, 2, 3},
		Samples: []worker.Sample{sample(answerOf(espo.ActionScroll, "down")), rec(dataset.No), sample(answerOf(espo.ActionScroll, "up")), rec(dataset.Yes)}}
	ep1 := *ep
	ep1.Steps = append([]dataset.Step(nil), ep.Steps...)
	ep1.Steps[1] = step(dataset.StageRecommend, dataset.No)
	g1.Episode = &ep1
	return []*experience.Group{g0, g1}, [][]float64{{-1, -1, -1, -1}, {2, 2, 2, 2}}
}

// TestSampledTallyOnAHandMadeBatch checks the counts, the advantage split and
// the push of the sampled decisions of handBatch against sums done by hand.
func TestSampledTallyOnAHandMadeBatch(t *testing.T) {
	var s sampledTally
	groups, adv := handBatch()
	for _, d := range sampledDecisions(groups, adv) {
		s.add(d)
	}
	// Decisions (want, got, adv): (Y,Y,-1) (Y,N,-1) (N,Y,-1) (N,N,2) (N,Y,2); the click is no decision.
	want := sampledTally{Steps: 6, Decisions: 5, Yes: 3, Right: 2, RightAdv: -1 + 2, WrongAdv: -1 - 1 + 2, RightNegative: 1, WrongPositive: 1, TruthYes: 2,
		// push adv (1[Yes] - p(Yes)), p of the sampled decision 0.25: Yes sampled
		// p(Yes) = 0.25, No sampled p(Yes) = 0.75.
		PushYes: -1*(1-0.25) + -1*(0-0.75), PushNo: -1*(1-0.25) + 2*(0-0.75) + 2*(1-0.25)}
	if math.Abs(s.PushYes-want.PushYes) > 1e-12 || math.Abs(s.PushNo-want.PushNo) > 1e-12 {
		t.Errorf("push %g / %g, want %g / %g", s.PushYes, s.PushNo, want.PushYes, want.PushNo)
	}
	s.PushYes, s.PushNo, want.PushYes, want.PushNo = 0, 0, 0, 0
	if s != want {
		t.Errorf("tally %+v\nwant  %+v", s, want)
	}
}

// TestTallyValidation checks the means of a validation pass on three decisions.
func TestTallyValidation(t *testing.T) {
	ds := []liveDecision{
		{logits: cpu.DecisionLogits{Head: 1, Delta: 1}, want: dataset.Yes, got: dataset.Yes, right: true},
		{logits: cpu.DecisionLogits{Head: 1, Delta: -3}, want: dataset.No, got: dataset.No, right: true},
		{logits: cpu.DecisionLogits{Head: 0.5, Delta: -0.5}, want: dataset.No, got: "", right: false},
	}
	v := tallyValidation(ds)
	near := func(name string, got number, want float64) {
		if math.Abs(float64(got)-want) > 1e-12 {
			t.Errorf("%s %g, want %g", name, got, want)
		}
	}
	if v.Decisions != 3 {
		t.Errorf("%d decisions, want 3", v.Decisions)
	}
	near("RecAcc", v.RecAcc, 2.0/3)
	near("Decided", v.Decided, 2.0/3)
	near("AnsweredYes", v.AnsweredYes, 0.5)
	near("TruthYes", v.TruthYes, 1.0/3)
	near("Head.All", v.Head.All, 2.5/3)
	near("Head.TruthNo", v.Head.TruthNo, 0.75)
	near("Delta.TruthYes", v.Delta.TruthYes, 1)
	near("Delta.TruthNo", v.Delta.TruthNo, -1.75)
	near("Margin.TruthNo", v.Margin.TruthNo, -1)
	s := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	near("PYes", v.PYes, (s(2)+s(-2)+0.5)/3)
	near("Entropy", v.Entropy, (2*binaryEntropy(s(2))+math.Log(2))/3)
}

// TestDiagnoseFlags: -diagnose needs -environment, runs sft, grpo and espo
// episode by default, and writes under the temporary directory unless -out says
// otherwise, never into docs by default.
func TestDiagnoseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-diagnose"}); err == nil {
		t.Error("-diagnose without -environment: no error")
	}
	o, err := parseFlags([]string{"-environment", "-diagnose"})
	if err != nil {
		t.Fatal(err)
	}
	if o.out != filepath.Join(os.TempDir(), "espo-diagnose") || !slices.Equal(o.arms, diagnoseArms) {
		t.Errorf("out %q, arms %v; want the temporary folder and %v", o.out, o.arms, diagnoseArms)
	}
	if o, err = parseFlags([]string{"-environment", "-diagnose", "-arms", "espo episode", "-out", "x"}); err != nil || o.out != "x" {
		t.Errorf("-out x -arms 'espo episode': out %q, %v", o.out, err)
	}
}
