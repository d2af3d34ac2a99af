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

func mustRewarder(t testing.TB) *Rewarder {
	t.Helper()
	r, err := NewRewarder(DefaultRewardConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func answer(typ string, x, y float64, text string) string {
	return FormatAnswer("...", Action{Type: typ, Point: [2]float64{x, y}, Text: text})
}

// TestScoreGolden scores answers by hand from the paper's values: R_format 0.5;
// R_gui +0.5 both, +0.2 type only, -0.2 value only, -0.5 neither; Intent_acc 0.5;
// R_dec +0.5 / -0.5.
func TestScoreGolden(t *testing.T) {
	click := GroundTruth{Stage: StageGUI, Action: Action{Type: ActionClick, Point: [2]float64{540, 600}, Text: NoText},
		Box: [4]float64{0.4, 0.2, 0.6, 0.3}, Screen: [2]float64{1080, 2400}}
	typ := GroundTruth{Stage: StageGUI, Action: Action{Type: ActionType, Point: NoPoint, Text: "hotel New York"}}
	scroll := GroundTruth{Stage: StageGUI, Action: Action{Type: ActionScroll, Point: NoPoint, Text: "down"}}
	exit := GroundTruth{Stage: StageGUI, Action: Action{Type: ActionComplete, Point: NoPoint, Text: NoText}}
	pool := GroundTruth{Stage: StagePool, Action: Action{Type: ActionPoolFound, Point: NoPoint, Text: "a hotel in New York next week"},
		Intent: "a hotel in New York next week"}
	rec := GroundTruth{Stage: StageRecommend, Action: Action{Type: ActionRecommendation, Point: NoPoint, Text: "Yes"}}
	for _, tc := range []struct {
		name    string
		gt      *GroundTruth
		answer  string
		step    float64
		typeOK  bool
		valueOK bool
	}{
		{"click in box, pixels", &click, answer("click", 540, 600, NoText), 0.5 + 0.5, true, true},
		{"click in box, normalised", &click, answer("click", 0.45, 0.25, NoText), 0.5 + 0.5, true, true},
		{"click outside box", &click, answer("click", 100, 100, NoText), 0.5 + 0.2, true, false},
		{"type at the box", &click, answer("type", 0.5, 0.25, "x"), 0.5 + (-0.2), false, true},
		{"scroll instead of click", &click, answer("scroll", -100, -100, "down"), 0.5 + (-0.5), false, false},
		{"malformed", &click, "<answer>click</answer>", 0 + (-0.5), false, false},
		{"type text F1 2/3", &typ, answer("type", -100, -100, "New York"), 0.5 + 0.5, true, true},     // P 1, R 2/3: F1 0.8
		{"type text F1 0.4", &typ, answer("type", -100, -100, "cheap hotel"), 0.5 + 0.2, true, false}, // P 1/2, R 1/3: F1 0.4
		{"scroll right", &scroll, answer("scroll", -100, -100, "Down"), 0.5 + 0.5, true, true},
		{"scroll wrong way", &scroll, answer("scroll", -100, -100, "up"), 0.5 + 0.2, true, false},
		{"complete", &exit, answer("complete", -100, -100, NoText), 0.5 + 0.5, true, true},
		{"exit for complete", &exit, answer("exit", -100, -100, NoText), 0.5 + (-0.5), false, false},
		{"intent paraphrase", &pool, answer("pool_found", -100, -100, "next week, a hotel in New York"), 0.5 + 0.5, true, true},
		{"intent wrong", &pool, answer("pool_found", -100, -100, "cheap flights to Paris"), 0.5 + 0, true, false},
		{"intent as type", &pool, answer("type", -100, -100, "a hotel in New York next week"), 0.5 + 0, false, true},
		{"intent malformed", &pool, "", 0 + 0, false, false},
		{"decision right", &rec, answer("recommendation", -100, -100, "Yes"), 0.5 + 0.5, true, true},
		{"decision wrong", &rec, answer("recommendation", -100, -100, "No"), 0.5 + (-0.5), true, false},
		{"decision lower case", &rec, answer("recommendation", -100, -100, "yes"), 0.5 + (-0.5), true, false},
		{"decision malformed", &rec, "no", 0 + (-0.5), false, false},
	} {
		s := mustRewarder(t).Score(tc.gt, tc.answer)
		if math.Abs(s.Step()-tc.step) > 1e-15 || s.TypeOK != tc.typeOK || s.ValueOK != tc.valueOK {
			t.Errorf("%s: Score = %+v (step %v); want step %v, type %v, value %v", tc.name, s, s.Step(), tc.step, tc.typeOK, tc.valueOK)
		}
		if (s.Err != nil) != (s.Format == 0) {
			t.Errorf("%s: Score = %+v: the format reward and the error disagree", tc.name, s)
		}
	}
}

func TestScoreAllocs(t *testing.T) {
	r := mustRewarder(t)
	gts := []GroundTruth{
		{Stage: StageGUI, Action: Action{Type: ActionClick, Text: NoText}, Box: [4]float64{0.4, 0.2, 0.6, 0.3}},
		{Stage: StageGUI, Action: Action{Type: ActionType, Text: "hotel New York"}},
		{Stage: StagePool, Intent: "a hotel in New York next week"},
		{Stage: StageRecommend, Action: Action{Type: ActionRecommendation, Text: "Yes"}},
	}
	ans := answer("pool_found", -100, -100, "hotel in New York")
	if n := testing.AllocsPerRun(100, func() {
		for i := range gts {
			r.Score(&gts[i], ans)
			r.Score(&gts[i], "bad")
		}
	}); n != 0 {
		t.Errorf("Score allocates %v times", n)
	}
}

func TestConfigs(t *testing.T) {
	// Each configuration is valid with no change and invalid with any one of them.
	rewards := func(f func(*RewardConfig)) error { c := DefaultRewardConfig(); f(&c); return c.Validate() }
	advantages := func(f func(*AdvantageConfig)) error { c := DefaultAdvantageConfig(); f(&c); return c.Validate() }
	loss := func(f func(*LossConfig)) error { c := DefaultLossConfig(); f(&c); return c.Validate() }
	sampler := func(f func(*SamplerConfig)) error { c := DefaultSamplerConfig(); f(&c); return c.Validate() }
	if err := errors.Join(rewards(func(*RewardConfig) {}), advantages(func(*AdvantageConfig) {}),
		loss(func(*LossConfig) {}), sampler(func(*SamplerConfig) {}),
		loss(func(c *LossConfig) { c.ISCap = 1 }), loss(func(c *LossConfig) { c.ISCap = 2 })); err != nil {
		t.Error(err)
	}
	for i, err := range []error{
		rewards(func(c *RewardConfig) { c.Tau = 2 }),
		rewards(func(c *RewardConfig) { c.Format = math.NaN() }),
		rewards(func(c *RewardConfig) { c.TextF1 = -1 }),
		advantages(func(c *AdvantageConfig) { c.Mode = "step" }),
		advantages(func(c *AdvantageConfig) { c.Gates = "none" }),
		advantages(func(c *AdvantageConfig) { c.GUIMax = 0 }),
		advantages(func(c *AdvantageConfig) { c.EmptyGate = 2 }),
		advantages(func(c *AdvantageConfig) { c.Eps = 0 }),
		advantages(func(c *AdvantageConfig) { c.K = math.Inf(1) }),
		advantages(func(c *AdvantageConfig) { c.Eps = -1 }),
		loss(func(c *LossConfig) { c.KL = "k4" }),
		loss(func(c *LossConfig) { c.Agg = "sum" }),
		loss(func(c *LossConfig) { c.DualClip = 1.1 }),
		loss(func(c *LossConfig) { c.EpsLow = 1 }),
		loss(func(c *LossConfig) { c.EpsHigh = -1 }),
		loss(func(c *LossConfig) { c.Beta = -1 }),
		loss(func(c *LossConfig) { c.ISCap = 0.5 }),
		loss(func(c *LossConfig) { c.ISCap = -2 }),
		loss(func(c *LossConfig) { c.ISCap = math.Inf(1) }),
		loss(func(c *LossConfig) { c.ISCap = math.NaN() }),
		sampler(func(c *SamplerConfig) { c.Rank = 1 }),
		sampler(func(c *SamplerConfig) { c.EpisodesPerBatch = 0 }),
	} {
		if err == nil {
			t.Errorf("bad config %d validates", i)
		}
	}
	rc := DefaultRewardConfig()
	if _, err := NewRewarder(rc, nil); err != nil {
		t.Error(err)
	}
	rc.TextF1 = -1
	if _, err := NewRewarder(rc, nil); err == nil {
		t.Error("NewRewarder takes a bad config")
	}
	for s := StageGUI; s <= StageRecommend; s++ {
		if got, err := ParseStage(s.String()); got != s || err != nil {
			t.Errorf("ParseStage(%v) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStage("decide"); err == nil || Stage(9).String() != "Stage(9)" {
		t.Error("unknown stages")
	}
	for _, ac := range []AdvantageConfig{{Mode: "step", Gates: GatesBoth}, {Mode: COUTEpisode, Gates: "all"}} {
		if _, err := Advantages(nil, EpisodeRewards{G: 2}, ac); err == nil {
			t.Errorf("Advantages takes config %+v", ac)
		}
	}
	if _, err := Advantages(nil, EpisodeRewards{G: 1}, DefaultAdvantageConfig()); !errors.Is(err, ErrGroupSize) {
		t.Errorf("Advantages with G = 1: %v", err)
	}
}

// TestTextF1AtTheThreshold: 7 tokens shared of 8 predicted and 20 true is an F1 of
// exactly 0.5, which floating point computes just below 0.5; it is a right value.
func TestTextF1AtTheThreshold(t *testing.T) {
	truth := "a b c d e f g h i j k l m n o p q r s t"
	pred := "a b c d e f g z"
	if f := TokenF1(pred, truth); f >= 0.5 || f < 0.5-1e-12 {
		t.Fatalf("TokenF1 = %.17g, want just below 0.5 (the rounding this test is about)", f)
	}
	r, err := NewRewarder(DefaultRewardConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gt := &GroundTruth{Stage: StageGUI, Action: Action{Type: ActionType, Point: NoPoint, Text: truth}}
	if s := r.ScoreAction(gt, Action{Type: ActionType, Point: NoPoint, Text: pred}); !s.ValueOK {
		t.Errorf("an F1 of exactly the threshold 0.5 was judged wrong: %+v", s)
	}
	if s := r.ScoreAction(gt, Action{Type: ActionType, Point: NoPoint, Text: "a b c d e f z y"}); s.ValueOK {
		t.Errorf("an F1 below the threshold was judged right: %+v", s)
	}
}
