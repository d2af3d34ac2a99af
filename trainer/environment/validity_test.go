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

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// validityEpisodes is the number of hard episodes per channel of the validity
// checks.
const validityEpisodes = 200

// measure plays validityEpisodes hard episodes of every channel with p.
func measure(t *testing.T, p Policy) map[string]*tally {
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
	check(t, "expert", measure(t, Expert), true, func(c *tally) bool {
		return c.Intents == c.episodes && c.RecAcc() >= 0.95 && c.IntentAcc() >= 0.95
	}, "every episode at the pool, RecAcc and intent >= 0.95")
	check(t, "never explores", measure(t, NeverExplore), false, func(c *tally) bool {
		return c.Intents == c.episodes && c.RecAcc() <= 0.60 && c.IntentAcc() <= 0.05
	}, "RecAcc <= 0.60, intent <= 0.05")
	rng := rand.New(rand.NewPCG(11, 12))
	check(t, "random", measure(t, Random(rng)), false, func(c *tally) bool {
		return c.Decisions > 0 && c.RecAcc() <= 0.65 && c.IntentAcc() <= 0.02
	}, "RecAcc <= 0.65, intent <= 0.02")
	check(t, "template-only intent", measure(t, TemplateIntent), false, func(c *tally) bool {
		return c.Intents == c.episodes && c.IntentAcc() <= 0.05
	}, "intent <= 0.05")
}
