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
	"strings"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// matchInput is what the match module of the tokens architecture reads from a
// prompt (see tokens.go): the word occurrences of the instruction and of the
// history's actions, each with its hashed context, and the words of the current
// screen and the candidate's title. It reads only texts, roles, action types and
// points: never an attribute map, and it compares no two strings.
type matchInput struct {
	// occ are the occurrences, instruction first, then the history in order
	// from index history on.
	occ     []occurrence
	history int
	// page are the embedding rows of the page words.
	page []int32
}

// occurrence is one word of the instruction or of a history action.
type occurrence struct {
	// row is the embedding row of the word.
	row int32
	// ctx are the features of its context, in the context tables.
	ctx []feat
	// own is the range [own[0], own[1]) in matchInput.occ of the occurrences of
	// the same action (the instruction counts as one): the word's repetitions
	// are the history occurrences outside it.
	own [2]int
}

// Context feature tags of an occurrence.
var (
	tOcc, tOccType, tOccRole, tOccSrc = hs("occ"), hs("occ|type"), hs("occ|role"), hs("occ|src")
	tOccAge, tOccNext, tOccNextWord   = hs("occ|age"), hs("occ|next"), hs("occ|nextword")
	tOccPrev, tOccPos, tOccWord       = hs("occ|prev"), hs("occ|pos"), hs("occ|word")
	tOccPoint, tOccRoleNext           = hs("occ|point"), hs("occ|role|next")
)

// embedRow maps a word to its row of a table with mask+1 rows.
func embedRow(w string, mask uint64) int32 { return int32(mix(hs(w)) & mask) }

// matchWords splits a text into the units the match module embeds: its tokens
// (white space, punctuation trimmed at both ends, so "$20-40" and "4.5+" stay
// whole), in lower case; the no-text marker has none.
func matchWords(s string) []string {
	if s == espo.NoText {
		return nil
	}
	return tokens(strings.ToLower(s))
}

// newMatchInput reads the module's input from p for tables with mask+1 rows.
func newMatchInput(p *workerpb.Prompt, mask uint64) *matchInput {
	in := &matchInput{}
	for k, w := range matchWords(p.GetInstruction()) {
		in.occ = append(in.occ, occurrence{row: embedRow(w, mask), ctx: instructionContext(w, k, mask)})
	}
	in.setOwn(0)
	in.history = len(in.occ)
	h := p.GetHistory()
	for j, a := range h {
		start := len(in.occ)
		for src, text := range [2]string{a.GetInputText(), a.GetElementText()} {
			ws := matchWords(text)
			for k, w := range ws {
				in.occ = append(in.occ, occurrence{row: embedRow(w, mask), ctx: actionContext(h, j, src, w, k, len(ws), mask)})
			}
		}
		in.setOwn(start)
	}
	for _, e := range p.GetElements() {
		for _, w := range matchWords(e.GetText()) {
			in.page = append(in.page, embedRow(w, mask))
		}
	}
	for _, w := range matchWords(p.GetItem().GetTitle()) {
		in.page = append(in.page, embedRow(w, mask))
	}
	return in
}

// setOwn marks the occurrences from start on as those of one action.
func (in *matchInput) setOwn(start int) {
	for i := start; i < len(in.occ); i++ {
		in.occ[i].own = [2]int{start, len(in.occ)}
	}
}

// repeats returns the indices of the possible repetitions of occurrence i: the
// history occurrences of the other actions.
func (in *matchInput) repeats(i int) []int {
	var out []int
	for j := in.history; j < len(in.occ); j++ {
		if j < in.occ[i].own[0] || j >= in.occ[i].own[1] {
			out = append(out, j)
		}
	}
	return out
}

// instructionContext is the context of the k-th word w of the instruction: its
// source, the word, and its position bucket.
func instructionContext(w string, k int, mask uint64) []feat {
	src := hs("instruction")
	return []feat{featOf(tOcc, mask), featOf(hcat(tOccSrc, src), mask), featOf(hcat(tOccWord, src, hs(w)), mask),
		featOf(hcat(tOccPos, src, uint64(bucket(k))), mask)}
}

// actionContext is the context of the k-th of n words w of history action j,
// from its input text (src 0) or its element's text (src 1): the action's type
// and element role, how many actions came after it, the next action's type,
// role and first word (a Back after an opened item, a chip clicked again), the
// previous action's role and first word (the opener before an option), the
// word itself, its position in the text, and where on the screen the click was.
func actionContext(h []*workerpb.Action, j, src int, w string, k, n int, mask uint64) []feat {
	a := h[j]
	typ, role := hs(a.GetType()), hs(a.GetElementRole())
	next, nextWord := hs("<end>"), hs("<end>")
	if j+1 < len(h) {
		b := h[j+1]
		next, nextWord = hcat(hs(b.GetType()), hs(b.GetElementRole())), hs(firstWord(b))
	}
	prev, prevWord := hs("<start>"), hs("<start>")
	if j > 0 {
		b := h[j-1]
		prev, prevWord = hcat(hs(b.GetType()), hs(b.GetElementRole())), hs(firstWord(b))
	}
	s := uint64(src)
	hashes := []uint64{
		tOcc,
		hcat(tOccType, typ, s),
		hcat(tOccRole, typ, role, s),
		hcat(tOccAge, uint64(bucket(len(h)-1-j))),
		hcat(tOccNext, role, next),
		hcat(tOccNextWord, role, nextWord),
		hcat(tOccPrev, role, prev, prevWord),
		hcat(tOccWord, hs(w)),
		hcat(tOccPos, s, uint64(min(k, 2)), uint64(min(n, 3))),
		hcat(tOccPoint, role, pointBucket(a.GetPoint())),
		hcat(tOccRoleNext, typ, role, next, nextWord),
	}
	fs := make([]feat, len(hashes))
	for i, x := range hashes {
		fs[i] = featOf(x, mask)
	}
	return fs
}

// firstWord is the first match word of an action's element text, else of its
// input text, else "".
func firstWord(a *workerpb.Action) string {
	for _, t := range [2]string{a.GetElementText(), a.GetInputText()} {
		if ws := matchWords(t); len(ws) > 0 {
			return ws[0]
		}
	}
	return ""
}

// pointBucket is a coarse cell (4 columns, 10 rows) of a normalised point, or
// 40 for none.
func pointBucket(pt []float64) uint64 {
	if len(pt) != 2 || pt[0] < 0 || pt[1] < 0 || pt[0] > 1 || pt[1] > 1 {
		return 40
	}
	return uint64(min(int(pt[0]*4), 3)*10 + min(int(pt[1]*10), 9))
}
