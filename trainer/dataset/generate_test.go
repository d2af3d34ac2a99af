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

package dataset

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
)

func mustGenerate(t testing.TB, o GenerateOptions) []Episode {
	t.Helper()
	eps, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestGeneratedDataValidates(t *testing.T) {
	var buf bytes.Buffer
	o := GenerateOptions{Episodes: 600, Seed: 3}
	if err := Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	eps, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != o.Episodes {
		t.Fatalf("loaded %d episodes, want %d", len(eps), o.Episodes)
	}
	for i := range eps {
		if ps := Validate(&eps[i]); len(ps) > 0 {
			t.Fatalf("episode %s: %v", eps[i].ID, ps)
		}
	}
}

// TestGeneratedShape checks the published shape per channel over 1,000 episodes
// each: GUI steps within 10% of the published mean, one pool step, 4-7 recommend
// steps, instruction and requirement lengths in the published ranges.
func TestGeneratedShape(t *testing.T) {
	var st Stats
	err := GenerateEach(GenerateOptions{Episodes: 6000, Seed: 11}, func(ep Episode) error {
		st.Add(&ep)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	within := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("%s: %.3f, want %.3f within 10%%", name, got, want)
		}
	}
	for _, c := range Channels() {
		sh, ref := st.ByChannel[c], Published[c]
		if sh.Episodes != 1000 {
			t.Fatalf("%s: %d episodes, want 1000", c, sh.Episodes)
		}
		within(c+" gui steps", sh.GUI, ref.GUISteps)
		if ref.GUIStepsLow > 0 && (sh.GUI < ref.GUIStepsLow || sh.GUI > ref.GUIStepsHigh) {
			t.Errorf("%s: gui steps %.2f outside the published %.1f-%.1f", c, sh.GUI, ref.GUIStepsLow, ref.GUIStepsHigh)
		}
		if sh.Pool != 1 {
			t.Errorf("%s: %.3f pool steps per episode, want 1", c, sh.Pool)
		}
		if sh.Recommend < ref.RecommendMin || sh.Recommend > ref.RecommendMax {
			t.Errorf("%s: %.2f recommend steps, want %.0f-%.0f", c, sh.Recommend, ref.RecommendMin, ref.RecommendMax)
		}
		if sh.YesShare < 0.4 || sh.YesShare > 0.6 {
			t.Errorf("%s: %.2f of decisions are Yes, want about half", c, sh.YesShare)
		}
		w := PublishedWords
		if sh.InstructionMin < w.InstructionMin || sh.InstructionMax > w.InstructionMax {
			t.Errorf("%s: instructions of %d-%d words, want %d-%d", c, sh.InstructionMin, sh.InstructionMax, w.InstructionMin, w.InstructionMax)
		}
		if sh.RequirementMin < w.RequirementMin || sh.RequirementMax > w.RequirementMax {
			t.Errorf("%s: requirements of %d-%d words, want %d-%d", c, sh.RequirementMin, sh.RequirementMax, w.RequirementMin, w.RequirementMax)
		}
	}
	within("steps per episode", st.All.Steps, PublishedStepsPerEpisode)
}

func TestGenerateDeterministic(t *testing.T) {
	gen := func(seed uint64) []byte {
		var buf bytes.Buffer
		if err := Write(&buf, GenerateOptions{Channels: []string{"hotel", "travel"}, Episodes: 20, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b, c := gen(5), gen(5), gen(6)
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different bytes")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same bytes")
	}
	// Episode i does not depend on how many follow it.
	short := mustGenerate(t, GenerateOptions{Episodes: 3, Seed: 5})
	long := mustGenerate(t, GenerateOptions{Episodes: 9, Seed: 5})
	for i := range short {
		var x, y bytes.Buffer
		if WriteEpisode(&x, &short[i]) != nil || WriteEpisode(&y, &long[i]) != nil || !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("episode %d differs with the number of episodes", i)
		}
	}
}

func TestGenerateOptions(t *testing.T) {
	if _, err := Generate(GenerateOptions{Channels: []string{"shopping"}, Episodes: 1}); err == nil || !strings.Contains(err.Error(), `unknown channel "shopping"`) {
		t.Errorf("unknown channel: got %v", err)
	}
	if _, err := Generate(GenerateOptions{Episodes: -1}); err == nil {
		t.Error("negative episode count: no error")
	}
	eps := mustGenerate(t, GenerateOptions{Channels: []string{"movie", "food"}, Episodes: 4})
	for i, want := range []string{"movie", "food", "movie", "food"} {
		if eps[i].Channel != want {
			t.Errorf("episode %d: channel %s, want %s", i, eps[i].Channel, want)
		}
	}
}

// clickedText returns the text of the element a GUI step clicked, or "".
func clickedText(s *Step) string {
	if s.Answer.Action != espo.ActionClick {
		return ""
	}
	return s.Screen.element(s.Answer.Target).Text
}

// TestPreferencesReachLabels checks the cross-step dependency: every latent
// preference is revealed by a GUI step (typed, or its chip or option clicked), the
// requirement states it, and every recommend label is Yes exactly when the
// candidate fits every preference.
func TestPreferencesReachLabels(t *testing.T) {
	for _, ep := range mustGenerate(t, GenerateOptions{Episodes: 600, Seed: 21}) {
		c := channelByName(ep.Channel)
		for key, v := range ep.Preferences {
			d := &c.dims[slices.IndexFunc(c.dims, func(d dim) bool { return d.key == key })]
			revealed := slices.ContainsFunc(ep.Steps, func(s Step) bool {
				return s.Stage == StageGUI && (s.Answer.InputText == v || clickedText(&s) == v)
			})
			if !revealed {
				t.Errorf("%s: preference %s=%s is not revealed by a GUI step", ep.ID, key, v)
			}
			if pv := v; !strings.Contains(ep.Requirement, pv) && !(d.lower && strings.Contains(ep.Requirement, strings.ToLower(pv))) {
				t.Errorf("%s: the requirement %q does not state %s=%s", ep.ID, ep.Requirement, key, v)
			}
		}
		for _, s := range ep.Steps {
			if s.Stage != StageRecommend {
				continue
			}
			fits := true
			for key, v := range ep.Preferences {
				d := &c.dims[slices.IndexFunc(c.dims, func(d dim) bool { return d.key == key })]
				fits = fits && d.fits(v, s.Candidate.Attrs[key])
			}
			if want := map[bool]string{true: Yes, false: No}[fits]; s.Answer.InputText != want {
				t.Errorf("%s step %d: label %s, candidate %v fits %v: want %s", ep.ID, s.Index, s.Answer.InputText, s.Candidate.Attrs, ep.Preferences, want)
			}
		}
	}
}

func TestScreensDoNotOverlap(t *testing.T) {
	for _, ep := range mustGenerate(t, GenerateOptions{Episodes: 120, Seed: 8}) {
		for _, s := range ep.Steps {
			els := s.Screen.Elements
			for i := range els {
				for j := i + 1; j < len(els); j++ {
					if els[i].Box.Overlaps(els[j].Box) {
						t.Fatalf("%s step %d (%s): %s %v overlaps %s %v", ep.ID, s.Index, s.Screen.Page,
							els[i].ID, els[i].Box, els[j].ID, els[j].Box)
					}
				}
			}
		}
	}
}

// The committed sample is exactly what its documented command generates:
//
//	espo dataset generate --channels food,hotel,flight,movie,medicine,travel --episodes 36 --seed 1 -o config/samples/data/smartspot-sample.jsonl
func TestSampleDataIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "config", "samples", "data", "smartspot-sample.jsonl")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := Write(&want, GenerateOptions{Channels: Channels(), Episodes: 36, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s is stale: regenerate it with the command in this test's comment", path)
	}
}

func BenchmarkGenerateEpisode(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		generateEpisode(channels[i%len(channels)], 1, i, false)
	}
}
