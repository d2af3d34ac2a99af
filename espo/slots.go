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

package espo

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SlotVocab lists every known value of each preference slot (slot: values), for
// example {"cabin": {"Economy", "Premium economy", ...}, "price": {"$10-20", ...}}.
// A value may belong to several slots ("Riverside" may be an area and a cinema).
type SlotVocab map[string][]string

// SlotMatch is the slot-by-slot judgement of an intent text against the true
// preferences (slot: value) of an episode.
type SlotMatch struct {
	// True is the number of true preferences: the slots of the truth.
	True int
	// Found is how many true values the text names.
	Found int
	// Conflicting is how many distinct other values of the true slots the text names:
	// "Business" when the true cabin is "Economy".
	Conflicting int
	// Right: every true value is named and no conflicting one, and True > 0.
	Right bool
	// F1 is the slot F1 of the text (see SlotMatcher.Match).
	F1 float64
}

// SlotMatcher finds the slot values of a SlotVocab in texts. Make it once with
// NewSlotMatcher; Match allocates nothing once its scratch space has grown to the
// longest text, so one SlotMatcher must not be used by two goroutines at once.
type SlotMatcher struct {
	phrases []slotPhrase
	// byFirst holds, for each first word of a value, the indices of the phrases
	// starting with it, longest first.
	byFirst map[string][]int32
	buf     []byte     // the lower-cased text
	words   [][2]int32 // the text's words, as spans of buf
	seen    []int32    // the distinct phrases found in the text
}

// slotPhrase is one distinct value (by its words) and the slots it belongs to.
type slotPhrase struct {
	words []string // lower-cased
	value string   // as first spelled in the vocab
	slots []string // the slots it is a value of, without repeats
}

// NewSlotMatcher returns a SlotMatcher of vocab's values. Values without a letter or
// digit are ignored.
func NewSlotMatcher(vocab SlotVocab) *SlotMatcher {
	m := &SlotMatcher{byFirst: map[string][]int32{}}
	index := map[string]int{}
	for _, slot := range sortedKeys(vocab) {
		for _, v := range vocab[slot] {
			m.addValue(index, slot, v)
		}
	}
	for i := range m.phrases {
		first := m.phrases[i].words[0]
		m.byFirst[first] = append(m.byFirst[first], int32(i))
	}
	for _, ps := range m.byFirst {
		slices.SortStableFunc(ps, func(x, y int32) int {
			return cmp.Compare(len(m.phrases[y].words), len(m.phrases[x].words))
		})
	}
	return m
}

// addValue adds value v of slot to the phrases, merging values with the same words.
func (m *SlotMatcher) addValue(index map[string]int, slot, v string) {
	words := slotWords(v)
	if len(words) == 0 {
		return
	}
	key := strings.Join(words, " ")
	i, ok := index[key]
	if !ok {
		i = len(m.phrases)
		index[key] = i
		m.phrases = append(m.phrases, slotPhrase{words: words, value: strings.TrimSpace(v)})
	}
	if p := &m.phrases[i]; !slices.Contains(p.slots, slot) {
		p.slots = append(p.slots, slot)
	}
}

// slotWords returns the lower-cased words of s: its runs of letters and digits.
func slotWords(s string) []string {
	low := []byte(strings.ToLower(s))
	var out []string
	for _, w := range appendWords(nil, low) {
		out = append(out, string(low[w[0]:w[1]]))
	}
	return out
}

// appendWords appends the spans of the runs of letters and digits of b to dst.
func appendWords(dst [][2]int32, b []byte) [][2]int32 {
	start := -1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		inWord := isWordRune(r)
		switch {
		case inWord && start < 0:
			start = i
		case !inWord && start >= 0:
			dst = append(dst, [2]int32{int32(start), int32(i)})
			start = -1
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, [2]int32{int32(start), int32(len(b))})
	}
	return dst
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MatchSlots judges text against the true preferences truth with the values of
// vocab and of truth (see SlotMatcher.Match). It builds a SlotMatcher on every call:
// to judge many texts, make one with NewSlotMatcher and call Match.
func MatchSlots(text string, truth map[string]string, vocab SlotVocab) SlotMatch {
	all := make(SlotVocab, len(vocab)+len(truth))
	for slot, vs := range vocab {
		all[slot] = append(all[slot], vs...)
	}
	for slot, v := range truth {
		all[slot] = append(all[slot], v)
	}
	return NewSlotMatcher(all).Match(text, truth)
}

// Match judges text against the true preferences truth (slot: value), whose values
// must be in the matcher's vocabulary (a true value that is not is never found).
//
// Finding values: the text and every value are read as words, the runs of letters
// and digits, lower-cased; spaces and punctuation only separate words, so "$20-40"
// is the words "20 40", "4.5+" is "4 5" and "Red-eye" is "red eye", which is also
// how a policy that writes word by word spells them. Scanning the text's words from
// the left, at each word the value with the most words that follow there is taken
// and the scan resumes after it, so matches never overlap ("Premium economy" is
// found, not "Economy" inside it) and never cut a word ("$10-20" is not found in
// "$10-200", "4.5+" not in "14.5+"). A value of several slots is a value of each.
//
// Judging, over the true slots only (a value of a slot the user has no preference
// for is ignored, since the vocabulary mixes channels whose values share words):
//
//	True        = |truth|
//	Found       = |{ true values named }|
//	Conflicting = |{ (slot, v) named : slot in truth, v != truth[slot] }|
//	Right       = True > 0 and Found = True and Conflicting = 0
//	precision   = Found / (Found + Conflicting),  recall = Found / True
//	F1          = 2 * precision * recall / (precision + recall),  0 when Found = 0
//
// Values compare by their words. A truth with no slot gives Right false and F1 0: a
// text cannot be right about preferences that are not known.
func (m *SlotMatcher) Match(text string, truth map[string]string) SlotMatch {
	m.find(text)
	r := SlotMatch{True: len(truth)}
	for _, i := range m.seen {
		p := &m.phrases[i]
		for _, slot := range p.slots {
			want, ok := truth[slot]
			switch {
			case !ok:
			case sameWords(want, p.words):
				r.Found++
			default:
				r.Conflicting++
			}
		}
	}
	r.Right = r.True > 0 && r.Found == r.True && r.Conflicting == 0
	if r.Found > 0 {
		precision := float64(r.Found) / float64(r.Found+r.Conflicting)
		recall := float64(r.Found) / float64(r.True)
		r.F1 = 2 * precision * recall / (precision + recall)
	}
	return r
}

func isNotWordRune(r rune) bool { return !isWordRune(r) }

// sameWords reports whether value v has exactly the given lower-cased words.
func sameWords(v string, words []string) bool {
	i := 0
	for w := range strings.FieldsFuncSeq(v, isNotWordRune) {
		if i == len(words) || !strings.EqualFold(w, words[i]) {
			return false
		}
		i++
	}
	return i == len(words)
}

// find sets m.seen to the distinct phrases named in text, leftmost longest first.
func (m *SlotMatcher) find(text string) {
	m.buf = m.buf[:0]
	for _, r := range text {
		m.buf = utf8.AppendRune(m.buf, unicode.ToLower(r))
	}
	m.words = appendWords(m.words[:0], m.buf)
	m.seen = m.seen[:0]
	for i := 0; i < len(m.words); {
		p, n := m.longestAt(i)
		if n == 0 {
			i++
			continue
		}
		if !slices.Contains(m.seen, p) {
			m.seen = append(m.seen, p)
		}
		i += n
	}
}

// word returns word i of the text.
func (m *SlotMatcher) word(i int) []byte { return m.buf[m.words[i][0]:m.words[i][1]] }

// longestAt returns the phrase with the most words that starts at word i of the
// text, and its number of words; n is 0 when none does.
func (m *SlotMatcher) longestAt(i int) (p int32, n int) {
	for _, j := range m.byFirst[string(m.word(i))] {
		ws := m.phrases[j].words
		if i+len(ws) <= len(m.words) && m.wordsAt(i, ws) {
			return j, len(ws)
		}
	}
	return 0, 0
}

// wordsAt reports whether the text's words from word i are ws.
func (m *SlotMatcher) wordsAt(i int, ws []string) bool {
	for k, w := range ws {
		if string(m.word(i+k)) != w {
			return false
		}
	}
	return true
}
