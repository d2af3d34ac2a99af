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
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/espo-dev/espo-operator/espo"
)

// Hard data (GenerateOptions.Difficulty = DifficultyHard) is drawn by the same
// simulated users as standard data, but what the user wants is no longer readable
// off the chips and option pages alone:
//
//   - about half of the preferences are revealed by behaviour only: a hint in the
//     instruction (the value named in words), an item that fits saved from its
//     detail page, or an item that misses only this preference opened and left
//     with Back (its differing value is negative evidence);
//   - some structurally revealed preferences are first chosen wrongly (another chip
//     or option of the same attribute) and changed later: the later choice holds;
//   - most negatives miss only a behaviour-revealed preference (hard negatives);
//   - labelNoise of the recommend labels are flipped;
//   - cards show the item's values in their text instead of element attributes,
//     detail pages word each attribute line from several templates, and
//     requirements are paraphrased from lead, phrase and recap templates (each
//     value still written out, so that a slot matcher finds it);
//   - browsing depends on the preferences: the user opens a visible item that
//     looks like a fit and scrolls past a screen with none.

// hardStream is or-ed into the stream number of a hard episode's PCG, so that the
// hard and the standard episode of a seed and index are independent draws.
const hardStream = 1 << 63

// The parameters of hard data.
const (
	// behaviourShare is the chance that a preference other than the query is
	// revealed by behaviour only (a third each: hint, saved, rejected).
	behaviourShare = 0.65
	// maxHints bounds the hints of an instruction.
	maxHints = 2
	// changeShare is the chance that a structurally revealed preference is first
	// chosen wrongly and changed later, when the steps allow.
	changeShare = 0.5
	// hardNegativeShare is the chance that a negative misses exactly one
	// behaviour-revealed preference (otherwise it misses one or two of any).
	hardNegativeShare = 0.8
	// rejectedValueShare is the chance that a hard negative on a preference
	// revealed by a rejected item takes a rejected value.
	rejectedValueShare = 0.7
	// labelNoise is the chance that a recommend label is flipped.
	labelNoise = 0.03
)

// how says how a preference of a hard episode is revealed.
type how int

const (
	// howStructural: typed, a chip or an option page, as on standard data.
	howStructural how = iota
	// howHint: named in words in the instruction.
	howHint
	// howSaved: an item that fits every preference is opened and saved.
	howSaved
	// howRejected: an item that misses only this preference is opened and left
	// with Back.
	howRejected
)

// hardState is what a hard episode's builder keeps beside the standard state.
type hardState struct {
	// hows says how each preference (parallel to builder.prefs) is revealed.
	hows []how
	// early holds the wrong value first chosen for a preference (by index) that
	// is changed later.
	early map[int]string
	// rejected holds, per attribute, the values of the items rejected for it.
	rejected map[string][]string
}

// cost is the number of GUI steps that reveal p the way h says.
func (p pref) costBy(h how) int {
	switch h {
	case howStructural:
		return p.cost()
	case howSaved:
		return 3 // open, Save, Back
	case howRejected:
		return 2 // open, Back
	}
	return 0
}

// hardEpisode builds a hard episode with nGUI GUI steps into b.ep.
func (b *builder) hardEpisode(nGUI int) {
	b.hard = &hardState{early: map[int]string{}, rejected: map[string][]string{}}
	left := b.chooseHardPrefs(nGUI - searchSteps)
	left = b.chooseChanges(left)
	b.ep.Preferences = b.preferences()
	b.ep.Instruction = b.hardInstruction()
	b.ep.Requirement = b.hardRequirement()
	b.hardGUISteps(left)
	b.hardPoolAndRecommend()
}

// chooseHardPrefs draws the query and prefMin..prefMax other preferences and how
// each is revealed, within budget GUI steps (a hint costs none, up to maxHints);
// at least one is revealed by behaviour only. It returns the steps left.
func (b *builder) chooseHardPrefs(budget int) int {
	c := b.c
	b.prefs = []pref{{&c.dims[0], pick(b.rng, c.dims[0].values)}}
	b.hard.hows = []how{howStructural}
	k := c.prefMin + b.rng.IntN(c.prefMax-c.prefMin+1)
	hints := 0
	for _, j := range b.rng.Perm(len(c.dims) - 1) {
		if len(b.prefs)-1 == k {
			break
		}
		d := &c.dims[j+1]
		p := pref{d: d, v: missableValue(b.rng, d)}
		h := howStructural
		if b.rng.Float64() < behaviourShare {
			h = how(1 + b.rng.IntN(3))
		}
		if p.costBy(h) > budget {
			if hints == maxHints {
				continue
			}
			h = howHint
		}
		if h == howHint {
			hints++
		}
		budget -= p.costBy(h)
		b.prefs = append(b.prefs, p)
		b.hard.hows = append(b.hard.hows, h)
	}
	if last := len(b.prefs) - 1; last > 0 && !slices.ContainsFunc(b.hard.hows, behaviourOnly) {
		budget += b.prefs[last].cost()
		b.hard.hows[last] = howHint
	}
	return budget
}

func behaviourOnly(h how) bool { return h != howStructural }

// missableValue draws a preferred value of d that some value misses: for an
// ordered attribute, not the lowest.
func missableValue(rng *rand.Rand, d *dim) string {
	if d.atLeast {
		return pick(rng, d.values[1:])
	}
	return pick(rng, d.values)
}

// chooseChanges draws which structurally revealed preferences (other than the
// query) are first chosen wrongly, each with chance changeShare while left steps
// allow, and the wrong value. It returns the steps left.
func (b *builder) chooseChanges(left int) int {
	for i := 1; i < len(b.prefs); i++ {
		p := b.prefs[i]
		if b.hard.hows[i] != howStructural || p.cost() > left || b.rng.Float64() >= changeShare {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(p.d.values), func(v string) bool { return v == p.v })
		b.hard.early[i] = pick(b.rng, others)
		left -= p.cost()
	}
	return left
}

// hintForms wrap a preference's phrase into a hint sentence of the instruction.
var hintForms = []string{"Oh, and %s.", "One more thing: %s.", "Also, %s, if possible.", "And remember, %s."}

// hardInstruction is the standard instruction followed by one hint sentence per
// preference revealed by a hint.
func (b *builder) hardInstruction() string {
	s := b.instruction()
	for i, p := range b.prefs {
		if b.hard.hows[i] == howHint {
			s += " " + fmt.Sprintf(pick(b.rng, hintForms), p.phrase(b.rng))
		}
	}
	return s
}

// hardLeads open a hard requirement: %[1]s is the query value, %[2]s the
// channel's noun.
var hardLeads = []string{"My %[1]s %[2]s:", "The ideal %[1]s %[2]s:", "Wanted, a %[1]s %[2]s:", "Looking for a %[1]s %[2]s:", "%[1]s %[2]s wish list:"}

// slotPhrases state a preference by its attribute's name: %[1]s is the value,
// %[2]s the attribute.
var slotPhrases = []string{"%[1]s %[2]s", "%[2]s %[1]s", "%[2]s: %[1]s", "%[1]s for %[2]s"}

// recaps close a hard requirement by listing the values again.
var recaps = []string{"In short: %s.", "Must-haves: %s.", "Key points: %s.", "To sum up, %s.", "Checklist: %s."}

// hardRequirement is a lead from hardLeads naming the query value, every
// preference stated in a random order (hardPhrase), and a recap listing the
// values. Every value is written out (the slot matcher finds it) and weighs more
// than the wording: the text with the values deleted is not similar to it (see
// TemplateOnly).
func (b *builder) hardRequirement() string {
	order := b.rng.Perm(len(b.prefs))
	parts := make([]string, len(order))
	vals := make([]string, len(order))
	for k, i := range order {
		parts[k] = b.prefs[i].hardPhrase(b.rng)
		vals[k] = b.prefs[i].v
	}
	r := fmt.Sprintf(pick(b.rng, hardLeads), b.prefs[0].v, b.c.noun)
	body := listing(parts)
	r += " " + strings.ToUpper(body[:1]) + body[1:] + "."
	return r + " " + fmt.Sprintf(pick(b.rng, recaps), strings.Join(vals, ", "))
}

// listing joins parts as "a", "a and b" or "a, b, and c".
func listing(parts []string) string {
	switch len(parts) {
	case 1:
		return parts[0]
	case 2:
		return parts[0] + " and " + parts[1]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", and " + parts[len(parts)-1]
}

// hardPhrase states p from its dimension's phrases (a quarter of the time) or
// from slotPhrases: short, so that the values weigh more than the wording.
func (p pref) hardPhrase(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		return p.phrase(rng)
	}
	v := p.v
	if p.d.lower {
		v = strings.ToLower(v)
	}
	return fmt.Sprintf(pick(rng, slotPhrases), v, p.d.key)
}

// hardGUISteps appends the search and then, shuffled, the units revealing the
// preferences (a wrong first choice always before its change) and noise units
// filling the left steps.
func (b *builder) hardGUISteps(left int) {
	b.search()
	var units []func()
	var changes [][2]int // unit indices: the wrong choice, then the change
	for i := 1; i < len(b.prefs); i++ {
		p := b.prefs[i]
		switch b.hard.hows[i] {
		case howStructural:
			if v, ok := b.hard.early[i]; ok {
				changes = append(changes, [2]int{len(units), len(units) + 1})
				units = append(units, func() { b.revealPref(pref{p.d, v}) })
			}
			units = append(units, func() { b.revealPref(p) })
		case howSaved:
			units = append(units, b.saveFit)
		case howRejected:
			units = append(units, func() { b.rejectMiss(p) })
		}
	}
	units = b.addNoise(units, left)
	pos := b.rng.Perm(len(units)) // pos[u] is the place of unit u
	for _, c := range changes {
		if pos[c[0]] > pos[c[1]] {
			pos[c[0]], pos[c[1]] = pos[c[1]], pos[c[0]]
		}
	}
	order := make([]func(), len(units))
	for u, k := range pos {
		order[k] = units[u]
	}
	for _, u := range order {
		u()
	}
}

// poolItem is an item of the results page: a new item, which on hard data
// matches the query (the results of a search do).
func (b *builder) poolItem() Item {
	it := b.newItem()
	if b.hard != nil {
		it.Attrs[b.prefs[0].d.key] = b.prefs[0].v
	}
	return it
}

// showFirst puts it at the top of the results (a new result of the filters).
func (b *builder) showFirst(it Item) {
	b.pool = append(b.pool, it)
	b.st.items = slices.Insert(slices.Clone(b.st.items), 0, it)
}

// open clicks the card of item it on the results page and returns the lines of
// its detail page, worded once so that the page reads the same on every step.
func (b *builder) open(it *Item) []string {
	res := b.results()
	b.click(res, res.card(it.ID))
	return b.detailLines(it)
}

// saveFit opens an item that fits every preference, saves it and goes back:
// positive evidence of its values.
func (b *builder) saveFit() {
	it := b.candidate(true)
	b.showFirst(it)
	lines := b.open(&it)
	det := b.detailOf(&it, lines, "Save")
	b.click(det, det.find("button", "Save"))
	det = b.detailOf(&it, lines, "Saved")
	b.click(det, det.find("button", "Back"))
}

// rejectMiss opens an item that fits every preference but p and goes back: its
// value of p's attribute is negative evidence.
func (b *builder) rejectMiss(p pref) {
	it := b.candidate(true)
	w := pick(b.rng, p.misses())
	it.Attrs[p.d.key] = w
	b.hard.rejected[p.d.key] = append(b.hard.rejected[p.d.key], w)
	b.showFirst(it)
	lines := b.open(&it)
	det := b.detailOf(&it, lines, "Save")
	b.click(det, det.find("button", "Back"))
}

// browseFit opens the visible item that fits the most preferences, when it fits
// at least half of them, and goes back; with none such in view it scrolls down
// twice, past the items that do not fit.
func (b *builder) browseFit() {
	res := b.results()
	best, bestFit := "", (len(b.prefs)+1)/2
	for _, e := range res.Elements {
		if e.Role != "card" {
			continue
		}
		it := b.poolByID(e.Attrs["item"])
		if n := b.fitCount(it); n >= bestFit && best == "" || n > bestFit {
			best, bestFit = e.ID, n
		}
	}
	if best == "" {
		b.scrollBy("down")
		b.scrollBy("down")
		return
	}
	b.click(res, best)
	it := b.poolByID(res.element(best).Attrs["item"])
	det := b.detailOf(it, b.detailLines(it), "Save")
	b.click(det, det.find("button", "Back"))
}

// poolByID returns the item of the results with the given id.
func (b *builder) poolByID(id string) *Item {
	return &b.pool[slices.IndexFunc(b.pool, func(it Item) bool { return it.ID == id })]
}

// fitCount is the number of preferences an item fits.
func (b *builder) fitCount(it *Item) int {
	n := 0
	for _, p := range b.prefs {
		if p.d.fits(p.v, it.Attrs[p.d.key]) {
			n++
		}
	}
	return n
}

// attrLines word an attribute line of a hard detail page: %[1]s is the
// attribute, %[2]s the value, %[3]s the attribute capitalised.
var attrLines = []string{"%[1]s: %[2]s", "%[3]s: %[2]s", "%[2]s (%[1]s)", "%[3]s - %[2]s", "%[3]s · %[2]s", "%[1]s = %[2]s"}

// detailLines words the attribute lines of it's detail page (the channel's
// attributes, then reviews), each from a random template of attrLines.
func (b *builder) detailLines(it *Item) []string {
	keys := make([]string, 0, len(b.c.dims)+1)
	for _, d := range b.c.dims {
		keys = append(keys, d.key)
	}
	keys = append(keys, "reviews")
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf(pick(b.rng, attrLines), k, it.Attrs[k], capitalise(k))
	}
	return lines
}

// detailOf is the detail page of it with the given attribute lines (from
// detailLines) and the Save button labelled save.
func (b *builder) detailOf(it *Item, lines []string, save string) Screen {
	k := 0
	return detailPage(b.c, it, func(string, string) string { k++; return lines[k-1] }, save)
}

func capitalise(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// hardPoolAndRecommend appends the pool step and the recommend steps of a hard
// episode: negatives are mostly hard (hardNegative), pages are paraphrased, and
// each label (the fit) is flipped with chance labelNoise.
func (b *builder) hardPoolAndRecommend() {
	yes := b.drawFits()
	cands := make([]Item, len(yes))
	for i, y := range yes {
		if y {
			cands[i] = b.candidate(true)
		} else {
			cands[i] = b.hardNegative()
		}
	}
	b.step(StagePool, poolScreen(b.c, cands, true), Answer{Action: espo.ActionPoolFound, Point: espo.NoPoint, InputText: b.ep.Requirement})
	for i := range cands {
		fit := b.fitsAll(&cands[i])
		if b.rng.Float64() < labelNoise {
			fit = !fit
		}
		label := No
		if fit {
			label = Yes
		}
		b.recommend(b.detailOf(&cands[i], b.detailLines(&cands[i]), "Save"), &cands[i], label)
	}
}

// hardNegative is a candidate that misses a preference: with chance
// hardNegativeShare exactly one preference revealed by behaviour only (with a
// rejected value when there is one, mostly), else one or two of any.
func (b *builder) hardNegative() Item {
	var weak []int
	for i, h := range b.hard.hows {
		if behaviourOnly(h) && len(b.prefs[i].misses()) > 0 {
			weak = append(weak, i)
		}
	}
	if len(weak) == 0 || b.rng.Float64() >= hardNegativeShare {
		return b.candidate(false)
	}
	p := b.prefs[pick(b.rng, weak)]
	it := b.candidate(true)
	if rej := b.hard.rejected[p.d.key]; len(rej) > 0 && b.rng.Float64() < rejectedValueShare {
		it.Attrs[p.d.key] = pick(b.rng, rej)
	} else {
		it.Attrs[p.d.key] = pick(b.rng, p.misses())
	}
	return it
}

// card returns the id of the card of item id on s.
func (s Screen) card(item string) string {
	for _, e := range s.Elements {
		if e.Role == "card" && e.Attrs["item"] == item {
			return e.ID
		}
	}
	panic("dataset: generator: no card of item " + item + " on the " + s.Page + " screen")
}

// OracleDecision is the decision of an oracle that knows the user: Yes when the
// candidate of recommend step s fits every preference of ep (equal, or for an
// ordered attribute of a known channel, such as a rating, the preferred value or a
// better one), else No. Labels agree with it except on flipped (noisy) ones.
func OracleDecision(ep *Episode, s *Step) string {
	c := channelByName(ep.Channel)
	for key, want := range ep.Preferences {
		have := ""
		if s.Candidate != nil {
			have = s.Candidate.Attrs[key]
		}
		if !slotFits(c, key, want, have) {
			return No
		}
	}
	return Yes
}

// slotFits reports whether value have of attribute key fits the preferred value
// want, with the fit of the channel's dimension (equality when unknown).
func slotFits(c *channelSpec, key, want, have string) bool {
	if c != nil {
		for i := range c.dims {
			if c.dims[i].key == key {
				return c.dims[i].fits(want, have)
			}
		}
	}
	return have == want
}

// ContainsValue reports whether text contains value v as whole words, ignoring
// case: an occurrence not preceded or followed by a letter or digit.
func ContainsValue(text, v string) bool { return valueIndex(text, v) >= 0 }

// valueIndex returns the byte index of the first whole-word occurrence of v in
// text, ignoring case, or -1.
func valueIndex(text, v string) int {
	if v == "" {
		return -1
	}
	for i := 0; i+len(v) <= len(text); i++ {
		if !strings.EqualFold(text[i:i+len(v)], v) {
			continue
		}
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(v):])
		if !isWordChar(before) && !isWordChar(after) {
			return i
		}
	}
	return -1
}

func isWordChar(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// TemplateOnly returns the requirement with every preference value deleted
// (longest values first, whole words, ignoring case): the wording a policy could
// learn from the templates alone, which an intent metric must not pass.
func TemplateOnly(requirement string, prefs map[string]string) string {
	vals := make([]string, 0, len(prefs))
	for _, v := range prefs {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, v := range vals {
		for i := valueIndex(requirement, v); i >= 0; i = valueIndex(requirement, v) {
			requirement = requirement[:i] + requirement[i+len(v):]
		}
	}
	return requirement
}
