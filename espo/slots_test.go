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
	"math"
	"testing"
)

// testVocab mixes channels, as a run's vocabulary does: "Riverside" is an area and
// a cinema, prices of two channels share the slot.
var testVocab = SlotVocab{
	"cabin":  {"Economy", "Premium economy", "Business", "First"},
	"price":  {"$10-20", "$20-40", "$80+", "Under $100", "$100-200", "Under $10", "$10-25"},
	"rating": {"3.5+", "4.0+", "4.5+"},
	"stars":  {"3-star", "4-star", "5-star"},
	"area":   {"Riverside", "Old Town", "Business district"},
	"cinema": {"Riverside", "Downtown"},
	"stops":  {"Nonstop", "1 stop", "2+ stops"},
	"time":   {"Red-eye", "Morning"},
}

func TestMatchSlots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		truth map[string]string
		want  SlotMatch
	}{
		{"exact values", "Economy, nonstop", map[string]string{"cabin": "Economy", "stops": "Nonstop"},
			SlotMatch{True: 2, Found: 2, Right: true, F1: 1}},
		{"case and sentence", "I want an ECONOMY seat on a NONSTOP flight.", map[string]string{"cabin": "Economy", "stops": "Nonstop"},
			SlotMatch{True: 2, Found: 2, Right: true, F1: 1}},
		{"longest first: premium economy is not economy", "premium economy please", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1, Conflicting: 1}},
		{"longest first: the true longer value", "Premium economy", map[string]string{"cabin": "Premium economy"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"business district is an area, not a cabin", "near the business district, economy", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"$10-20 is not in $10-200", "around $10-200", map[string]string{"price": "$10-20"},
			SlotMatch{True: 1}},
		{"$100-200 is not $10-20", "$100-200 a night", map[string]string{"price": "$10-20"},
			SlotMatch{True: 1, Conflicting: 1}},
		{"under $10 is not in under $100", "under $100", map[string]string{"price": "Under $10"},
			SlotMatch{True: 1, Conflicting: 1}},
		{"a decimal's parts are words: under $10 in under $10.50", "under $10.50", map[string]string{"price": "Under $10"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"punctuation only separates words", "price 20 40, red eye", map[string]string{"price": "$20-40", "time": "Red-eye"},
			SlotMatch{True: 2, Found: 2, Right: true, F1: 1}},
		{"4.5+ is not in 14.5+", "rated 14.5+", map[string]string{"rating": "4.5+"},
			SlotMatch{True: 1}},
		{"4.5+ before a full stop", "Rated 4.5+.", map[string]string{"rating": "4.5+"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"4.0+ is not 4.5+", "rated 4.0+", map[string]string{"rating": "4.5+"},
			SlotMatch{True: 1, Conflicting: 1}},
		{"3-star glued to a word", "a 3-stars hotel", map[string]string{"stars": "3-star"},
			SlotMatch{True: 1}},
		{"2+ stops and red-eye", "a red-eye with 2+ stops", map[string]string{"stops": "2+ stops", "time": "Red-eye"},
			SlotMatch{True: 2, Found: 2, Right: true, F1: 1}},
		{"not inside a word", "firstly, economical", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1}},
		{"a conflicting value of a true slot", "economy or business", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1, Found: 1, Conflicting: 1, F1: 2 * 0.5 * 1 / 1.5}},
		{"a repeated value counts once", "economy, economy and business, business", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1, Found: 1, Conflicting: 1, F1: 2 * 0.5 * 1 / 1.5}},
		{"values of other slots are ignored", "economy, old town, 4-star", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"a value of two slots: the true one", "Riverside", map[string]string{"cinema": "Riverside"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
		{"a value of two slots conflicts in each true slot", "Riverside", map[string]string{"cinema": "Downtown", "area": "Old Town"},
			SlotMatch{True: 2, Conflicting: 2}},
		{"half the values", "nonstop", map[string]string{"cabin": "Economy", "stops": "Nonstop"},
			SlotMatch{True: 2, Found: 1, F1: 2 * 1 * 0.5 / 1.5}},
		{"no value", "a comfortable flight", map[string]string{"cabin": "Economy"},
			SlotMatch{True: 1}},
		{"no truth is never right", "economy", map[string]string{},
			SlotMatch{}},
		{"a true value missing from the vocabulary", "window seat", map[string]string{"seat": "Window seat"},
			SlotMatch{True: 1, Found: 1, Right: true, F1: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MatchSlots(tc.text, tc.truth, testVocab)
			if got.True != tc.want.True || got.Found != tc.want.Found || got.Conflicting != tc.want.Conflicting ||
				got.Right != tc.want.Right || math.Abs(got.F1-tc.want.F1) > 1e-12 {
				t.Errorf("MatchSlots(%q, %v) = %+v, want %+v", tc.text, tc.truth, got, tc.want)
			}
		})
	}
}

// TestSlotMatcherLacksValuesOutsideItsVocabulary: unlike MatchSlots, a SlotMatcher
// finds only its vocabulary's values, so a true value it lacks is never found.
func TestSlotMatcherLacksValuesOutsideItsVocabulary(t *testing.T) {
	m := NewSlotMatcher(testVocab)
	if got := m.Match("window seat", map[string]string{"seat": "Window seat"}); got.Found != 0 || got.Right {
		t.Errorf("Match = %+v, want nothing found", got)
	}
}

func TestSlotMatcherAllocatesNothing(t *testing.T) {
	m := NewSlotMatcher(testVocab)
	truth := map[string]string{"cabin": "Economy", "stops": "Nonstop", "time": "Red-eye"}
	text := "Looking for a red-eye flight in premium economy with 2+ stops, under $100, rated 4.5+."
	m.Match(text, truth) // grow the scratch space
	if n := testing.AllocsPerRun(100, func() { m.Match(text, truth) }); n != 0 {
		t.Errorf("Match allocates %v times, want 0", n)
	}
}

func TestRewarderJudgesIntentsBySlotsOrEmbedding(t *testing.T) {
	withPrefs := &GroundTruth{Stage: StagePool, Intent: "I need an economy seat on a nonstop flight.",
		Preferences: map[string]string{"cabin": "Economy", "stops": "Nonstop"}}
	without := &GroundTruth{Stage: StagePool, Intent: withPrefs.Intent}
	half := Action{Type: ActionPoolFound, Text: "nonstop, any cabin"}
	values := Action{Type: ActionPoolFound, Text: "Economy, nonstop"}
	for _, tc := range []struct {
		name       string
		match      IntentMatch
		score      SlotScore
		gt         *GroundTruth
		a          Action
		wantJudged IntentMatch
		wantStage  float64
	}{
		{"auto with preferences: slots", IntentMatchAuto, SlotScoreAll, withPrefs, values, IntentMatchSlots, 0.5},
		{"empty match is auto", "", "", withPrefs, values, IntentMatchSlots, 0.5},
		{"auto without preferences: embedding", IntentMatchAuto, SlotScoreAll, without, Action{Type: ActionPoolFound, Text: without.Intent}, IntentMatchEmbedding, 0.5},
		{"embedding ignores preferences", IntentMatchEmbedding, SlotScoreAll, withPrefs, values, IntentMatchEmbedding, 0},
		{"slots without preferences is never right", IntentMatchSlots, SlotScoreAll, without, Action{Type: ActionPoolFound, Text: without.Intent}, IntentMatchSlots, 0},
		{"all: half the values get nothing", IntentMatchAuto, SlotScoreAll, withPrefs, half, IntentMatchSlots, 0},
		{"f1: half the values get Intent * F1", IntentMatchAuto, SlotScoreF1, withPrefs, half, IntentMatchSlots, 0.5 * 2 * 1 * 0.5 / 1.5},
		{"f1: the wrong type gets nothing", IntentMatchAuto, SlotScoreF1, withPrefs, Action{Type: ActionClick, Text: values.Text}, IntentMatchSlots, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultRewardConfig()
			cfg.Match, cfg.SlotScore = tc.match, tc.score
			r, err := NewRewarder(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.SetSlotVocab(testVocab)
			s := r.ScoreAction(tc.gt, tc.a)
			if s.Judged != tc.wantJudged || math.Abs(s.Stage-tc.wantStage) > 1e-12 {
				t.Errorf("judged %q stage %v, want %q %v (score %+v)", s.Judged, s.Stage, tc.wantJudged, tc.wantStage, s)
			}
			if s.Judged == IntentMatchSlots && s.Similarity != 0 || s.Judged == IntentMatchEmbedding && s.Slots != (SlotMatch{}) {
				t.Errorf("score %+v carries the other match's result", s)
			}
		})
	}
}

func TestRewardConfigRefusesUnknownMatches(t *testing.T) {
	c := DefaultRewardConfig()
	c.Match = "fuzzy"
	if c.Validate() == nil {
		t.Error("match fuzzy accepted")
	}
	c = DefaultRewardConfig()
	c.SlotScore = "half"
	if c.Validate() == nil {
		t.Error("slot score half accepted")
	}
}

func BenchmarkSlotMatcher(b *testing.B) {
	m := NewSlotMatcher(testVocab)
	truth := map[string]string{"cabin": "Economy", "stops": "Nonstop", "time": "Red-eye"}
	text := "Looking for a red-eye flight in premium economy with 2+ stops, under $100, rated 4.5+. Thanks!"
	b.ReportAllocs()
	for b.Loop() {
		m.Match(text, truth)
	}
}
