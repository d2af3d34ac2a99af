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

package environment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

func newEnv(t testing.TB, opts Options) *Simulated {
	t.Helper()
	env, err := NewSimulated(opts)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func reset(t testing.TB, env *Simulated, seed uint64) Observation {
	t.Helper()
	obs, err := env.Reset(context.Background(), seed)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func step(t testing.TB, env *Simulated, answer string) (Observation, StepResult) {
	t.Helper()
	obs, res, err := env.Step(context.Background(), answer)
	if err != nil {
		t.Fatal(err)
	}
	return obs, res
}

// clickOn is the answer clicking the first element of obs's screen that ok
// accepts; it fails the test when there is none.
func clickOn(t testing.TB, obs Observation, ok func(e *dataset.Element) bool) string {
	t.Helper()
	for i := range obs.Screen.Elements {
		if e := &obs.Screen.Elements[i]; ok(e) {
			return answer(espo.ActionClick, e.Box.Center(), espo.NoText)
		}
	}
	t.Fatalf("no such element on the %s page", obs.Screen.Page)
	return ""
}

func byText(text string) func(e *dataset.Element) bool {
	return func(e *dataset.Element) bool { return e.Text == text }
}

// tally counts episodes and their judged steps.
type tally struct {
	episodes int
	Accuracy
}

func (c *tally) String() string {
	return fmt.Sprintf("RecAcc %.3f (%d decisions), intent %.3f (%d of %d episodes reached the pool)",
		c.RecAcc(), c.Decisions, c.IntentAcc(), c.Intents, c.episodes)
}

// run plays one episode of seed with p (through Run) and adds its judged steps to c.
func run(t testing.TB, env *Simulated, seed uint64, p Policy, c *tally) {
	t.Helper()
	r, err := Run(context.Background(), env, seed, "", func(_ context.Context, obs *Observation, _ *dataset.Episode) (string, error) {
		return p(env, *obs), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.episodes++
	c.Add(r)
}

func TestResetSameSeedSameStart(t *testing.T) {
	opts := Options{Difficulty: dataset.DifficultyHard, Seed: 7}
	const g = 5
	var first []Observation
	for range g {
		first = append(first, reset(t, newEnv(t, opts), 42))
	}
	env := newEnv(t, opts)
	reset(t, env, 41)
	first = append(first, reset(t, env, 42)) // a reused Env too
	for i := 1; i < len(first); i++ {
		if !reflect.DeepEqual(first[0], first[i]) {
			t.Fatalf("Reset %d with the same seed differs from Reset 0", i)
		}
	}
	if len(first[0].Screen.Elements) == 0 || first[0].Stage != dataset.StageGUI || first[0].Step != 0 {
		t.Fatalf("first observation: stage %q, step %d, %d elements", first[0].Stage, first[0].Step, len(first[0].Screen.Elements))
	}
}

func TestResetDifferentSeedsDiffer(t *testing.T) {
	env := newEnv(t, Options{Difficulty: dataset.DifficultyHard})
	n := uint64(len(dataset.Channels()))
	for s := range uint64(10) {
		a, b := reset(t, env, s), reset(t, env, s+n) // the same channel
		if a.Channel != b.Channel {
			t.Fatalf("seeds %d and %d: channels %s and %s", s, s+n, a.Channel, b.Channel)
		}
		if reflect.DeepEqual(a, b) {
			t.Errorf("seeds %d and %d give the same first observation", s, s+n)
		}
	}
	if reflect.DeepEqual(reset(t, newEnv(t, Options{Seed: 1}), 3), reset(t, newEnv(t, Options{Seed: 2}), 3)) {
		t.Error("world seeds 1 and 2 give the same episode 3")
	}
}

// trajectory plays seed with p for at most n steps and returns every
// observation and result.
func trajectory(t *testing.T, env *Simulated, seed uint64, p Policy, n int) ([]Observation, []StepResult) {
	obs := []Observation{reset(t, env, seed)}
	var results []StepResult
	for range n {
		o, res := step(t, env, p(env, obs[len(obs)-1]))
		obs, results = append(obs, o), append(results, res)
		if res.Done {
			break
		}
	}
	return obs, results
}

func TestSameSeedSameActionsSameEpisode(t *testing.T) {
	opts := Options{Difficulty: dataset.DifficultyHard, Seed: 3}
	for seed := range uint64(12) {
		o1, r1 := trajectory(t, newEnv(t, opts), seed, Random(rand.New(rand.NewPCG(seed, 1))), 40)
		o2, r2 := trajectory(t, newEnv(t, opts), seed, Random(rand.New(rand.NewPCG(seed, 1))), 40)
		if !reflect.DeepEqual(o1, o2) || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("seed %d: the same answers give different episodes", seed)
		}
		e1, _ := trajectory(t, newEnv(t, opts), seed, Expert, 60)
		e2, _ := trajectory(t, newEnv(t, opts), seed, Expert, 60)
		if !reflect.DeepEqual(e1, e2) {
			t.Fatalf("seed %d: the expert's episodes differ", seed)
		}
	}
}

// cardIDs returns the item ids of the cards on a screen.
func cardIDs(sc dataset.Screen) []string {
	var ids []string
	for _, e := range sc.Elements {
		if e.Role == "card" {
			ids = append(ids, e.Attrs["item"])
		}
	}
	return ids
}

// browseToPool browses every item, clicks the chips named (each a chip's
// text) and takes the results to the pool; it returns the results page before
// the pool and the pool's candidate ids.
func browseToPool(t *testing.T, env *Simulated, seed uint64, chips ...string) (dataset.Screen, []string) {
	obs := reset(t, env, seed)
	obs, _ = step(t, env, clickOn(t, obs, byText(textBrowse)))
	for _, c := range chips {
		obs, _ = step(t, env, clickOn(t, obs, func(e *dataset.Element) bool { return e.Role == "chip" && e.Text == c }))
	}
	resultsPage := obs.Screen
	obs, _ = step(t, env, clickOn(t, obs, byText(textPool)))
	if obs.Stage != dataset.StagePool {
		t.Fatalf("stage %s after %q, want pool", obs.Stage, textPool)
	}
	return resultsPage, cardIDs(obs.Screen)
}

func TestFilterChipChangesResultsAndPool(t *testing.T) {
	env := newEnv(t, Options{Channels: []string{"food"}, Seed: 5})
	for seed := range uint64(10) {
		reset(t, env, seed)
		u := env.st.user
		key := ""
		for _, at := range u.app.Attributes {
			if at.Reveal == dataset.RevealChip && u.prefs[at.Key] != "" && len(u.misses(at.Key)) > 0 {
				key = at.Key
				break
			}
		}
		if key == "" {
			continue
		}
		want := u.prefs[key]
		before, poolBefore := browseToPool(t, env, seed)
		after, poolAfter := browseToPool(t, env, seed, want)
		if slices.Equal(cardIDs(before), cardIDs(after)) {
			t.Errorf("seed %d: chip %s leaves the results as they were", seed, want)
		}
		if slices.Equal(poolBefore, poolAfter) {
			t.Errorf("seed %d: chip %s leaves the pool as it was", seed, want)
		}
		for _, id := range poolAfter {
			it := itemByID(u, id)
			if !fitsAll(u.app.Channel, map[string]string{key: want}, it) {
				t.Errorf("seed %d: pool item %s has %s %s, the chip is %s", seed, id, key, it.Attrs[key], want)
			}
		}
		return
	}
	t.Fatal("no episode with a chip preference")
}

// itemByID returns the catalog item with the given id.
func itemByID(u *user, id string) *dataset.Item {
	k := slices.IndexFunc(u.catalog, func(it dataset.Item) bool { return it.ID == id })
	return &u.catalog[k]
}

// savedValues goes to the saved items and returns, per card, the values its
// summary text shows (hard difficulty), in the app's attribute order.
func savedValues(t *testing.T, env *Simulated, seed uint64) [][]string {
	obs := reset(t, env, seed)
	obs, _ = step(t, env, clickOn(t, obs, byText(textProfile)))
	obs, _ = step(t, env, clickOn(t, obs, byText(textSaved)))
	var out [][]string
	for _, e := range obs.Screen.Elements {
		if e.Role == "card" {
			out = append(out, strings.Split(e.Text, " · ")[1:])
		}
	}
	return out
}

// TestSavedItemsRevealPreferences checks that the evidence is enough: the
// attributes on which the saved items, read off the screen, all agree are
// exactly the user's preferences, with their values.
func TestSavedItemsRevealPreferences(t *testing.T) {
	for _, ch := range dataset.Channels() {
		env := newEnv(t, Options{Channels: []string{ch}, Difficulty: dataset.DifficultyHard})
		for seed := range uint64(30) {
			cards := savedValues(t, env, seed)
			u := env.st.user
			shared := map[string]string{}
			for j, at := range u.app.Attributes {
				same := true
				for _, c := range cards {
					same = same && c[j] == cards[0][j]
				}
				if same {
					shared[at.Key] = cards[0][j]
				}
			}
			if len(cards) != savedItems || !maps.Equal(shared, u.prefs) {
				t.Fatalf("%s seed %d: %d saved cards share %v, preferences %v", ch, seed, len(cards), shared, u.prefs)
			}
		}
	}
}

func TestMisuseAndBadAnswers(t *testing.T) {
	ctx := context.Background()
	env := newEnv(t, Options{MaxSteps: 5})
	if _, _, err := env.Step(ctx, env.Expert()); !errors.Is(err, ErrNotReset) {
		t.Fatalf("Step before Reset: %v, want ErrNotReset", err)
	}
	first := reset(t, env, 1)
	obs, res := step(t, env, "click somewhere")
	if res.ParseErr == nil || res.Done || !reflect.DeepEqual(obs.Screen, first.Screen) || obs.Step != 1 {
		t.Fatalf("malformed answer: parse error %v, done %v, step %d, screen changed %v", res.ParseErr, res.Done, obs.Step, !reflect.DeepEqual(obs.Screen, first.Screen))
	}
	if res.Reference.Action != espo.ActionClick || res.GroundTruth.Stage != espo.StageGUI {
		t.Fatalf("reference %+v at the first step, want the expert's click", res.Reference)
	}
	for !res.Done {
		_, res = step(t, env, answer(espo.ActionScroll, espo.NoPoint, "down"))
	}
	if _, _, err := env.Step(ctx, env.Expert()); !errors.Is(err, ErrDone) || env.Expert() != "" {
		t.Fatalf("Step after the cap: %v, want ErrDone", err)
	}
	reset(t, env, 1)
	if _, res = step(t, env, answer(espo.ActionExit, espo.NoPoint, espo.NoText)); !res.Done {
		t.Fatal("exit does not end the episode")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := env.Reset(cancelled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reset with a cancelled context: %v", err)
	}
}

// TestExpertRecoversFromAnyState checks that the expert is a function of the
// state: after a random prefix of answers it still finishes the episode, with
// every judged step of its own right.
func TestExpertRecoversFromAnyState(t *testing.T) {
	env := newEnv(t, Options{Difficulty: dataset.DifficultyHard, MaxSteps: 100})
	for seed := range uint64(60) {
		random := Random(rand.New(rand.NewPCG(seed, 2)))
		obs := reset(t, env, seed)
		var res StepResult
		for range int(seed % 20) {
			if obs, res = step(t, env, random(env, obs)); res.Done {
				break
			}
		}
		for !res.Done {
			if obs, res = step(t, env, env.Expert()); res.Judged && !res.Right {
				t.Fatalf("seed %d: the expert is wrong at step %d (%s)", seed, obs.Step-1, res.Reference.Action)
			}
		}
		if obs.Step >= 100 {
			t.Errorf("seed %d: the expert hit the step cap", seed)
		}
	}
}

// TestOpenedItemsShowAsRecentlyViewed: once the agent opened a saved item, the home
// and profile pages show it under "Recently viewed" and the saved page marks it, so
// that the pages an agent passes twice say which visit it is.
func TestOpenedItemsShowAsRecentlyViewed(t *testing.T) {
	env := newEnv(t, Options{Difficulty: dataset.DifficultyStandard, Seed: 4})
	obs := reset(t, env, 1)
	has := func(sc dataset.Screen, text string) bool {
		for _, e := range sc.Elements {
			if strings.Contains(e.Text, text) {
				return true
			}
		}
		return false
	}
	if has(obs.Screen, textRecentlyViewed) {
		t.Fatal("the home page shows a recently viewed item before any was opened")
	}
	pages := map[string]dataset.Screen{}
	for range 20 { // profile, saved, each saved card and back to saved, profile, home
		obs, _ = step(t, env, env.Expert())
		pages[obs.Screen.Page] = obs.Screen
		if obs.Screen.Page == pageHome {
			break
		}
	}
	if !has(pages[pageHome], textRecentlyViewed) || !has(pages[pageProfile], textRecentlyViewed) {
		t.Errorf("after opening a saved item, home shows recently viewed: %v, profile: %v",
			has(pages[pageHome], textRecentlyViewed), has(pages[pageProfile], textRecentlyViewed))
	}
	if !has(pages[pageSaved], " · "+textViewed) {
		t.Error("the saved page does not mark the item opened")
	}
}
