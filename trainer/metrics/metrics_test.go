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

package metrics

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// handEpisodes loads the hand-made episode of the dataset tests (steps: click the
// search box, type "Sichuan", click the "$20-40" chip, pool, Yes, No) as a food
// and a hotel episode.
func handEpisodes(t *testing.T) (food, hotel *dataset.Episode) {
	t.Helper()
	eps, err := dataset.LoadFile(filepath.Join("..", "dataset", "testdata", "valid.jsonl"))
	if err != nil || len(eps) != 1 {
		t.Fatalf("%d episodes, %v", len(eps), err)
	}
	f, h := eps[0], eps[0]
	h.ID, h.Channel = "ep-2", "hotel"
	return &f, &h
}

func ans(typ string, x, y float64, text string) string {
	return espo.FormatAnswer("", espo.Action{Type: typ, Point: [2]float64{x, y}, Text: text})
}

const no = -100

// TestHandComputed checks the metrics on answers whose outcomes are worked out by
// hand in the comments.
func TestHandComputed(t *testing.T) {
	food, hotel := handEpisodes(t)
	foodAnswers := []string{
		ans("click", 0.5, 0.15, espo.NoText),              // in the box: element, F1 1, success
		ans("type", no, no, "sichuan food"),               // "type sichuan food" vs "type Sichuan": P 2/3, R 1, F1 0.8
		ans("click", 0.5, 0.5, espo.NoText),               // outside the chip: F1 1, element wrong, no success
		ans("pool_found", no, no, food.Requirement),       // cos 1: intent right
		ans("recommendation", no, no, "Yes"),              // right
		"<answer>[{'action': 'recommendation'}]</answer>", // no <think>: unparsed, wrong
	}
	hotelAnswers := []string{
		ans("scroll", no, no, "down"),            // type wrong, element wrong, "scroll down" vs "click": F1 0
		ans("type", no, no, "Sichuan"),           // F1 1, success
		ans("click", 0.1, 0.13, espo.NoText),     // in the chip: success
		ans("pool_found", no, no, "hello world"), // type right, cos < tau: intent wrong
		ans("recommendation", no, no, "No"),      // truth Yes: wrong
		ans("recommendation", no, no, "No"),      // right
	}
	e := NewEvaluator(Options{})
	if err := e.Add(food, foodAnswers); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(hotel, hotelAnswers); err != nil {
		t.Fatal(err)
	}
	r := e.Report()
	want := map[string]Metrics{
		"micro": {Steps: 12, FormatRate: 11.0 / 12, TypeAcc: 10.0 / 12, ElementSteps: 4, EleAcc: 0.5,
			GUISteps: 6, OpF1: 4.8 / 6, StepSR: 0.5, PoolSteps: 2, IntentAcc: 0.5, RecommendSteps: 4, RecAcc: 0.5},
		"food": {Steps: 6, FormatRate: 5.0 / 6, TypeAcc: 5.0 / 6, ElementSteps: 2, EleAcc: 0.5,
			GUISteps: 3, OpF1: 2.8 / 3, StepSR: 1.0 / 3, PoolSteps: 1, IntentAcc: 1, RecommendSteps: 2, RecAcc: 0.5},
		"hotel": {Steps: 6, FormatRate: 1, TypeAcc: 5.0 / 6, ElementSteps: 2, EleAcc: 0.5,
			GUISteps: 3, OpF1: 2.0 / 3, StepSR: 2.0 / 3, PoolSteps: 1, IntentAcc: 0, RecommendSteps: 2, RecAcc: 0.5},
		"gui": {Steps: 6, FormatRate: 1, TypeAcc: 5.0 / 6, ElementSteps: 4, EleAcc: 0.5,
			GUISteps: 6, OpF1: 4.8 / 6, StepSR: 0.5},
		"pool":      {Steps: 2, FormatRate: 1, TypeAcc: 1, PoolSteps: 2, IntentAcc: 0.5},
		"recommend": {Steps: 4, FormatRate: 0.75, TypeAcc: 0.75, RecommendSteps: 4, RecAcc: 0.5},
	}
	got := map[string]Metrics{"micro": r.Micro, "food": r.ByChannel["food"], "hotel": r.ByChannel["hotel"],
		"gui": r.ByStage["gui"], "pool": r.ByStage["pool"], "recommend": r.ByStage["recommend"]}
	for k, w := range want {
		if !close(got[k], w) {
			t.Errorf("%s:\n got %+v\nwant %+v", k, got[k], w)
		}
	}
	if len(r.ByChannel) != 2 || len(r.ByStage) != 3 {
		t.Errorf("breakdowns %v %v", r.Channels(), r.ByStage)
	}
	if o := e.Judge(hotel, 3, hotelAnswers[3]); o.Similarity >= espo.DefaultRewardConfig().Tau || !o.TypeOK {
		t.Errorf("pool outcome %+v", o)
	}
}

func close(a, b Metrics) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	return a.Steps == b.Steps && a.ElementSteps == b.ElementSteps && a.GUISteps == b.GUISteps &&
		a.PoolSteps == b.PoolSteps && a.RecommendSteps == b.RecommendSteps &&
		eq(a.FormatRate, b.FormatRate) && eq(a.TypeAcc, b.TypeAcc) && eq(a.EleAcc, b.EleAcc) &&
		eq(a.OpF1, b.OpF1) && eq(a.StepSR, b.StepSR) && eq(a.IntentAcc, b.IntentAcc) && eq(a.RecAcc, b.RecAcc)
}

// Pixel answers are read with the episode's viewport.
func TestPixelPoints(t *testing.T) {
	food, _ := handEpisodes(t)
	food.Viewport = [2]int{1000, 2000}
	e := NewEvaluator(Options{})
	if o := e.Judge(food, 0, ans("click", 500, 300, espo.NoText)); !o.ElementOK || !o.Success {
		t.Errorf("pixel (500, 300) on a 1000x2000 screen is in the box: %+v", o)
	}
	food.Viewport = [2]int{}
	if o := e.Judge(food, 0, ans("click", 500, 300, espo.NoText)); o.ElementOK {
		t.Errorf("a pixel point without a viewport hits nothing: %+v", o)
	}
}

// The ground truth answers score perfectly, and Merge of two halves equals one
// Evaluator over all.
func TestGroundTruthAndMerge(t *testing.T) {
	eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: 24, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	all := NewEvaluator(Options{})
	halves := [2]*Evaluator{}
	for i := range halves {
		halves[i] = NewEvaluator(Options{})
	}
	for i := range eps {
		answers := make([]string, len(eps[i].Steps))
		for j := range answers {
			answers[j] = espo.FormatAnswer("ok", eps[i].Steps[j].Answer.Espo())
		}
		if err := all.Add(&eps[i], answers); err != nil {
			t.Fatal(err)
		}
		if err := halves[i%2].Add(&eps[i], answers); err != nil {
			t.Fatal(err)
		}
	}
	halves[0].Merge(halves[1])
	r, m := all.Report(), halves[0].Report()
	perfect := Metrics{Steps: r.Micro.Steps, FormatRate: 1, TypeAcc: 1, ElementSteps: r.Micro.ElementSteps, EleAcc: 1,
		GUISteps: r.Micro.GUISteps, OpF1: 1, StepSR: 1, PoolSteps: 24, IntentAcc: 1, RecommendSteps: r.Micro.RecommendSteps, RecAcc: 1}
	if !close(r.Micro, perfect) {
		t.Errorf("ground truth scores %+v", r.Micro)
	}
	if !close(m.Micro, r.Micro) || len(m.ByChannel) != 6 || !close(m.ByChannel["travel"], r.ByChannel["travel"]) {
		t.Errorf("merged %+v, want %+v", m.Micro, r.Micro)
	}
	if err := all.Add(&eps[0], nil); err == nil {
		t.Error("no error for missing answers")
	}
}

func TestOptions(t *testing.T) {
	food, _ := handEpisodes(t)
	typed := ans("type", no, no, "sichuan food") // F1 0.8 against "Sichuan"
	if o := NewEvaluator(Options{}).Judge(food, 1, typed); !o.ValueOK || o.Success {
		t.Errorf("F1 0.8 >= 0.5: value right, step not a success: %+v", o)
	}
	if o := NewEvaluator(Options{TextF1: 0.9}).Judge(food, 1, typed); o.ValueOK {
		t.Errorf("F1 0.8 < 0.9: value wrong: %+v", o)
	}
	pool := ans("pool_found", no, no, "I want Sichuan food")
	lo, hi := NewEvaluator(Options{Tau: -1}).Judge(food, 3, pool), NewEvaluator(Options{Tau: 1}).Judge(food, 3, pool)
	if !lo.Success || hi.Success || lo.Similarity != hi.Similarity {
		t.Errorf("tau -1: %+v; tau 1: %+v", lo, hi)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for tau 2")
		}
	}()
	NewEvaluator(Options{Tau: 2})
}

// TestIntentF1 checks the slot F1 of intents judged by slots: all the values give 1,
// half of them 2/3 (precision 1, recall 1/2), a conflicting value lowers it, an
// answer of another type counts 0, and steps judged by embedding do not count.
func TestIntentF1(t *testing.T) {
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"hotel"}, Episodes: 40, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ep *dataset.Episode
	for i := range eps {
		if len(eps[i].Preferences) >= 2 {
			ep = &eps[i]
			break
		}
	}
	if ep == nil {
		t.Fatal("no episode with two preferences")
	}
	pool := -1
	for j := range ep.Steps {
		if ep.Steps[j].Stage == dataset.StagePool {
			pool = j
		}
	}
	var values []string
	for _, k := range slices.Sorted(maps.Keys(ep.Preferences)) {
		values = append(values, ep.Preferences[k])
	}
	intent := func(text string) string {
		return espo.FormatAnswer("", espo.Action{Type: espo.ActionPoolFound, Point: espo.NoPoint, Text: text})
	}
	f1 := func(opts Options, answer string) Metrics {
		ev := NewEvaluator(opts)
		answers := make([]string, len(ep.Steps))
		answers[pool] = answer
		if err := ev.Add(ep, answers); err != nil {
			t.Fatal(err)
		}
		return ev.Report().Micro
	}
	slots := Options{Slots: dataset.SlotVocab(eps)}
	all := strings.Join(values, ", ")
	half := values[0]
	recall := 1 / float64(len(values))
	for _, tc := range []struct {
		name, answer string
		want         float64
	}{
		{"every value", intent(all), 1},
		{"one value", intent(half), 2 * recall / (1 + recall)},
		{"another type", espo.FormatAnswer("", espo.Action{Type: espo.ActionClick, Point: [2]float64{0.5, 0.5}, Text: all}), 0},
	} {
		m := f1(slots, tc.answer)
		if m.SlotSteps != 1 || math.Abs(m.IntentF1-tc.want) > 1e-12 {
			t.Errorf("%s: IntentF1 %v over %d slot steps, want %v over 1", tc.name, m.IntentF1, m.SlotSteps, tc.want)
		}
	}
	if m := f1(Options{Match: espo.IntentMatchEmbedding, Slots: slots.Slots}, intent(all)); m.SlotSteps != 0 || m.IntentF1 != 0 {
		t.Errorf("judged by embedding: IntentF1 %v over %d slot steps, want none", m.IntentF1, m.SlotSteps)
	}
}
