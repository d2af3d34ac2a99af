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
	// byFirst holds, for each first byte of a lower-cased value, the indices of the
	// phrases starting with it, longest first.
	byFirst [256][]int32
	buf     []byte  // the lower-cased text
	seen    []int32 // the distinct phrases found in the text
}

// slotPhrase is one distinct value (ignoring case) and the slots it belongs to.
type slotPhrase struct {
	text  string   // lower-cased
	value string   // as first spelled in the vocab
	slots []string // the slots it is a value of, without repeats
}

// NewSlotMatcher returns a SlotMatcher of vocab's values. Empty values are ignored.
func NewSlotMatcher(vocab SlotVocab) *SlotMatcher {
	m := &SlotMatcher{}
	index := map[string]int{}
	for _, slot := range sortedKeys(vocab) {
		for _, v := range vocab[slot] {
			m.addValue(index, slot, v)
		}
	}
	for i := range m.phrases {
		b := m.phrases[i].text[0]
		m.byFirst[b] = append(m.byFirst[b], int32(i))
	}
	for b := range m.byFirst {
		slices.SortStableFunc(m.byFirst[b], func(x, y int32) int {
			return cmp.Compare(len(m.phrases[y].text), len(m.phrases[x].text))
		})
	}
	return m
}

// addValue adds value v of slot to the phrases, merging equal values.
func (m *SlotMatcher) addValue(index map[string]int, slot, v string) {
	low := strings.ToLower(strings.TrimSpace(v))
	if low == "" {
		return
	}
	i, ok := index[low]
	if !ok {
		i = len(m.phrases)
		index[low] = i
		m.phrases = append(m.phrases, slotPhrase{text: low, value: strings.TrimSpace(v)})
	}
	if p := &m.phrases[i]; !slices.Contains(p.slots, slot) {
		p.slots = append(p.slots, slot)
	}
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
// Finding values: the text and the values are lower-cased; scanning the text from
// the left, at each position the longest value that starts there as a whole phrase
// is taken and the scan resumes after it, so matches never overlap ("Premium
// economy" is found, not "Economy" inside it). A phrase is whole when it is not
// glued to a letter or digit on either side (the side of a value that begins or
// ends with punctuation, as "$20-40" or "4.5+" do, needs no gap), and a number is
// not cut out of a decimal ("$10" is not found in "$10.50"). A value of several
// slots is a value of each.
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
// Values compare ignoring case. A truth with no slot gives Right false and F1 0: a
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
			case strings.EqualFold(strings.TrimSpace(want), p.value):
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

// find sets m.seen to the distinct phrases named in text, leftmost longest first.
func (m *SlotMatcher) find(text string) {
	m.buf = m.buf[:0]
	for _, r := range text {
		m.buf = utf8.AppendRune(m.buf, unicode.ToLower(r))
	}
	m.seen = m.seen[:0]
	for i := 0; i < len(m.buf); {
		p, n := m.longestAt(i)
		if n == 0 {
			_, size := utf8.DecodeRune(m.buf[i:])
			i += size
			continue
		}
		if !slices.Contains(m.seen, p) {
			m.seen = append(m.seen, p)
		}
		i += n
	}
}

// longestAt returns the longest phrase that starts at byte i of m.buf as a whole
// phrase, and its length; n is 0 when none does.
func (m *SlotMatcher) longestAt(i int) (p int32, n int) {
	for _, j := range m.byFirst[m.buf[i]] {
		t := m.phrases[j].text
		end := i + len(t)
		if end <= len(m.buf) && string(m.buf[i:end]) == t && m.wholeAt(i, end, t) {
			return j, len(t)
		}
	}
	return 0, 0
}

// wholeAt reports whether phrase t, found at m.buf[i:end], stands as a whole phrase.
func (m *SlotMatcher) wholeAt(i, end int, t string) bool {
	first, _ := utf8.DecodeRuneInString(t)
	last, _ := utf8.DecodeLastRuneInString(t)
	before, _ := utf8.DecodeLastRune(m.buf[:i])
	after, _ := utf8.DecodeRune(m.buf[end:])
	if i > 0 && isWordRune(first) && (isWordRune(before) || unicode.IsDigit(first) && m.decimalBefore(i)) {
		return false
	}
	if end < len(m.buf) && isWordRune(last) && (isWordRune(after) || unicode.IsDigit(last) && m.decimalAfter(end)) {
		return false
	}
	return true
}

// decimalBefore reports whether m.buf[:i] ends with a digit and a decimal point or
// comma ("7." before "5 days").
func (m *SlotMatcher) decimalBefore(i int) bool {
	return i >= 2 && isDecimalMark(m.buf[i-1]) && isDigit(m.buf[i-2])
}

// decimalAfter reports whether m.buf[end:] starts with a decimal point or comma and
// a digit (".50" after "$10").
func (m *SlotMatcher) decimalAfter(end int) bool {
	return end+1 < len(m.buf) && isDecimalMark(m.buf[end]) && isDigit(m.buf[end+1])
}

func isDecimalMark(b byte) bool { return b == '.' || b == ',' }

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
