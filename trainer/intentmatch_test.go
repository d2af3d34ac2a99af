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

package trainer

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/metrics"
)

// difficulties are the difficulties of generated data the probes run on.
var difficulties = []string{dataset.DifficultyStandard, dataset.DifficultyHard}

// probeEpisodes are a few hundred generated episodes of every channel.
func probeEpisodes(t *testing.T, difficulty string) []dataset.Episode {
	t.Helper()
	eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: 360, Seed: 14, Difficulty: difficulty})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// intentJudge scores pool_found texts as the trainer's rewards do, with the
// default config but for match.
type intentJudge struct {
	rw *espo.Rewarder
}

func newIntentJudge(t *testing.T, match espo.IntentMatch, vocab espo.SlotVocab) *intentJudge {
	t.Helper()
	cfg := espo.DefaultRewardConfig()
	cfg.Match = match
	rw, err := espo.NewRewarder(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw.SetSlotVocab(vocab)
	return &intentJudge{rw: rw}
}

// right reports whether text is a right intent for the pool step of ep.
func (j *intentJudge) right(t *testing.T, ep *dataset.Episode, text string) bool {
	t.Helper()
	for k := range ep.Steps {
		if s := &ep.Steps[k]; s.Stage == dataset.StagePool {
			gt := ep.GroundTruth(s)
			sc := j.rw.ScoreAction(&gt, espo.Action{Type: espo.ActionPoolFound, Text: text})
			return sc.TypeOK && sc.ValueOK
		}
	}
	t.Fatalf("episode %s has no pool step", ep.ID)
	return false
}

// passRate returns the fraction of eps whose text(ep) is right.
func (j *intentJudge) passRate(t *testing.T, eps []dataset.Episode, text func(*dataset.Episode) string) float64 {
	n := 0
	for e := range eps {
		if j.right(t, &eps[e], text(&eps[e])) {
			n++
		}
	}
	return float64(n) / float64(len(eps))
}

// withoutValues is the requirement with every preference value deleted, wherever
// it stands, ignoring case.
func withoutValues(ep *dataset.Episode) string {
	r := ep.Requirement
	for _, v := range ep.Preferences {
		for {
			i := strings.Index(strings.ToLower(r), strings.ToLower(v))
			if i < 0 {
				break
			}
			r = r[:i] + r[i+len(v):]
		}
	}
	return r
}

// onlyValues is the preference values and nothing else, joined by ", ".
func onlyValues(ep *dataset.Episode) string {
	var vs []string
	for _, k := range slices.Sorted(maps.Keys(ep.Preferences)) {
		vs = append(vs, ep.Preferences[k])
	}
	return strings.Join(vs, ", ")
}

func requirement(ep *dataset.Episode) string { return ep.Requirement }

// TestIntentProbes holds the slot match to the probes of the intent metric on
// generated episodes of every channel, of each difficulty: the requirement without its values fails,
// the values alone pass, the true requirement passes. It logs what the hashed
// embedder at tau gives on the same probes.
func TestIntentProbes(t *testing.T) {
	for _, d := range difficulties {
		t.Run(d, func(t *testing.T) { intentProbes(t, probeEpisodes(t, d)) })
	}
}

func intentProbes(t *testing.T, eps []dataset.Episode) {
	slots := newIntentJudge(t, espo.IntentMatchAuto, dataset.SlotVocab(eps))
	emb := newIntentJudge(t, espo.IntentMatchEmbedding, nil)
	for _, p := range []struct {
		name      string
		text      func(*dataset.Episode) string
		wantSlots float64
	}{
		{"the requirement with every preference value deleted", withoutValues, 0},
		{"exactly the preference values", onlyValues, 1},
		{"the true requirement", requirement, 1},
	} {
		got := slots.passRate(t, eps, p.text)
		if got != p.wantSlots {
			t.Errorf("%s: slots pass %.1f%%, want %.0f%%", p.name, 100*got, 100*p.wantSlots)
		}
		t.Logf("%s (%d episodes): slots pass %.1f%%, hashed embedding at tau %.2f passes %.1f%%",
			p.name, len(eps), 100*got, espo.DefaultRewardConfig().Tau, 100*emb.passRate(t, eps, p.text))
	}
}

// TestAnotherUsersRequirementFails, for each difficulty: the requirement of another episode of the same
// channel with other preferences is right only when it names every preference of
// this one with the same values (it may name more: a value of a slot the user has no
// preference for is not judged); that is counted and logged.
func TestAnotherUsersRequirementFails(t *testing.T) {
	for _, d := range difficulties {
		t.Run(d, func(t *testing.T) { anotherUsersRequirementFails(t, probeEpisodes(t, d)) })
	}
}

func anotherUsersRequirementFails(t *testing.T, eps []dataset.Episode) {
	j := newIntentJudge(t, espo.IntentMatchAuto, dataset.SlotVocab(eps))
	pairs, passed, supersets := 0, 0, 0
	for a := range eps {
		for b := range eps {
			A, B := &eps[a], &eps[b]
			if a == b || A.Channel != B.Channel || samePreferences(A.Preferences, B.Preferences) {
				continue
			}
			pairs++
			superset := covers(B.Preferences, A.Preferences)
			if superset {
				supersets++
			}
			right := j.right(t, A, B.Requirement)
			if right {
				passed++
			}
			if right != superset {
				t.Errorf("episode %s judged by %s's requirement %q: right %v, want %v (preferences %v and %v)",
					A.ID, B.ID, B.Requirement, right, superset, A.Preferences, B.Preferences)
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no pair of episodes")
	}
	t.Logf("another user's requirement passes %d of %d pairs (%.2f%%): the users whose preferences include all of this one's",
		passed, pairs, 100*float64(passed)/float64(pairs))
}

func samePreferences(a, b map[string]string) bool {
	return len(a) == len(b) && covers(a, b)
}

// covers reports whether super holds every preference of sub with the same value.
func covers(super, sub map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return true
}

// TestConflictingValueFails, for each difficulty: the true requirement followed by another value of one
// of the true slots is wrong, for every episode and every true slot.
func TestConflictingValueFails(t *testing.T) {
	for _, d := range difficulties {
		t.Run(d, func(t *testing.T) { conflictingValueFails(t, probeEpisodes(t, d)) })
	}
}

func conflictingValueFails(t *testing.T, eps []dataset.Episode) {
	vocab := dataset.SlotVocab(eps)
	j := newIntentJudge(t, espo.IntentMatchAuto, vocab)
	cases := 0
	for e := range eps {
		ep := &eps[e]
		for _, k := range slices.Sorted(maps.Keys(ep.Preferences)) {
			other := vocab[k][0]
			if other == ep.Preferences[k] {
				other = vocab[k][1]
			}
			text := ep.Requirement + " Or " + other + "."
			cases++
			if j.right(t, ep, text) {
				t.Errorf("episode %s: %q, with %s %q besides %q, is right", ep.ID, text, k, other, ep.Preferences[k])
			}
		}
	}
	t.Logf("%d requirements with a conflicting value, all wrong", cases)
}

// TestLongestValueIsFound, for each difficulty: where another value of a true slot contains the true
// value ("Premium economy" and "Economy", "Under $100" and "Under $10"), the values
// with the longer one in place of the true one are wrong.
func TestLongestValueIsFound(t *testing.T) {
	for _, d := range difficulties {
		t.Run(d, func(t *testing.T) { longestValueIsFound(t, probeEpisodes(t, d)) })
	}
}

func longestValueIsFound(t *testing.T, eps []dataset.Episode) {
	vocab := dataset.SlotVocab(eps)
	j := newIntentJudge(t, espo.IntentMatchAuto, vocab)
	cases := map[string]bool{}
	for e := range eps {
		ep := &eps[e]
		for k, v := range ep.Preferences {
			for _, longer := range vocab[k] {
				if longer == v || !strings.Contains(strings.ToLower(longer), strings.ToLower(v)) {
					continue
				}
				text := strings.Replace(onlyValues(ep), v, longer, 1)
				cases[v+" in "+longer] = true
				if j.right(t, ep, text) {
					t.Errorf("episode %s: %q is right, but it names %s %q, not %q", ep.ID, text, k, longer, v)
				}
			}
		}
	}
	for _, want := range []string{"Economy in Premium economy", "Under $10 in Under $100"} {
		if !cases[want] {
			t.Errorf("no episode tried %s", want)
		}
	}
	t.Logf("longest-match cases tried: %v", slices.Sorted(func(yield func(string) bool) {
		for c := range cases {
			if !yield(c) {
				return
			}
		}
	}))
}

// TestIntentAccuracyCountsRightIntentsOnly: the evaluation's IntentAcc counts an
// intent naming half the values as wrong, whatever its F1.
func TestIntentAccuracyCountsRightIntentsOnly(t *testing.T) {
	eps := probeEpisodes(t, dataset.DifficultyStandard)[:60]
	for _, tc := range []struct {
		name string
		text func(*dataset.Episode) string
		want float64
	}{
		{"the values", onlyValues, 1},
		{"the first value only", func(ep *dataset.Episode) string {
			return ep.Preferences[slices.Sorted(maps.Keys(ep.Preferences))[0]]
		}, 0},
	} {
		ev := metrics.NewEvaluator(metrics.Options{Slots: dataset.SlotVocab(eps)})
		for e := range eps {
			ep := &eps[e]
			answers := make([]string, len(ep.Steps))
			for j := range ep.Steps {
				a := ep.Steps[j].Answer.Espo()
				if ep.Steps[j].Stage == dataset.StagePool {
					a.Text = tc.text(ep)
				}
				answers[j] = espo.FormatAnswer("", a)
			}
			if err := ev.Add(ep, answers); err != nil {
				t.Fatal(err)
			}
		}
		if got := ev.Report().Micro.IntentAcc; got != tc.want {
			t.Errorf("%s: IntentAcc %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSlotVocabIsTheUnionOfPreferencesAndAttributes(t *testing.T) {
	a := dataset.Episode{Preferences: map[string]string{"cabin": "Economy"}, Steps: []dataset.Step{
		{Stage: dataset.StageRecommend, Candidate: &dataset.Item{Attrs: map[string]string{"cabin": "Business", "stops": "Nonstop"}}},
		{Stage: dataset.StageRecommend, Candidate: &dataset.Item{Attrs: map[string]string{"cabin": "Economy", "stops": ""}}},
	}}
	b := dataset.Episode{Preferences: map[string]string{"cabin": "First", "seat": "Window"}}
	got := dataset.SlotVocab([]dataset.Episode{a}, nil, []dataset.Episode{b})
	want := espo.SlotVocab{"cabin": {"Economy", "Business", "First"}, "stops": {"Nonstop"}, "seat": {"Window"}}
	if len(got) != len(want) {
		t.Fatalf("vocab %v, want %v", got, want)
	}
	for k, vs := range want {
		if !slices.Equal(got[k], vs) {
			t.Errorf("slot %s: %v, want %v", k, got[k], vs)
		}
	}
}

func TestResolveTakesTheIntentMatchAndSlotScore(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Rewards.Intent.Match, c.Spec.Rewards.Intent.SlotScore = trainingv1alpha1.IntentMatchSlots, trainingv1alpha1.IntentSlotScoreF1
	r, err := Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rewards.Match != espo.IntentMatchSlots || r.Rewards.SlotScore != espo.SlotScoreF1 {
		t.Errorf("resolved match %q, slot score %q; want slots, f1", r.Rewards.Match, r.Rewards.SlotScore)
	}
}

// writeEpisodes writes eps to root/name/a.jsonl, a configMap source's folder.
func writeEpisodes(t *testing.T, root, name string, eps []dataset.Episode) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range eps {
		if err := dataset.WriteEpisode(f, &eps[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// fileConfig returns smallConfig reading 12 generated food and hotel episodes from a
// file, the preferences deleted from those whose index drop says.
func fileConfig(t *testing.T, drop func(i int) bool) *Config {
	t.Helper()
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"food", "hotel"}, Episodes: 12, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range eps {
		if drop(i) {
			eps[i].Preferences = nil
		}
	}
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.DataRoot = t.TempDir()
	writeEpisodes(t, c.DataRoot, "plain", eps)
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "plain", ConfigMap: &trainingv1alpha1.ConfigMapSource{Name: "cm"}}}
	return c
}

// TestSlotsMatchWithoutPreferencesFailsAtStart: New refuses match slots on data with
// an episode without preferences, naming the field and the fix, with the outcome
// ConfigInvalid: the job fails at once, since a restart reads the same spec and data.
func TestSlotsMatchWithoutPreferencesFailsAtStart(t *testing.T) {
	c := fileConfig(t, func(i int) bool { return i == 5 })
	c.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchSlots
	_, err := newTrainer(c, Options{Workers: cpuGang(1)})
	if err == nil {
		t.Fatal("New accepted match slots with an episode without preferences")
	}
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeConfigInvalid {
		t.Errorf("outcome %q, want ConfigInvalid (no restart)", got)
	}
	for _, want := range []string{"spec.rewards.intent.match", "no preferences", "set spec.rewards.intent.match to auto"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	c.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchAuto
	if _, err := newTrainer(c, Options{Workers: cpuGang(1)}); err != nil {
		t.Errorf("match auto: %v", err)
	}
}

// TestRunReportsTheIntentMatch: status.training.intentMatch and report.json say
// which match judged the intents: slots for generated episodes (they carry
// preferences), embedding when asked.
func TestRunReportsTheIntentMatch(t *testing.T) {
	for name, tc := range map[string]struct {
		config func(t *testing.T) *Config
		want   string
	}{
		"auto with preferences": {func(t *testing.T) *Config { return smallConfig(t, trainingv1alpha1.AlgorithmESPO) }, "slots"},
		"embedding":             {embeddingConfig, "embedding"},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.config(t)
			rec := &recorder{}
			rep, _ := run(t, c, Options{Workers: cpuGang(1), Reporter: rec})
			last := rec.reports[len(rec.reports)-1]
			if rep.IntentMatch != tc.want || last.IntentMatch != tc.want || rep.Test == nil || rep.Test.IntentMatch != tc.want {
				t.Errorf("intent match: report %q, status %q, test evaluation %+v; want %q", rep.IntentMatch, last.IntentMatch, rep.Test, tc.want)
			}
			var onDisk struct {
				IntentMatch string `json:"intentMatch"`
				Status      struct {
					IntentMatch string `json:"intentMatch"`
				} `json:"status"`
			}
			b, err := os.ReadFile(filepath.Join(c.OutputDir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &onDisk); err != nil {
				t.Fatal(err)
			}
			if onDisk.IntentMatch != tc.want || onDisk.Status.IntentMatch != tc.want {
				t.Errorf("report.json intentMatch %q, status.intentMatch %q; want %q", onDisk.IntentMatch, onDisk.Status.IntentMatch, tc.want)
			}
		})
	}
}

// TestIntentMatchNamesBothWhenMixed: episodes with and without preferences are
// judged by slots and by embedding (built-in, or the service), each named once.
func TestIntentMatchNamesBothWhenMixed(t *testing.T) {
	half := func(i int) bool { return i%2 == 0 }
	for _, tc := range []struct {
		match trainingv1alpha1.IntentMatch
		drop  func(int) bool
		want  string
	}{
		{trainingv1alpha1.IntentMatchAuto, half, "slots+embedding"},
		{trainingv1alpha1.IntentMatchAuto, func(int) bool { return true }, "embedding"},
		{trainingv1alpha1.IntentMatchEmbedding, func(int) bool { return false }, "embedding"},
		{trainingv1alpha1.IntentMatchSlots, func(int) bool { return false }, "slots"},
	} {
		c := fileConfig(t, tc.drop)
		c.Spec.Rewards.Intent.Match = tc.match
		tr, err := newTrainer(c, Options{Workers: cpuGang(1)})
		if err != nil {
			t.Fatal(err)
		}
		all := slices.Concat(tr.Splits().Train, tr.Splits().Validation, tr.Splits().Test)
		if got := tr.intents.Match(all); got != tc.want {
			t.Errorf("match %s: intent match %q, want %q", tc.match, got, tc.want)
		}
	}
}

// TestSlotJudgedIntentsAreNotSentToTheEmbeddingService: with an embedding service
// and episodes that all carry preferences, auto judges every intent by slots, so the
// service receives nothing; with half of them, only those without preferences.
func TestSlotJudgedIntentsAreNotSentToTheEmbeddingService(t *testing.T) {
	for name, tc := range map[string]struct {
		drop func(i int) bool
		want string
	}{
		"every episode has preferences": {func(int) bool { return false }, "slots"},
		"half of them":                  {func(i int) bool { return i%2 == 0 }, "slots+embedding-service"},
	} {
		t.Run(name, func(t *testing.T) {
			svc := newEmbeddingService(t, -1)
			c := fileConfig(t, tc.drop)
			c.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Endpoint: svc.endpoint(), Model: "sentence-encoder"}
			c.Spec.Default()
			_, tr := run(t, c, Options{Workers: cpuGang(1), embeddingRetryWait: noWait})
			if got := tr.intents.Match(slices.Concat(tr.Splits().Train, tr.Splits().Validation, tr.Splits().Test)); got != tc.want {
				t.Errorf("intent match %q, want %q", got, tc.want)
			}
			withPrefs := map[string]bool{}
			for _, eps := range [][]dataset.Episode{tr.Splits().Train, tr.Splits().Validation, tr.Splits().Test} {
				for _, ep := range eps {
					if len(ep.Preferences) > 0 {
						withPrefs[ep.Requirement] = true
					}
				}
			}
			svc.mu.Lock()
			defer svc.mu.Unlock()
			for _, text := range svc.inputs {
				if withPrefs[text] {
					t.Errorf("the service was sent the requirement of an episode with preferences: %q", text)
				}
			}
			if got := len(svc.inputs) > 0; got != strings.Contains(tc.want, "embedding") {
				t.Errorf("the service received %d texts", len(svc.inputs))
			}
		})
	}
}
