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

package cpu

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// A view is the analysis of one prompt: the options of every decision the policy
// can take on it, each with its hashed features. It depends on the prompt and the
// table size only, never on the weights, so it is built once per prompt and call.
//
// Every option has a static feature list (view.static); its hidden pre-activation
// is b1 + sum over its static features + sum over its dynamic features (only the
// words of an intent text have dynamic ones: they depend on the words before).

// Action types, the options of the first decision, in token order.
var actionTypes = []string{espo.ActionClick, espo.ActionType, espo.ActionScroll, espo.ActionExit,
	espo.ActionComplete, espo.ActionPoolFound, espo.ActionRecommendation}

// scrollDirections are the options of a scroll's direction, in token order.
var scrollDirections = []string{"up", "down", "left", "right"}

// decisions are the options of a recommendation, in token order.
var decisions = []string{"Yes", "No"}

// Sources of an intent word (bits of vocabWord.kinds).
const (
	srcLexicon = 1 << iota
	srcInstruction
	srcTyped
	srcChosen
	srcClicked
	srcScreen
	numSources = iota
)

// vocabWord is one word the intent text can use.
type vocabWord struct {
	text  string
	h     uint64
	kinds uint8
	// keys are the hashed attribute keys of the evidence the word belongs to
	// (features architecture only).
	keys []uint64
	// roles are the hashed roles of the elements whose clicked text holds the
	// word (tokens architecture only).
	roles []uint64
}

type view struct {
	p    *workerpb.Prompt
	mask uint64
	// static holds the static feature lists; the option sets index into it.
	static [][]feat
	// sets are the option sets, in the order of their static lists.
	sets []optionSet
	// The options of each decision.
	types, elems, texts, dirs, yesno optionSet
	// textOptions are the texts a type action can enter.
	textOptions []string
	// vocab and vocabIndex are the words of intent texts; intent[i] is the static
	// list of vocab[i], intent[len(vocab)] that of the end of the text.
	vocab      []vocabWord
	vocabIndex map[string]int
	intent     optionSet
	// next[hcat(prev, w)] is set when w follows prev inside one phrase of the
	// prompt, with the sources of that phrase.
	next map[uint64]uint8
	ch   uint64
	ev   evidence
	// screen is set in the tokens architecture: the view reads only what a screen
	// shows (no attribute map) and has no feature that compares two strings.
	screen bool
	// embedMask is the mask of the match module's tables (tokens only); match
	// its input, built on first use by matchInput.
	embedMask uint64
	matchOnce sync.Once
	match     *matchInput
}

// Feature tags: the first part of every feature's hash.
var (
	tType, tTypeCtx                 = hs("type"), hs("type|ctx")
	tRole, tRoleSel, tText, tEqLast = hs("role"), hs("role|sel"), hs("text"), hs("eqlast")
	tEqTyped, tOpens, tY, tEW       = hs("eqtyped"), hs("opens"), hs("ybin"), hs("elword")
	tElCtx                          = hs("el|ctx")
	tDir, tDirCtx, tDirLast         = hs("dir"), hs("dir|ctx"), hs("dir|last")
	tTSrc, tTSrcCh, tTCap, tTW      = hs("tsrc"), hs("tsrc|ch"), hs("tcap"), hs("tword")
	tTLex, tTChip                   = hs("tlex"), hs("tchip")
	tYN, tYNCh, tSt, tStKey         = hs("yn"), hs("yn|ch"), hs("status"), hs("status|key")
	tBad, tGt, tNEv                 = hs("bad"), hs("gt"), hs("nev")
	tIW, tIWCh, tISrc, tISrcCh      = hs("iw"), hs("iw|ch"), hs("isrc"), hs("isrc|ch")
	tIKey, tBi, tTri, tBiSrc        = hs("ikey"), hs("bi"), hs("tri"), hs("bisrc")
	tBiKey, tUsed, tNext, tRepeat   = hs("bikey"), hs("used"), hs("next"), hs("repeat")
	tStop, tStopCh, tStopPrev       = hs("stop"), hs("stop|ch"), hs("stop|prev")
	tStopPos, tStopEv               = hs("stop|pos"), hs("stop|ev")
	tUsedW, tPosW                   = hs("used|w"), hs("pos|w")
	hBOS                            = hs("<s>")
)

// newView analyses prompt p for a table with mask+1 rows, in the features
// architecture.
func newView(p *workerpb.Prompt, mask uint64) *view {
	v := &view{p: p, mask: mask, ch: hs(p.GetChannel()), ev: readEvidence(p.GetHistory())}
	v.build(contextFeatures(p, &v.ev))
	return v
}

// newScreenView analyses prompt p in the tokens architecture, for a feature
// table with mask+1 rows and match tables with embedMask+1 rows.
func newScreenView(p *workerpb.Prompt, mask, embedMask uint64) *view {
	v := &view{p: p, mask: mask, ch: hs(p.GetChannel()), ev: evidence{typed: typedTexts(p.GetHistory())},
		screen: true, embedMask: embedMask}
	v.build(screenContext(p, len(v.ev.typed)))
	return v
}

// matchInput returns the match module's input, built on first use.
func (v *view) matchInput() *matchInput {
	v.matchOnce.Do(func() { v.match = newMatchInput(v.p, v.embedMask) })
	return v.match
}

// build adds the option sets of every decision, with the context features ctx.
func (v *view) build(ctx []uint64) {
	p := v.p
	v.types = v.choiceOptions(len(actionTypes), func(i int, b *featList) {
		t := hs(actionTypes[i])
		b.add(hcat(tType, t))
		for _, c := range ctx {
			b.add(hcat(tTypeCtx, t, c))
		}
	})
	v.elems = v.choiceOptions(len(p.GetElements()), func(i int, b *featList) { v.elementFeatures(b, i, ctx) })
	v.dirs = v.choiceOptions(len(scrollDirections), func(i int, b *featList) {
		d := hs(scrollDirections[i])
		b.add(hcat(tDir, d))
		for _, c := range ctx {
			b.add(hcat(tDirCtx, d, c))
		}
		b.add(hcat(tDirLast, d, hs(lastScroll(p.GetHistory()))))
	})
	v.buildTextOptions()
	v.yesno = v.choiceOptions(len(decisions), v.decisionFeatures())
	v.buildVocab()
}

// featList collects the features of one option.
type featList struct {
	fs   []feat
	mask uint64
}

func (b *featList) add(h uint64) { b.fs = append(b.fs, featOf(h, b.mask)) }

// optionSet is the options of one decision: static lists start..start+n-1 of
// the view, and the set's index id in view.sets.
type optionSet struct{ id, start, n int }

// choiceOptions adds an option set of n options whose static lists fill builds.
func (v *view) choiceOptions(n int, fill func(i int, b *featList)) optionSet {
	set := optionSet{id: len(v.sets), start: len(v.static), n: n}
	for i := range n {
		b := featList{mask: v.mask}
		fill(i, &b)
		v.static = append(v.static, b.fs)
	}
	v.sets = append(v.sets, set)
	return set
}

// contextFeatures are the hashes that describe where the agent is: stage,
// channel, the kind of page (the set of roles on the screen), the last action
// and its element, the length of the history, a focused field, and how often it
// scrolled.
func contextFeatures(p *workerpb.Prompt, ev *evidence) []uint64 {
	var last *workerpb.Action
	if h := p.GetHistory(); len(h) > 0 {
		last = h[len(h)-1]
	}
	focused := false
	for _, e := range p.GetElements() {
		focused = focused || e.GetAttributes()["focused"] == "true"
	}
	s := screenContext(p, 0)
	return []uint64{
		s[0], s[1], s[2], s[3], s[4], s[5], // stage, channel, page, last, lastrole, lasttext
		hcat(hs("lastopens"), hs(last.GetElementAttributes()["opens"])),
		s[6], // hlen
		hcat(hs("focused"), b2u(focused)),
		s[7], // scrolls
		hcat(hs("evidence"), uint64(min(len(ev.keys)+len(ev.typed), 4))),
	}
}

// pageSignature hashes the set of roles on the screen, which tells the kind of
// page.
func pageSignature(es []*workerpb.Element) uint64 {
	var roles []string
	for _, e := range es {
		if !slices.Contains(roles, e.GetRole()) {
			roles = append(roles, e.GetRole())
		}
	}
	slices.Sort(roles)
	return hs(strings.Join(roles, ","))
}

// bucket is 0, 1, 2, 3 for small n, then 4 + floor(log2(n/4)).
func bucket(n int) int {
	b := 0
	for n >= 4 {
		n /= 2
		b++
	}
	if b == 0 {
		return n
	}
	return 3 + b
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func lastScroll(h []*workerpb.Action) string {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].GetType() == espo.ActionScroll {
			return h[i].GetInputText()
		}
	}
	return ""
}

// elementFeatures are the features of element i as a click target: its role,
// selection state, text, words, vertical position, whether it repeats the last
// clicked text or a typed one, and each of those conjoined with the context. The
// tokens architecture has neither the selection state (an attribute) nor the
// repetitions (string comparisons).
func (v *view) elementFeatures(b *featList, i int, ctx []uint64) {
	e := v.p.GetElements()[i]
	role := hs(e.GetRole())
	text := strings.ToLower(e.GetText())
	local := []uint64{hcat(tRole, role), hcat(tText, hs(text))}
	if !v.screen {
		local = v.attributeElementFeatures(e, role, text)
	}
	for _, l := range local {
		b.add(l)
		for _, c := range ctx {
			b.add(hcat(tElCtx, l, c))
		}
	}
	if box := e.GetBox(); len(box) == 4 {
		b.add(hcat(tY, role, uint64(min(max((box[1]+box[3])*5, 0), 9))))
	}
	for k, w := range words(text) {
		if k == 4 {
			break
		}
		b.add(hcat(tEW, role, hs(w)))
	}
}

// attributeElementFeatures returns the local features of an element in the
// features architecture: besides its role and text, those that read attributes
// or compare texts: the selection state and the page an element opens, whether
// it repeats the last clicked text or a typed one.
func (v *view) attributeElementFeatures(e *workerpb.Element, role uint64, text string) []uint64 {
	local := []uint64{hcat(tRole, role), hcat(tRoleSel, role, hs(e.GetAttributes()["selected"])), hcat(tText, hs(text)),
		hcat(tOpens, hs(e.GetAttributes()["opens"]))}
	if h := v.p.GetHistory(); len(h) > 0 && text != "" && strings.EqualFold(h[len(h)-1].GetElementText(), text) {
		local = append(local, hcat(tEqLast, role))
	}
	if slices.ContainsFunc(v.ev.typed, func(t string) bool { return strings.EqualFold(t, text) }) {
		local = append(local, hcat(tEqTyped, role))
	}
	return local
}

// textSource is one place a text option was found.
type textSource struct {
	text string
	src  string
}

// buildTextOptions collects the texts a type action can enter, each once
// (compared without case): the instruction's n-grams of 1 to 3 tokens, the
// texts of the screen's elements, and the history's typed and clicked texts;
// and their features: where each was found, its words, capitals, whether it is
// all common words, and whether a chip on the screen shows it.
func (v *view) buildTextOptions() {
	var found []textSource
	toks := tokens(v.p.GetInstruction())
	for n := 1; n <= 3; n++ {
		for i := 0; i+n <= len(toks); i++ {
			found = append(found, textSource{strings.Join(toks[i:i+n], " "), "ngram" + strconv.Itoa(n)})
		}
	}
	for _, e := range v.p.GetElements() {
		found = append(found, textSource{e.GetText(), "screen:" + e.GetRole()})
	}
	for _, a := range v.p.GetHistory() {
		if a.GetType() == espo.ActionType {
			found = append(found, textSource{a.GetInputText(), "typed"})
		}
		found = append(found, textSource{a.GetElementText(), "clicked"})
	}
	index := map[string]int{}
	var srcs [][]string
	for _, f := range found {
		t := strings.TrimSpace(f.text)
		if t == "" || t == espo.NoText {
			continue
		}
		k, ok := index[strings.ToLower(t)]
		if !ok {
			k = len(v.textOptions)
			index[strings.ToLower(t)] = k
			v.textOptions = append(v.textOptions, t)
			srcs = append(srcs, nil)
		}
		if !slices.Contains(srcs[k], f.src) && (!v.screen || !ok) {
			srcs[k] = append(srcs[k], f.src) // tokens: the first source only
		}
	}
	chips := map[string]bool{}
	for _, e := range v.p.GetElements() {
		if e.GetRole() == "chip" {
			chips[strings.ToLower(e.GetText())] = true
		}
	}
	v.texts = v.choiceOptions(len(v.textOptions), func(i int, b *featList) {
		t := v.textOptions[i]
		for _, s := range srcs[i] {
			b.add(hcat(tTSrc, hs(s)))
			b.add(hcat(tTSrcCh, hs(s), v.ch))
		}
		allLex := true
		for _, w := range words(t) {
			b.add(hcat(tTW, hs(w)))
			allLex = allLex && inLexicon[w]
		}
		capital := t[0] >= 'A' && t[0] <= 'Z'
		if v.screen {
			b.add(hcat(tTCap, b2u(capital)))
			b.add(hcat(tTLex, b2u(allLex)))
			return
		}
		b.add(hcat(tTCap, b2u(capital && !strings.HasPrefix(v.p.GetInstruction(), t))))
		b.add(hcat(tTLex, b2u(allLex)))
		b.add(hcat(tTChip, b2u(chips[strings.ToLower(t)])))
	})
}
