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

package estimator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
)

// rollouts is two rollouts that share their first state and part after it.
func rollouts() []espo.Rollout {
	return []espo.Rollout{
		{Stages: []espo.Stage{espo.StageGUI, espo.StagePool, espo.StageRecommend}, Step: []float64{1, 1, 1}, Stage: []float64{0.5, 1, 0.5}, States: []uint64{7, 8, 9}},
		{Stages: []espo.Stage{espo.StageGUI, espo.StagePool, espo.StageRecommend}, Step: []float64{0, 0, 0}, Stage: []float64{-0.5, 0, -0.5}, States: []uint64{7, 18, 19}},
	}
}

func dst(rs []espo.Rollout) [][]float64 {
	out := make([][]float64, len(rs))
	for g := range rs {
		out[g] = make([]float64, len(rs[g].Stages))
	}
	return out
}

// TestEstimatorsComputeTheirFormulas: each estimator writes what its formula in
// espo writes, on rollouts and on a recorded episode, and no two write the same.
func TestEstimatorsComputeTheirFormulas(t *testing.T) {
	cfg := espo.DefaultAdvantageConfig()
	ep := espo.EpisodeRewards{G: 2, Stages: []espo.Stage{espo.StageGUI, espo.StagePool},
		Step: []float64{1, 0.5, 1, 0}, Stage: []float64{0.5, -0.5, 1, 0}}
	formulas := map[Name]func(d [][]float64, rs []espo.Rollout) error{
		ESPO:        func(d [][]float64, rs []espo.Rollout) error { _, err := espo.LivedAdvantages(d, rs, cfg); return err },
		GRPO:        func(d [][]float64, rs []espo.Rollout) error { return espo.AnchorStepAdvantages(d, rs, cfg.Eps) },
		OutcomeOnly: func(d [][]float64, rs []espo.Rollout) error { return espo.OutcomeAdvantages(d, rs, cfg.Eps) },
		GiGPO:       func(d [][]float64, rs []espo.Rollout) error { return espo.GiGPOAdvantages(d, rs, cfg.Eps) },
	}
	seen := map[string]Name{}
	for name, formula := range formulas {
		e, err := New(name, cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		got, want := dst(rollouts()), dst(rollouts())
		if _, err := e.Rollouts(got, rollouts()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := formula(want, rollouts()); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, slices.Equal[[]float64]) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
		key := fmt.Sprint(got)
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s write the same advantages %v: the group cannot tell them apart", name, other, got)
		}
		seen[key] = name
	}
	for name, want := range map[Name]func([]float64) error{
		ESPO: func(d []float64) error { _, err := espo.Advantages(d, ep, cfg); return err },
		GRPO: func(d []float64) error { return espo.StepAdvantages(d, ep.Step, ep.G, cfg.Eps) },
	} {
		e, _ := New(name, cfg, false)
		got, w := make([]float64, len(ep.Step)), make([]float64, len(ep.Step))
		if _, err := e.Episode(got, ep); err != nil {
			t.Fatal(err)
		}
		if err := want(w); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s on a recorded episode: %v, want %v", name, got, w)
		}
	}
}

// TestNewRefusesWhatTheRunCannotApply: an unknown name, and an estimator of whole
// rollouts for recorded episodes, are refused, each naming why.
func TestNewRefusesWhatTheRunCannotApply(t *testing.T) {
	cfg := espo.DefaultAdvantageConfig()
	if _, err := New("ppo", cfg, true); err == nil || !strings.Contains(err.Error(), "espo, gigpo, grpo, outcome-only, shuffled-cout") {
		t.Errorf("unknown estimator: %v, want the known names", err)
	}
	for _, name := range []Name{OutcomeOnly, GiGPO} {
		if _, err := New(name, cfg, false); err == nil || !strings.Contains(err.Error(), "spec.datasets.environment") {
			t.Errorf("%s for recorded episodes: %v, want a refusal naming spec.datasets.environment", name, err)
		}
	}
	for _, name := range []Name{ESPO, GRPO, ShuffledCOUT} {
		if _, err := New(name, cfg, false); err != nil {
			t.Errorf("%s for recorded episodes: %v", name, err)
		}
	}
}
