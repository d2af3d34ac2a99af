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
	"strings"
	"testing"
)

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"-arms", "grpo,feature upper bound", "-seeds", "1,2", "-out", "it's"})
	want := `-arms 'grpo,feature upper bound' -seeds 1,2 -out 'it'\''s'`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

// decided returns the scores of one seed of n test users, each with one
// recommendation decision of which the first right are right, and one intent
// step and one GUI step, both right.
func decided(n, right int) scores {
	sc := scores{make([][]tally, n)}
	for e := range sc[0] {
		sc[0][e] = make([]tally, len(metricList))
		sc[0][e][metricRec] = tally{den: 1}
		if e < right {
			sc[0][e][metricRec].num = 1
		}
		sc[0][e][metricIntent], sc[0][e][metricStepSR] = tally{1, 1}, tally{1, 1}
	}
	return sc
}

// TestAgainstSFT: every trained arm but sft and the untrained policy gets its
// difference to the sft arm, bold where the interval excludes 0: an arm that
// decides 30 of 100 users worse is below SFT, one that decides as SFT does is not.
func TestAgainstSFT(t *testing.T) {
	o := options{table: environmentArms, arms: []string{armUntrained, armSFT, armGRPO, "espo episode"}, resamples: 200}
	res := &results{arms: map[string]*armResult{
		armUntrained: {scores: decided(100, 10)}, armSFT: {scores: decided(100, 75)},
		armGRPO: {scores: decided(100, 45)}, "espo episode": {scores: decided(100, 75)},
	}}
	sums := summaries(o, res)
	var b strings.Builder
	writeAgainstSFT(&b, o, sums)
	md := b.String()
	for _, want := range []string{"## Against SFT", "| grpo | **-30.0 [", "| espo episode | +0.0 [+0.0, +0.0] | +0.0 [+0.0, +0.0] |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
	for _, absent := range []string{"| untrained |", "| sft |"} {
		if strings.Contains(md, absent) {
			t.Errorf("the section has a row %q:\n%s", absent, md)
		}
	}
	o.arms = []string{armGRPO, "espo episode"}
	b.Reset()
	writeAgainstSFT(&b, o, summaries(o, res))
	if b.Len() != 0 {
		t.Errorf("without the sft arm the section is written:\n%s", b.String())
	}
}

// TestRateAndKLFlagsReachTheSpec: -learning-rate, -sft-learning-rate,
// -kl-coefficient and -schedule set the arms' spec, and the report's set-up line
// names the rates the trainer resolves (the SFT epochs' ten times -learning-rate
// when -sft-learning-rate is unset).
func TestRateAndKLFlagsReachTheSpec(t *testing.T) {
	o, err := parseFlags([]string{"-learning-rate", "0.002", "-sft-learning-rate", "0.03", "-kl-coefficient", "0.1", "-schedule", "cosine"})
	if err != nil {
		t.Fatal(err)
	}
	a := spec(o, 1).Algorithm
	if a.LearningRate != "0.002" || a.SFTLearningRate != "0.03" || a.KL.Coefficient != "0.1" ||
		a.Optimizer == nil || a.Optimizer.Schedule != "cosine" {
		t.Errorf("the arms' algorithm %+v (optimizer %+v) does not carry the flags", a, a.Optimizer)
	}
	if got, want := o.rates(), "learning rate 0.002 (SFT epochs: 0.03)"; got != want {
		t.Errorf("rates() = %q, want %q", got, want)
	}
	o, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := spec(o, 1).Algorithm; a.KL.Coefficient != "" || a.Optimizer != nil {
		t.Errorf("unset, -kl-coefficient and -schedule leave the job's defaults, yet the spec has %q and %+v", a.KL.Coefficient, a.Optimizer)
	}
	if got, want := o.rates(), "learning rate 0.001 (SFT epochs: 0.01)"; got != want {
		t.Errorf("default rates() = %q, want %q", got, want)
	}
}
