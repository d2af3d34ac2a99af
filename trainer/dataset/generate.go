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
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
)

// GenerateOptions says what to generate.
type GenerateOptions struct {
	// Channels are the channels to draw from (Channels() when empty); episode i
	// belongs to Channels[i % len(Channels)].
	Channels []string
	// Episodes is the number of episodes in all.
	Episodes int
	// Seed fixes the output: the same options give byte-identical files.
	Seed uint64
	// Difficulty is DifficultyStandard (the default, also when empty) or
	// DifficultyHard; see hard.go and docs/dataset-format.md.
	Difficulty string
}

// The difficulties of generated data, the values of GenerateOptions.Difficulty.
const (
	// DifficultyStandard reveals every preference by the search, a filter chip or
	// an option page, and labels a candidate Yes exactly when it fits them all.
	DifficultyStandard = "standard"
	// DifficultyHard reveals about half of the preferences by behaviour only,
	// changes early choices, flips a few labels, makes negatives that miss only a
	// behaviour-revealed preference and paraphrases pages and requirements.
	DifficultyHard = "hard"
)

// hard reports whether o asks for hard data; it fails on an unknown difficulty.
func (o *GenerateOptions) hard() (bool, error) {
	switch o.Difficulty {
	case "", DifficultyStandard:
		return false, nil
	case DifficultyHard:
		return true, nil
	}
	return false, fmt.Errorf("dataset: generate: unknown difficulty %q, want %s or %s", o.Difficulty, DifficultyStandard, DifficultyHard)
}

func (o *GenerateOptions) specs() ([]*channelSpec, error) {
	if o.Episodes < 0 {
		return nil, fmt.Errorf("dataset: generate: %d episodes", o.Episodes)
	}
	names := o.Channels
	if len(names) == 0 {
		names = Channels()
	}
	specs := make([]*channelSpec, len(names))
	for i, n := range names {
		if specs[i] = channelByName(n); specs[i] == nil {
			return nil, fmt.Errorf("dataset: generate: unknown channel %q, want one of %s", n, strings.Join(Channels(), ", "))
		}
	}
	return specs, nil
}

// GenerateEach generates the episodes one at a time, in order, and passes each to
// fn; an error from fn stops it. Episode i is drawn from its own random stream
// (PCG seeded with Seed and i), so it does not depend on the others.
func GenerateEach(o GenerateOptions, fn func(Episode) error) error {
	specs, err := o.specs()
	if err != nil {
		return err
	}
	hard, err := o.hard()
	if err != nil {
		return err
	}
	for i := range o.Episodes {
		ep := generateEpisode(specs[i%len(specs)], o.Seed, i, hard)
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

// Generate returns the episodes GenerateEach generates.
func Generate(o GenerateOptions) ([]Episode, error) {
	return collect(func(fn func(Episode) error) error { return GenerateEach(o, fn) })
}

// Write generates the episodes as JSONL to w.
func Write(w io.Writer, o GenerateOptions) error {
	bw := bufio.NewWriter(w)
	if err := GenerateEach(o, func(ep Episode) error { return WriteEpisode(bw, &ep) }); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteEpisode writes ep as one JSONL line: its JSON (fields in the order of the
// types, map keys sorted) and a newline.
func WriteEpisode(w io.Writer, ep *Episode) error {
	b, err := json.Marshal(ep)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// pref is one latent preference of a simulated user.
type pref struct {
	d *dim
	v string
}

// fits reports whether an item's value v of dimension d satisfies a preference p.
func (d *dim) fits(want, v string) bool {
	if !d.atLeast {
		return v == want
	}
	return slices.Index(d.values, v) >= slices.Index(d.values, want)
}

// builder builds one episode.
type builder struct {
	c     *channelSpec
	rng   *rand.Rand
	ep    Episode
	prefs []pref
	st    resultsState
	pool  []Item // shown on the results page while browsing
	items int    // items made so far, for ids
	names map[string]bool
	// hard is the state of a hard episode; nil for a standard one.
	hard *hardState
}

// generateEpisode draws episode i of a channel: a user with latent preferences,
// the GUI steps that reveal them among noise, the pool step, and one recommend step
// per candidate labelled by fit. A hard episode (hard.go) is drawn from its own
// random stream, so standard episodes do not change with it.
func generateEpisode(c *channelSpec, seed uint64, i int, hard bool) Episode {
	return buildEpisode(c, seed, i, hard).ep
}

// buildEpisode draws episode i of a channel and returns its builder, whose state
// (the preferences and, on hard data, how each is revealed) tests read.
func buildEpisode(c *channelSpec, seed uint64, i int, hard bool) *builder {
	stream, id := uint64(i), fmt.Sprintf("%s-s%d-%06d", c.name, seed, i)
	if hard {
		stream, id = stream|hardStream, fmt.Sprintf("%s-hard-s%d-%06d", c.name, seed, i)
	}
	b := &builder{c: c, rng: rand.New(rand.NewPCG(seed, stream)), names: map[string]bool{}}
	b.ep = Episode{
		Format:   FormatVersion,
		ID:       id,
		Channel:  c.name,
		Viewport: Viewport,
	}
	nGUI := b.count(c.guiMean, c.guiSpread)
	if hard {
		b.hardEpisode(nGUI)
		return b
	}
	b.choosePrefs(nGUI)
	b.ep.Preferences = b.preferences()
	b.ep.Instruction = b.instruction()
	b.ep.Requirement = b.requirement()
	b.guiSteps(nGUI)
	b.poolAndRecommend()
	return b
}

// preferences returns the user's preferences as the episode records them.
func (b *builder) preferences() map[string]string {
	m := make(map[string]string, len(b.prefs))
	for _, p := range b.prefs {
		m[p.d.key] = p.v
	}
	return m
}

// count draws floor(mean) + Bernoulli(frac(mean)) + U{-spread..spread}.
func (b *builder) count(mean float64, spread int) int {
	n := int(math.Floor(mean))
	if b.rng.Float64() < mean-math.Floor(mean) {
		n++
	}
	return n + b.rng.IntN(2*spread+1) - spread
}

// cost is the number of GUI steps that reveal a preference.
func (p pref) cost() int {
	switch p.d.reveal {
	case byPage:
		return 2
	case byFilter:
		return 1
	}
	return 0
}

// searchSteps is the number of GUI steps of the search: tap the box, type, search.
const searchSteps = 3

// choosePrefs draws the user's preferences: the query and prefMin..prefMax others,
// as many as the nGUI steps can reveal.
func (b *builder) choosePrefs(nGUI int) {
	c := b.c
	b.prefs = []pref{{&c.dims[0], pick(b.rng, c.dims[0].values)}}
	others := b.rng.Perm(len(c.dims) - 1)
	k := c.prefMin + b.rng.IntN(c.prefMax-c.prefMin+1)
	budget := nGUI - searchSteps
	for _, j := range others {
		if len(b.prefs)-1 == k {
			break
		}
		p := pref{d: &c.dims[j+1]}
		if p.cost() > budget {
			continue
		}
		budget -= p.cost()
		p.v = pick(b.rng, p.d.values)
		if p.d.atLeast && p.v == p.d.values[len(p.d.values)-1] && b.rng.IntN(2) == 0 {
			p.v = p.d.values[len(p.d.values)-2] // leave room above the minimum now and then
		}
		b.prefs = append(b.prefs, p)
	}
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// phrase states preference p in words.
func (p pref) phrase(rng *rand.Rand) string {
	v := p.v
	if p.d.lower {
		v = strings.ToLower(v)
	}
	return fmt.Sprintf(pick(rng, p.d.phrases), v)
}

func (b *builder) instruction() string {
	var with, without []string
	for _, t := range b.c.instructions {
		if strings.Contains(t, "%s") {
			with = append(with, t)
		} else {
			without = append(without, t)
		}
	}
	if len(without) == 0 || b.rng.Float64() < b.c.revealQuery {
		v := b.prefs[0].v
		if b.prefs[0].d.lower {
			v = strings.ToLower(v)
		}
		return fmt.Sprintf(pick(b.rng, with), v)
	}
	return pick(b.rng, without)
}

// requirement states every preference: a lead sentence, the preferences in one
// sentence, and a closing sentence when it is short (always under 19 words).
func (b *builder) requirement() string {
	parts := make([]string, len(b.prefs))
	for i, p := range b.prefs {
		parts[i] = p.phrase(b.rng)
	}
	body := strings.Join(parts[:len(parts)-1], ", ")
	if len(parts) > 1 {
		body += ", and " + parts[len(parts)-1]
	} else {
		body = parts[0]
	}
	r := pick(b.rng, b.c.leads) + " " + strings.ToUpper(body[:1]) + body[1:] + "."
	if len(strings.Fields(r)) < 19 || b.rng.IntN(2) == 0 {
		r += " " + pick(b.rng, closings)
	}
	return r
}

// newItem makes an item of the channel with random attributes.
func (b *builder) newItem() Item {
	b.items++
	it := Item{
		ID:    fmt.Sprintf("%s-item-%d", b.c.name, b.items),
		Attrs: map[string]string{"reviews": strconv.Itoa(20 + b.rng.IntN(5000))},
	}
	for range 20 { // a name not used yet in the episode, almost surely
		it.Name = pick(b.rng, b.c.nameA) + " " + pick(b.rng, b.c.nameB)
		if !b.names[it.Name] {
			break
		}
	}
	b.names[it.Name] = true
	for _, d := range b.c.dims {
		it.Attrs[d.key] = pick(b.rng, d.values)
	}
	return it
}

// candidate makes a candidate item that fits every preference (yes) or misses one
// or two of them.
func (b *builder) candidate(yes bool) Item {
	it := b.newItem()
	for _, p := range b.prefs {
		it.Attrs[p.d.key] = p.v
		if p.d.atLeast && b.rng.IntN(4) == 0 { // a better value fits too
			k := slices.Index(p.d.values, p.v)
			it.Attrs[p.d.key] = p.d.values[k+b.rng.IntN(len(p.d.values)-k)]
		}
	}
	if yes {
		return it
	}
	misses := 1
	if len(b.prefs) > 2 && b.rng.IntN(10) < 3 {
		misses = 2
	}
	for _, j := range b.rng.Perm(len(b.prefs))[:misses] {
		p := b.prefs[j]
		wrong := p.misses()
		if len(wrong) == 0 { // the lowest minimum: every value fits; miss another
			wrong = nil
			p = b.prefs[0]
			for _, v := range p.d.values {
				if v != p.v {
					wrong = append(wrong, v)
				}
			}
		}
		it.Attrs[p.d.key] = pick(b.rng, wrong)
	}
	return it
}

// misses returns the values of p's dimension that do not fit p, in order.
func (p pref) misses() []string {
	var wrong []string
	for _, v := range p.d.values {
		if !p.d.fits(p.v, v) {
			wrong = append(wrong, v)
		}
	}
	return wrong
}

// fitsAll reports whether an item fits every preference.
func (b *builder) fitsAll(it *Item) bool {
	for _, p := range b.prefs {
		if !p.d.fits(p.v, it.Attrs[p.d.key]) {
			return false
		}
	}
	return true
}

// step appends a GUI step with the given screen and answer.
func (b *builder) step(stage Stage, sc Screen, a Answer) {
	b.ep.Steps = append(b.ep.Steps, Step{Index: len(b.ep.Steps), Stage: stage, Screen: sc, Answer: a})
}

// click appends a click on element id of sc, at a point drawn in the middle half of
// its box.
func (b *builder) click(sc Screen, id string) {
	e := sc.element(id)
	box := e.Box
	var p [2]float64
	for k := range 2 {
		lo, hi := int(math.Round(box[k]*1000)), int(math.Round(box[k+2]*1000))
		q := (hi - lo) / 4
		p[k] = float64(lo+q+b.rng.IntN(hi-lo-2*q+1)) / 1000
	}
	b.step(StageGUI, sc, Answer{Action: espo.ActionClick, Point: p, InputText: espo.NoText, Target: id, Box: &box})
}

func (b *builder) results() Screen { return resultsScreen(b.c, &b.st) }

// guiSteps appends nGUI GUI steps: the search, then the steps revealing the
// preferences and noise (scrolling, browsing an item and going back, a filter
// clicked and cleared, a change of sort order), shuffled.
func (b *builder) guiSteps(nGUI int) {
	b.search()
	units := make([]func(), 0, nGUI)
	left := nGUI - searchSteps
	for _, p := range b.prefs[1:] {
		units = append(units, func() { b.revealPref(p) })
		left -= p.cost()
	}
	units = b.addNoise(units, left)
	b.rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	for _, u := range units {
		u()
	}
}

// addNoise appends noise units of 1 or 2 steps, left steps in all.
func (b *builder) addNoise(units []func(), left int) []func() {
	for left > 0 {
		n := 1
		if left > 1 {
			n = 1 + b.rng.IntN(2)
		}
		units = append(units, b.noise(n))
		left -= n
	}
	return units
}

// search appends the searchSteps steps of the search (tap the box on the home
// page, type the query, tap Search) and opens the results page on a pool of 8
// items.
func (b *builder) search() {
	c := b.c
	q := b.prefs[0].v
	for range 8 {
		b.pool = append(b.pool, b.poolItem())
	}
	home := homeScreen(c, b.pool[:4], b.hard != nil)
	b.click(home, home.find("search_box", SearchPlaceholder(c.noun)))
	sugg := slices.Clone(c.dims[0].values)
	b.rng.Shuffle(len(sugg), func(i, j int) { sugg[i], sugg[j] = sugg[j], sugg[i] })
	sugg = sugg[:4]
	search := searchScreen(c, "", sugg)
	b.step(StageGUI, search, Answer{Action: espo.ActionType, Point: espo.NoPoint, InputText: q, Target: search.find("search_box", SearchPlaceholder(c.noun))})
	search = searchScreen(c, q, sugg)
	b.click(search, search.find("button", "Search"))

	b.st = resultsState{query: q, selected: map[string]string{}, chosen: map[string]string{}, sort: c.sorts[0], items: b.pool, summaries: b.hard != nil}
}

// revealPref appends the steps that reveal preference p: a click on its chip, or
// a click on its page's opener and one on its value.
func (b *builder) revealPref(p pref) {
	res := b.results()
	switch p.d.reveal {
	case byFilter:
		b.click(res, res.find("chip", p.v))
		b.st.selected[p.d.key] = p.v
	case byPage:
		b.openOption(res, p.d, p.v)
	}
}

// openOption clicks the opener of dimension d on the results page and then the
// value v on its page.
func (b *builder) openOption(res Screen, d *dim, v string) {
	opener := d.label
	if cur := b.st.chosen[d.key]; cur != "" {
		opener += ": " + cur
	}
	b.click(res, res.find("button", opener))
	opt := optionsScreen(d.label, d.values, b.st.chosen[d.key])
	b.click(opt, opt.find("option", v))
	b.st.chosen[d.key] = v
}

// noise returns a unit of n (1 or 2) steps that reveal no preference.
func (b *builder) noise(n int) func() {
	if n == 1 {
		return b.scroll
	}
	return pick(b.rng, []func(){b.browseUnit, b.toggle, b.sort})
}

// browseUnit browses an item: at random (browse) on standard data, one that
// looks like a fit (browseFit) on hard data.
func (b *builder) browseUnit() {
	if b.hard != nil {
		b.browseFit()
		return
	}
	b.browse()
}

// scroll scrolls the result list down (or back up), showing other items.
func (b *builder) scroll() {
	dir := "down"
	if b.st.items[0].ID != b.pool[0].ID && b.rng.IntN(2) == 0 {
		dir = "up"
	}
	b.scrollBy(dir)
}

// scrollBy scrolls the result list by two items in direction dir (down or up).
func (b *builder) scrollBy(dir string) {
	b.step(StageGUI, b.results(), Answer{Action: espo.ActionScroll, Point: espo.NoPoint, InputText: dir})
	if dir == "down" {
		b.st.items = append(b.st.items[2:], b.st.items[:2]...)
	} else {
		b.st.items = append(b.st.items[len(b.st.items)-2:], b.st.items[:len(b.st.items)-2]...)
	}
	b.st.items = slices.Clone(b.st.items)
}

// browse opens an item in view and goes back.
func (b *builder) browse() {
	res := b.results()
	var cards []string
	for _, e := range res.Elements {
		if e.Role == "card" {
			cards = append(cards, e.ID)
		}
	}
	id := pick(b.rng, cards)
	b.click(res, id)
	item := res.element(id).Attrs["item"]
	k := slices.IndexFunc(b.pool, func(it Item) bool { return it.ID == item })
	det := detailScreen(b.c, &b.pool[k])
	b.click(det, det.find("button", "Back"))
}

// toggle clicks a filter chip that is no preference of the user, then clicks it
// again to clear it: a distractor the history shows and takes back. With every
// filter set already it browses instead.
func (b *builder) toggle() {
	var chips []pref
	for i := range b.c.dims {
		d := &b.c.dims[i]
		if d.reveal != byFilter || b.st.selected[d.key] != "" {
			continue
		}
		for _, v := range d.values {
			if b.ep.Preferences[d.key] != v {
				chips = append(chips, pref{d, v})
			}
		}
	}
	if len(chips) == 0 { // every filter is set: browse instead
		b.browseUnit()
		return
	}
	p := pick(b.rng, chips)
	res := b.results()
	b.click(res, res.find("chip", p.v))
	b.st.selected[p.d.key] = p.v
	res = b.results()
	b.click(res, res.find("chip", p.v))
	delete(b.st.selected, p.d.key)
}

// sort opens the sort page and picks another order.
func (b *builder) sort() {
	res := b.results()
	b.click(res, res.find("button", "Sort: "+b.st.sort))
	opt := optionsScreen("Sort", b.c.sorts, b.st.sort)
	var other []string
	for _, s := range b.c.sorts {
		if s != b.st.sort {
			other = append(other, s)
		}
	}
	b.st.sort = pick(b.rng, other)
	b.click(opt, opt.find("option", b.st.sort))
}

// poolAndRecommend appends the pool step (the result list scrolled to the
// candidates, answered with the requirement) and one recommend step per
// candidate (its detail page, answered Yes when it fits every preference).
func (b *builder) poolAndRecommend() {
	yes := b.drawFits()
	n := len(yes)
	cands := make([]Item, n)
	for i := range cands {
		cands[i] = b.candidate(yes[i])
	}
	b.step(StagePool, poolScreen(b.c, cands, false), Answer{Action: espo.ActionPoolFound, Point: espo.NoPoint, InputText: b.ep.Requirement})
	for i := range cands {
		label := No
		if b.fitsAll(&cands[i]) {
			label = Yes
		}
		b.recommend(detailScreen(b.c, &cands[i]), &cands[i], label)
	}
}

// drawFits draws the number of candidates (recMin..recMax of the channel) and
// whether each is to fit: half at random, at least one of each.
func (b *builder) drawFits() []bool {
	n := b.c.recMin + b.rng.IntN(b.c.recMax-b.c.recMin+1)
	yes := make([]bool, n)
	for i := range yes {
		yes[i] = b.rng.IntN(2) == 0
	}
	if !slices.Contains(yes, true) || !slices.Contains(yes, false) {
		k := b.rng.IntN(n)
		yes[k] = !yes[k]
	}
	return yes
}

// recommend appends the recommend step of candidate it, shown on sc, answered label.
func (b *builder) recommend(sc Screen, it *Item, label string) {
	b.step(StageRecommend, sc, Answer{Action: espo.ActionRecommendation, Point: espo.NoPoint, InputText: label})
	b.ep.Steps[len(b.ep.Steps)-1].Candidate = it
}
