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
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
)

// hardSample is the size of the hard samples: 100 episodes per channel.
const hardSample = 600

func hardBuilders(seed uint64) []*builder {
	bs := make([]*builder, hardSample)
	for i := range bs {
		bs[i] = buildEpisode(channels[i%len(channels)], seed, i, true)
	}
	return bs
}

func hardOptions(seed uint64) GenerateOptions {
	return GenerateOptions{Episodes: hardSample, Seed: seed, Difficulty: DifficultyHard}
}

func TestHardDataValidates(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, hardOptions(3)); err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(buf.Bytes())
	eps, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != hardSample {
		t.Fatalf("loaded %d episodes, want %d", len(eps), hardSample)
	}
	for i := range eps {
		if ps := Validate(&eps[i]); len(ps) > 0 {
			t.Fatalf("episode %s: %v", eps[i].ID, ps)
		}
		for _, s := range eps[i].Steps {
			if s.Candidate != nil && len(s.Candidate.Attrs) == 0 {
				t.Fatalf("%s step %d: candidate without attributes", eps[i].ID, s.Index)
			}
		}
	}
	buf.Reset()
	if err := Write(&buf, hardOptions(3)); err != nil || !bytes.Equal(buf.Bytes(), first) {
		t.Errorf("the same options gave different bytes (err %v)", err)
	}
	standard := mustGenerate(t, GenerateOptions{Episodes: 1, Seed: 3})
	if standard[0].Requirement == eps[0].Requirement || standard[0].ID == eps[0].ID {
		t.Errorf("hard episode 0 (%s) repeats the standard one (%s)", eps[0].ID, standard[0].ID)
	}
}

func TestGenerateRejectsUnknownDifficulty(t *testing.T) {
	_, err := Generate(GenerateOptions{Episodes: 1, Difficulty: "medium"})
	if err == nil || !strings.Contains(err.Error(), `unknown difficulty "medium", want standard or hard`) {
		t.Errorf("got %v", err)
	}
}

// cardValues reads the attribute values of a summary card's text.
func cardValues(c *channelSpec, text string) map[string]string {
	parts := strings.Split(text, " · ")
	m := map[string]string{}
	for i, d := range c.dims {
		m[d.key] = parts[i+1]
	}
	return m
}

// missedKeys returns the preference keys an item's values miss.
func (b *builder) missedKeys(vals map[string]string) []string {
	var keys []string
	for _, p := range b.prefs {
		if !p.d.fits(p.v, vals[p.d.key]) {
			keys = append(keys, p.d.key)
		}
	}
	return keys
}

// opened lists the items opened from a card and whether each was saved.
type openedItem struct {
	vals  map[string]string
	saved bool
}

func (b *builder) opened() []openedItem {
	var out []openedItem
	steps := b.ep.Steps
	for i, s := range steps {
		if s.Stage != StageGUI || s.Answer.Action != espo.ActionClick {
			continue
		}
		if e := s.Screen.element(s.Answer.Target); e.Role == "card" {
			saved := i+1 < len(steps) && clickedText(&steps[i+1]) == "Save"
			out = append(out, openedItem{cardValues(b.c, e.Text), saved})
		}
	}
	return out
}

// TestHardRevelations checks that every preference of a hard episode is revealed
// the way the builder says (typed or clicked; named in the instruction; an item
// that fits saved; an item that misses only it opened and not saved), and that
// about half of the preferences are revealed by behaviour only.
func TestHardRevelations(t *testing.T) {
	var counts [4]int
	total := 0
	for _, b := range hardBuilders(21) {
		ep := &b.ep
		items := b.opened()
		for i, p := range b.prefs {
			h := b.hard.hows[i]
			counts[h]++
			total++
			var ok bool
			switch h {
			case howStructural:
				ok = slices.ContainsFunc(ep.Steps, func(s Step) bool {
					return s.Stage == StageGUI && (s.Answer.InputText == p.v || clickedText(&s) == p.v)
				})
			case howHint:
				ok = ContainsValue(ep.Instruction, p.v)
			case howSaved:
				ok = slices.ContainsFunc(items, func(o openedItem) bool { return o.saved && len(b.missedKeys(o.vals)) == 0 })
			case howRejected:
				ok = slices.ContainsFunc(items, func(o openedItem) bool {
					return !o.saved && slices.Equal(b.missedKeys(o.vals), []string{p.d.key})
				})
			}
			if !ok {
				t.Errorf("%s: preference %s=%s (reveal %d) is not revealed", ep.ID, p.d.key, p.v, h)
			}
		}
		if !slices.ContainsFunc(b.hard.hows, behaviourOnly) {
			t.Errorf("%s: no preference revealed by behaviour only", ep.ID)
		}
	}
	share := float64(total-counts[howStructural]) / float64(total)
	t.Logf("%d preferences: structural %d, hint %d, saved %d, rejected %d; behaviour-only share %.3f",
		total, counts[howStructural], counts[howHint], counts[howSaved], counts[howRejected], share)
	if share < 0.4 || share > 0.6 {
		t.Errorf("behaviour-only share %.3f, want about half (0.4-0.6)", share)
	}
}

// TestHardLabels checks the labels of hard data against the oracle: a few percent
// flipped (at most 5%, so that the oracle scores at least 95%), and most
// negatives missing only preferences revealed by behaviour only.
func TestHardLabels(t *testing.T) {
	flipped, labels, negatives, hard := 0, 0, 0, 0
	for _, b := range hardBuilders(22) {
		for j := range b.ep.Steps {
			s := &b.ep.Steps[j]
			if s.Stage != StageRecommend {
				continue
			}
			labels++
			oracle := OracleDecision(&b.ep, s)
			if oracle != s.Answer.InputText {
				flipped++
			}
			if oracle == Yes {
				continue
			}
			negatives++
			weakOnly := true
			for _, k := range b.missedKeys(s.Candidate.Attrs) {
				i := slices.IndexFunc(b.prefs, func(p pref) bool { return p.d.key == k })
				weakOnly = weakOnly && behaviourOnly(b.hard.hows[i])
			}
			if weakOnly {
				hard++
			}
		}
	}
	noise, hardShare := float64(flipped)/float64(labels), float64(hard)/float64(negatives)
	t.Logf("%d labels: %.3f flipped; %d negatives, %.3f miss only behaviour-revealed preferences", labels, noise, negatives, hardShare)
	if flipped == 0 || noise > 0.05 {
		t.Errorf("label noise %.3f, want some and at most 0.05", noise)
	}
	if hardShare < 0.6 {
		t.Errorf("hard negatives %.3f of the negatives, want at least 0.6", hardShare)
	}
}

// TestHardChangedChoices replays the chips and option pages of hard episodes:
// the value each attribute ends with is the preference (or none), and in some
// episodes a first choice is changed to another value of the same attribute.
func TestHardChangedChoices(t *testing.T) {
	changed := 0
	for _, b := range hardBuilders(23) {
		ep := &b.ep
		final, change := map[string]string{}, false
		pending := ""
		for _, s := range ep.Steps {
			if s.Stage != StageGUI || s.Answer.Action != espo.ActionClick {
				continue
			}
			e := s.Screen.element(s.Answer.Target)
			var key, val string
			switch {
			case e.Attrs["group"] != "" && e.Attrs["selected"] == "true":
				key = e.Attrs["group"]
			case e.Attrs["group"] != "":
				key, val = e.Attrs["group"], e.Text
			case e.Attrs["opens"] != "":
				pending = e.Attrs["opens"]
				continue
			case e.Role == "option" && pending != "" && pending != "sort":
				key, val = pending, e.Text
			}
			pending = ""
			if key == "" {
				continue
			}
			// a selection replaced by another value of the same attribute
			change = change || val != "" && final[key] != "" && final[key] != val
			final[key] = val
		}
		for key, v := range final {
			if v != "" && v != ep.Preferences[key] {
				t.Errorf("%s: %s ends on %q, the preference is %q", ep.ID, key, v, ep.Preferences[key])
			}
		}
		if change {
			changed++
		}
	}
	t.Logf("%d of %d episodes change a choice", changed, hardSample)
	if changed < hardSample/10 {
		t.Errorf("%d episodes change a choice, want at least %d", changed, hardSample/10)
	}
}

// slotVocab is every value of every attribute of the channels.
func slotVocab() espo.SlotVocab {
	v := espo.SlotVocab{}
	for _, c := range channels {
		for _, d := range c.dims {
			v[d.key] = append(v[d.key], d.values...)
		}
	}
	return v
}

// TestRequirementsNameEveryValue checks, on both difficulties, that every
// requirement writes out each preference value (whole words, ignoring case) and
// is judged right slot by slot (espo.SlotMatcher), while the requirement with the
// values deleted (TemplateOnly) never is.
func TestRequirementsNameEveryValue(t *testing.T) {
	m := espo.NewSlotMatcher(slotVocab())
	for _, difficulty := range []string{DifficultyStandard, DifficultyHard} {
		tmplPass, tmplFound := 0, 0
		for _, ep := range mustGenerate(t, GenerateOptions{Episodes: hardSample, Seed: 24, Difficulty: difficulty}) {
			for key, v := range ep.Preferences {
				if !ContainsValue(ep.Requirement, v) {
					t.Errorf("%s: the requirement %q does not write %s=%s", ep.ID, ep.Requirement, key, v)
				}
			}
			if r := m.Match(ep.Requirement, ep.Preferences); !r.Right {
				t.Errorf("%s: the requirement %q is judged %+v", ep.ID, ep.Requirement, r)
			}
			r := m.Match(TemplateOnly(ep.Requirement, ep.Preferences), ep.Preferences)
			if r.Right {
				tmplPass++
			}
			tmplFound += r.Found
		}
		t.Logf("%s: template-only intent right by slots %d of %d, true values found %d", difficulty, tmplPass, hardSample, tmplFound)
		if tmplPass > 0 {
			t.Errorf("%s: the template-only intent is right by slots in %d episodes, want none", difficulty, tmplPass)
		}
	}
}

func TestTemplateOnlyAndContainsValue(t *testing.T) {
	prefs := map[string]string{"travellers": "Family", "theme": "Family fun", "price": "$20-40"}
	got := TemplateOnly("Family fun for a family, $20-40 each, not $20-400 or families.", prefs)
	if want := " for a ,  each, not $20-400 or families."; got != want {
		t.Errorf("TemplateOnly: %q, want %q", got, want)
	}
	for _, c := range []struct {
		text, v string
		want    bool
	}{
		{"a 4.5+ rating", "4.5+", true}, {"rated 14.5+", "4.5+", false}, {"ECONOMY class", "Economy", true},
		{"premium economy", "Economy", true}, {"economical", "Economy", false}, {"", "x", false}, {"x", "", false},
	} {
		if got := ContainsValue(c.text, c.v); got != c.want {
			t.Errorf("ContainsValue(%q, %q) = %v, want %v", c.text, c.v, got, c.want)
		}
	}
}

// TestHardBrowsingDependsOnPreferences checks that the demonstrated browsing
// follows the preferences: every item opened from a card fits at least half of
// them (an item that looks like a fit; browseFit scrolls past screens of others).
func TestHardBrowsingDependsOnPreferences(t *testing.T) {
	opened := 0
	for _, b := range hardBuilders(25) {
		half := (len(b.prefs) + 1) / 2
		for _, o := range b.opened() {
			opened++
			if fit := len(b.prefs) - len(b.missedKeys(o.vals)); fit < half {
				t.Errorf("%s: opened an item fitting %d of %d preferences", b.ep.ID, fit, len(b.prefs))
			}
		}
	}
	if opened < hardSample {
		t.Errorf("%d items opened in %d episodes, want more", opened, hardSample)
	}
}

// TestHardShape checks that hard data keeps the published shape of the steps
// per channel: GUI steps within 10% of the published mean, one pool step, the
// channel's recommend range, about half of the labels Yes.
func TestHardShape(t *testing.T) {
	var st Stats
	err := GenerateEach(GenerateOptions{Episodes: 3000, Seed: 26, Difficulty: DifficultyHard}, func(ep Episode) error {
		st.Add(&ep)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Channels() {
		sh, ref := st.ByChannel[c], Published[c]
		if math.Abs(sh.GUI-ref.GUISteps) > 0.1*ref.GUISteps {
			t.Errorf("%s: %.2f gui steps, want %.2f within 10%%", c, sh.GUI, ref.GUISteps)
		}
		if sh.Pool != 1 || sh.Recommend < ref.RecommendMin || sh.Recommend > ref.RecommendMax {
			t.Errorf("%s: %.2f pool and %.2f recommend steps", c, sh.Pool, sh.Recommend)
		}
		if sh.YesShare < 0.4 || sh.YesShare > 0.6 {
			t.Errorf("%s: %.2f of decisions are Yes, want about half", c, sh.YesShare)
		}
	}
}

func BenchmarkGenerateHardEpisode(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		generateEpisode(channels[i%len(channels)], 1, i, true)
	}
}
