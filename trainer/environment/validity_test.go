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
	"math/rand/v2"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// validityEpisodes is the number of hard episodes per channel of the validity
// checks.
const validityEpisodes = 200

// genericIntent is what a policy without evidence says the user wants.
const genericIntent = "I want a good option that suits me well."

// neverExplore is the policy that never looks for evidence: it browses every
// item, takes the list to the pool at once, states a generic intent and decides
// each candidate from its card alone: No when the card has another value of an
// attribute whose value the instruction names, else Yes.
func neverExplore(t testing.TB) policy {
	return func(env *Simulated, obs Observation) string {
		switch obs.Stage {
		case dataset.StagePool:
			return answer(espo.ActionPoolFound, espo.NoPoint, genericIntent)
		case dataset.StageRecommend:
			return answer(espo.ActionRecommendation, espo.NoPoint, cardDecision(env.Vocab(), obs.Instruction, obs.Candidate))
		}
		if obs.Screen.Page == pageHome {
			return clickOn(t, obs, byText(textBrowse))
		}
		return clickOn(t, obs, byText(textPool))
	}
}

// cardDecision decides on an item from its attributes and the instruction.
func cardDecision(vocab espo.SlotVocab, instruction string, it *dataset.Item) string {
	for k, have := range it.Attrs {
		named, agrees := false, false
		for _, v := range vocab[k] {
			if dataset.ContainsValue(instruction, v) {
				named = true
				agrees = agrees || v == have
			}
		}
		if named && !agrees {
			return dataset.No
		}
	}
	return dataset.Yes
}

// templateIntent is the expert with the pool step's intent replaced by the
// requirement with every preference value deleted (dataset.TemplateOnly).
func templateIntent(env *Simulated, obs Observation) string {
	if obs.Stage != dataset.StagePool {
		return env.Expert()
	}
	u := env.st.user
	return answer(espo.ActionPoolFound, espo.NoPoint, dataset.TemplateOnly(u.requirement, u.prefs))
}

// measure plays validityEpisodes hard episodes of every channel with p.
func measure(t *testing.T, p policy) map[string]*tally {
	out := map[string]*tally{}
	for _, ch := range dataset.Channels() {
		env := newEnv(t, Options{Channels: []string{ch}, Difficulty: dataset.DifficultyHard, Seed: 11})
		c := &tally{}
		for seed := range uint64(validityEpisodes) {
			run(t, env, seed, p, c)
		}
		out[ch] = c
	}
	return out
}

// check logs each channel's figures and their total, and reports the total
// (and, with perChannel, a channel) where ok fails.
func check(t *testing.T, name string, got map[string]*tally, perChannel bool, ok func(c *tally) bool, want string) {
	var all tally
	for _, ch := range dataset.Channels() {
		c := got[ch]
		t.Logf("%s, %s: %s", name, ch, c)
		if perChannel && !ok(c) {
			t.Errorf("%s, %s: %s; want %s", name, ch, c, want)
		}
		all.episodes += c.episodes
		all.Intents, all.RightIntents = all.Intents+c.Intents, all.RightIntents+c.RightIntents
		all.Decisions, all.RightDecisions = all.Decisions+c.Decisions, all.RightDecisions+c.RightDecisions
	}
	t.Logf("%s, all channels: %s", name, &all)
	if !ok(&all) {
		t.Errorf("%s, all channels: %s; want %s", name, &all, want)
	}
}

// TestValidity is the reason the environment exists: on hard episodes of every
// channel, the expert that explores scores a high RecAcc and states the intent
// right (on every channel); over all channels, a policy that never explores does
// not do much better than a coin, a random policy fails, and the template of the
// requirement, values deleted, does not pass as the intent.
func TestValidity(t *testing.T) {
	if testing.Short() {
		t.Skip("plays thousands of episodes")
	}
	check(t, "expert", measure(t, expertPolicy), true, func(c *tally) bool {
		return c.Intents == c.episodes && c.RecAcc() >= 0.95 && c.IntentAcc() >= 0.95
	}, "every episode at the pool, RecAcc and intent >= 0.95")
	check(t, "never explores", measure(t, neverExplore(t)), false, func(c *tally) bool {
		return c.Intents == c.episodes && c.RecAcc() <= 0.60 && c.IntentAcc() <= 0.05
	}, "RecAcc <= 0.60, intent <= 0.05")
	rng := rand.New(rand.NewPCG(11, 12))
	check(t, "random", measure(t, randomPolicy(rng)), false, func(c *tally) bool {
		return c.Decisions > 0 && c.RecAcc() <= 0.65 && c.IntentAcc() <= 0.02
	}, "RecAcc <= 0.65, intent <= 0.02")
	check(t, "template-only intent", measure(t, templateIntent), false, func(c *tally) bool {
		return c.Intents == c.episodes && c.IntentAcc() <= 0.05
	}, "intent <= 0.05")
}
