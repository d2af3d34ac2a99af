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

package espo

import (
	"errors"
	"math"
	"testing"
)

// livedGroup is two rollouts that share their first state and part after it:
// rollout 0 answers the GUI step right, states the intent right and decides right;
// rollout 1 answers the GUI step wrong, its intent wrong and decides wrong.
func livedGroup() []Rollout {
	return []Rollout{
		{Stages: []Stage{StageGUI, StagePool, StageRecommend}, Step: []float64{1, 1, 1}, Stage: []float64{0.5, 1, 0.5}, States: []uint64{7, 8, 9}},
		{Stages: []Stage{StageGUI, StagePool, StageRecommend}, Step: []float64{0, 0, 0}, Stage: []float64{-0.5, 0, -0.5}, States: []uint64{7, 18, 19}},
	}
}

func newDst(rs []Rollout) [][]float64 {
	dst := make([][]float64, len(rs))
	for g := range rs {
		dst[g] = make([]float64, len(rs[g].Stages))
	}
	return dst
}

func TestLivedAdvantagesAnchorsStepsOnSharedStates(t *testing.T) {
	rs := livedGroup()
	dst := newDst(rs)
	if err := AnchorStepAdvantages(dst, rs, 1e-6); err != nil {
		t.Fatal(err)
	}
	// State 7 is shared: rewards 1 and 0, mean 0.5, unbiased std sqrt(0.5).
	want := 0.5 / (math.Sqrt(0.5) + 1e-6)
	if math.Abs(dst[0][0]-want) > 1e-9 || math.Abs(dst[1][0]+want) > 1e-9 {
		t.Errorf("shared state: %v %v, want +-%v", dst[0][0], dst[1][0], want)
	}
	for g := range dst {
		for _, a := range dst[g][1:] {
			if a != 0 {
				t.Errorf("rollout %d: a state reached once has step advantage %v, want 0", g, a)
			}
		}
	}
}

func TestLivedAdvantagesCreditEachRolloutForItsOwnCOUT(t *testing.T) {
	cfg := DefaultAdvantageConfig()
	rs := livedGroup()
	for _, mode := range []COUTMode{COUTEpisode, COUTRollout} {
		cfg.Mode = mode
		dst := newDst(rs)
		c, err := LivedAdvantages(dst, rs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		own0 := EpisodeCOUT(EpisodeRewards{G: 1, Stages: rs[0].Stages, Step: rs[0].Step, Stage: rs[0].Stage}, cfg).Reward
		own1 := EpisodeCOUT(EpisodeRewards{G: 1, Stages: rs[1].Stages, Step: rs[1].Step, Stage: rs[1].Stage}, cfg).Reward
		if own1 != 0 || !(own0 > 1) {
			t.Fatalf("the rollouts' own COUT: %v and %v, want > 1 and 0 (intent wrong)", own0, own1)
		}
		cout0, cout1 := own0, own1
		if mode == COUTRollout {
			s := math.Sqrt(((own0-own1)/2)*((own0-own1)/2)*2) + cfg.Eps
			cout0, cout1 = (own0-own1)/2/s, -(own0-own1)/2/s
		}
		// Steps 1 and 2 have no anchor: their advantage is the rollout's COUT term.
		for tt := 1; tt < 3; tt++ {
			if math.Abs(dst[0][tt]-cout0) > 1e-9 || math.Abs(dst[1][tt]-cout1) > 1e-9 {
				t.Errorf("%s mode, step %d: %v %v, want %v %v", mode, tt, dst[0][tt], dst[1][tt], cout0, cout1)
			}
		}
		if math.Abs(c.Reward-(own0+own1)/2) > 1e-12 {
			t.Errorf("%s mode: mean COUT %v, want %v", mode, c.Reward, (own0+own1)/2)
		}
		if !(dst[0][0] > dst[1][0]) {
			t.Errorf("%s mode: the right first step's advantage %v is not above the wrong one's %v", mode, dst[0][0], dst[1][0])
		}
	}
}

func TestLivedAdvantagesWithoutCOUTAreTheAnchorStepAdvantages(t *testing.T) {
	cfg := DefaultAdvantageConfig()
	cfg.W = 0
	rs := livedGroup()
	got, want := newDst(rs), newDst(rs)
	if _, err := LivedAdvantages(got, rs, cfg); err != nil {
		t.Fatal(err)
	}
	if err := AnchorStepAdvantages(want, rs, cfg.Eps); err != nil {
		t.Fatal(err)
	}
	for g := range got {
		for tt := range got[g] {
			if got[g][tt] != want[g][tt] {
				t.Errorf("w = 0, rollout %d step %d: %v, want %v", g, tt, got[g][tt], want[g][tt])
			}
		}
	}
}

func TestLivedAdvantagesRefuseAGroupOfOne(t *testing.T) {
	rs := livedGroup()[:1]
	if _, err := LivedAdvantages(newDst(rs), rs, DefaultAdvantageConfig()); !errors.Is(err, ErrGroupSize) {
		t.Errorf("one rollout: %v, want ErrGroupSize", err)
	}
}

func TestOutcomeAdvantagesCreditEveryStepWithTheEnd(t *testing.T) {
	rs := livedGroup()
	dst := newDst(rs)
	if err := OutcomeAdvantages(dst, rs, 1e-6); err != nil {
		t.Fatal(err)
	}
	// Outcomes: 1 + 0.5 = 1.5 and 0 - 0.5 = -0.5; normalised to +-1/sqrt(2).
	want := 1 / (math.Sqrt(2) + 1e-6)
	for tt := range dst[0] {
		if math.Abs(dst[0][tt]-want) > 1e-9 || math.Abs(dst[1][tt]+want) > 1e-9 {
			t.Errorf("step %d: %v %v, want +-%v for every step", tt, dst[0][tt], dst[1][tt], want)
		}
	}
}

func TestGiGPOAdvantagesAddTheOutcomeToTheAnchorSteps(t *testing.T) {
	rs := livedGroup()
	got, outcome, step := newDst(rs), newDst(rs), newDst(rs)
	if err := GiGPOAdvantages(got, rs, 1e-6); err != nil {
		t.Fatal(err)
	}
	if err := OutcomeAdvantages(outcome, rs, 1e-6); err != nil {
		t.Fatal(err)
	}
	if err := AnchorStepAdvantages(step, rs, 1e-6); err != nil {
		t.Fatal(err)
	}
	differs := false
	for g := range got {
		for tt := range got[g] {
			if want := outcome[g][tt] + step[g][tt]; got[g][tt] != want {
				t.Errorf("rollout %d step %d: %v, want outcome %v + step %v", g, tt, got[g][tt], outcome[g][tt], step[g][tt])
			}
			differs = differs || step[g][tt] != 0
		}
	}
	if !differs {
		t.Fatal("the group's anchor-step advantages are all 0: the test cannot tell GiGPO from outcome-only")
	}
	if err := GiGPOAdvantages(newDst(rs[:1]), rs[:1], 1e-6); !errors.Is(err, ErrGroupSize) {
		t.Errorf("one rollout: %v, want ErrGroupSize", err)
	}
}
