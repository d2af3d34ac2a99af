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
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// The make-up of an episode's catalog: items that fit every preference of the
// user, near misses (fit all but one preference) and unrelated items, shuffled.
// The unfiltered list is thus about half fits, so that a decision without
// evidence of the preferences is close to a coin toss.
const (
	fitItems   = 10
	missItems  = 10
	otherItems = 3
	// savedItems is the number of items the user has saved: each fits every
	// preference exactly, and no other attribute has one value on all of them.
	savedItems = 3
	// returnedOrders is the number of past orders the user returned, each
	// missing one preference; one more order, kept, fits.
	returnedOrders = 2
)

// envStream is the stream of the environment's own PCG for an episode seed,
// apart from the generator's streams (episode indices, or-ed with 1<<63 on hard
// data).
const envStream = 1<<62 | 0x5eed

// user is the hidden state of an episode: the simulated user the generator draws
// for the seed (instruction, requirement, preferences, number of candidates) and
// the catalog, saved items and past orders the environment builds around them.
type user struct {
	app         *dataset.App
	hard        bool
	instruction string
	requirement string
	prefs       map[string]string
	// recommend is how many candidates the pool holds (the generator's number
	// of recommend steps for the episode).
	recommend int
	catalog   []dataset.Item
	saved     []dataset.Item
	orders    []order
	// names and next hand out item names and ids.
	names []string
	next  int
}

// order is a past order: the item and whether it was kept.
type order struct {
	item dataset.Item
	kept bool
}

// newUser draws the hidden user of episode seed in channel: the generator's
// episode for that seed gives the instruction, the requirement, the preferences
// and the number of candidates; the environment's own PCG stream of the seed
// draws the items.
func newUser(a *dataset.App, seed uint64, hard bool) (*user, error) {
	difficulty := dataset.DifficultyStandard
	if hard {
		difficulty = dataset.DifficultyHard
	}
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{a.Channel}, Episodes: 1, Seed: seed, Difficulty: difficulty})
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	ep := &eps[0]
	u := &user{app: a, hard: hard, instruction: ep.Instruction, requirement: ep.Requirement, prefs: ep.Preferences}
	for j := range ep.Steps {
		if ep.Steps[j].Stage == dataset.StageRecommend {
			u.recommend++
		}
	}
	rng := rand.New(rand.NewPCG(seed, envStream))
	u.names = slices.Clone(a.ItemNames)
	rng.Shuffle(len(u.names), func(i, j int) { u.names[i], u.names[j] = u.names[j], u.names[i] })
	u.drawCatalog(rng)
	u.drawHistory(rng)
	return u, nil
}

// fits reports whether it fits every preference of the user, by the generator's
// fit rule (dataset.OracleDecision).
func (u *user) fits(it *dataset.Item) bool { return fitsAll(u.app.Channel, u.prefs, it) }

// fitsAll reports whether it fits every wanted value, by the generator's fit
// rule: equal, or for an ordered attribute the value or a better one.
func fitsAll(channel string, want map[string]string, it *dataset.Item) bool {
	ep := dataset.Episode{Channel: channel, Preferences: want}
	return dataset.OracleDecision(&ep, &dataset.Step{Candidate: it}) == dataset.Yes
}

// newItem is an item with a fresh name and id and random values.
func (u *user) newItem(rng *rand.Rand) dataset.Item {
	name := u.names[u.next%len(u.names)]
	if u.next >= len(u.names) {
		name += " " + strconv.Itoa(u.next/len(u.names)+1)
	}
	u.next++
	it := dataset.Item{
		ID:    fmt.Sprintf("%s-%d", u.app.Channel, u.next),
		Name:  name,
		Attrs: map[string]string{"reviews": strconv.Itoa(20 + rng.IntN(5000))},
	}
	for _, at := range u.app.Attributes {
		it.Attrs[at.Key] = pick(rng, at.Values)
	}
	return it
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// fitItem is an item that fits every preference; exact: with the preferred
// values themselves (else an ordered attribute may take a better value).
func (u *user) fitItem(rng *rand.Rand, exact bool) dataset.Item {
	it := u.newItem(rng)
	for _, at := range u.app.Attributes {
		want, ok := u.prefs[at.Key]
		if !ok {
			continue
		}
		it.Attrs[at.Key] = want
		if !exact {
			if v := pick(rng, at.Values); fitsAll(u.app.Channel, map[string]string{at.Key: want}, &dataset.Item{Attrs: map[string]string{at.Key: v}}) {
				it.Attrs[at.Key] = v
			}
		}
	}
	return it
}

// missItem is an item that fits every preference but the one of key, which it
// misses.
func (u *user) missItem(rng *rand.Rand, key string) dataset.Item {
	it := u.fitItem(rng, false)
	it.Attrs[key] = pick(rng, u.misses(key))
	return it
}

// misses returns the values of attribute key that do not fit the preference.
func (u *user) misses(key string) []string {
	var out []string
	for _, v := range attrOf(u.app, key).Values {
		if !fitsAll(u.app.Channel, map[string]string{key: u.prefs[key]}, &dataset.Item{Attrs: map[string]string{key: v}}) {
			out = append(out, v)
		}
	}
	return out
}

// missable returns the preferences (keys, in the app's order) that a near miss
// may miss: on hard data those the instruction does not name, when there are
// any (the near misses then look right to a policy reading the instruction
// alone); else all those with a value that misses.
func (u *user) missable() []string {
	var all, hidden []string
	for _, at := range u.app.Attributes {
		if _, ok := u.prefs[at.Key]; !ok || len(u.misses(at.Key)) == 0 {
			continue
		}
		all = append(all, at.Key)
		if !dataset.ContainsValue(u.instruction, u.prefs[at.Key]) {
			hidden = append(hidden, at.Key)
		}
	}
	if u.hard && len(hidden) > 0 {
		return hidden
	}
	return all
}

// drawCatalog draws the episode's items, shuffled.
func (u *user) drawCatalog(rng *rand.Rand) {
	keys := u.missable()
	for range fitItems {
		u.catalog = append(u.catalog, u.fitItem(rng, false))
	}
	for range missItems {
		u.catalog = append(u.catalog, u.missItem(rng, pick(rng, keys)))
	}
	for range otherItems {
		u.catalog = append(u.catalog, u.newItem(rng))
	}
	rng.Shuffle(len(u.catalog), func(i, j int) { u.catalog[i], u.catalog[j] = u.catalog[j], u.catalog[i] })
}

// drawHistory draws the saved items (exact fits, which agree on an attribute
// exactly when it is a preference) and the past orders (returned near misses
// and one kept fit).
func (u *user) drawHistory(rng *rand.Rand) {
	for range savedItems {
		u.saved = append(u.saved, u.fitItem(rng, true))
	}
	for _, at := range u.app.Attributes {
		if _, ok := u.prefs[at.Key]; ok {
			continue
		}
		for allSame(u.saved, at.Key) {
			u.saved[rng.IntN(savedItems)].Attrs[at.Key] = pick(rng, at.Values)
		}
	}
	keys := u.missable()
	for range returnedOrders {
		u.orders = append(u.orders, order{item: u.missItem(rng, pick(rng, keys))})
	}
	u.orders = append(u.orders, order{item: u.fitItem(rng, false), kept: true})
	rng.Shuffle(len(u.orders), func(i, j int) { u.orders[i], u.orders[j] = u.orders[j], u.orders[i] })
}

// allSame reports whether every item has the same value of key.
func allSame(items []dataset.Item, key string) bool {
	for i := range items {
		if items[i].Attrs[key] != items[0].Attrs[key] {
			return false
		}
	}
	return true
}
