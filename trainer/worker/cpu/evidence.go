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
	"unicode"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// evidence is what the demonstrated history reveals about the user: the texts
// typed, and the value chosen for each attribute key, read from the clicked
// elements' attributes as the SmartSpot screens carry them. A click on an element
// with attribute group=K (a filter chip) selects its text as the value of K, or
// clears it when the chip was selected already (selected=true); a click on an
// element with opens=K (a page opener) makes the next click on an option choose
// the value of K.
type evidence struct {
	typed []string
	// keys are the attribute keys in the order they were first chosen; vals
	// their current values ("" once cleared).
	keys []string
	vals map[string]string
}

func readEvidence(history []*workerpb.Action) evidence {
	ev := evidence{vals: map[string]string{}}
	pending := ""
	for _, a := range history {
		switch a.GetType() {
		case espo.ActionType:
			if t, ok := typedText(a); ok {
				ev.typed = append(ev.typed, t)
			}
			continue
		case espo.ActionClick:
		default:
			continue
		}
		attrs, text := a.GetElementAttributes(), a.GetElementText()
		switch {
		case attrs["group"] != "":
			if attrs["selected"] == "true" {
				ev.set(attrs["group"], "")
			} else {
				ev.set(attrs["group"], text)
			}
			pending = ""
		case attrs["opens"] != "":
			pending = attrs["opens"]
		case a.GetElementRole() == "option" && pending != "":
			ev.set(pending, text)
			pending = ""
		default:
			pending = ""
		}
	}
	return ev
}

// typedText returns the text a type action entered, trimmed, and whether there
// is one.
func typedText(a *workerpb.Action) (string, bool) {
	t := strings.TrimSpace(a.GetInputText())
	return t, t != "" && t != espo.NoText
}

func (ev *evidence) set(key, val string) {
	if _, ok := ev.vals[key]; !ok {
		ev.keys = append(ev.keys, key)
	}
	ev.vals[key] = val
}

// The statuses of a candidate's attribute against the evidence.
const (
	statusEqual   = "eq"     // the value chosen
	statusGreater = "gt"     // a larger number than the value chosen
	statusLess    = "lt"     // a smaller number
	statusOther   = "ne"     // another value
	statusAbsent  = "absent" // the candidate has no such attribute
	typedFound    = "typed-eq"
	typedMissing  = "typed-ne"
)

// compare returns the status of a candidate's value have against the chosen
// value want: equal (ignoring case), greater or less by the first number in
// each, or other.
func compare(have, want string) string {
	switch {
	case have == "":
		return statusAbsent
	case strings.EqualFold(have, want):
		return statusEqual
	}
	h, okh := firstNumber(have)
	w, okw := firstNumber(want)
	switch {
	case okh && okw && h > w:
		return statusGreater
	case okh && okw && h < w:
		return statusLess
	}
	return statusOther
}

// firstNumber returns the first decimal number in s ("4.5+" -> 4.5, "$20-40" -> 20).
func firstNumber(s string) (float64, bool) {
	i := strings.IndexFunc(s, unicode.IsDigit)
	if i < 0 {
		return 0, false
	}
	j := i
	for j < len(s) && (s[j] == '.' || s[j] >= '0' && s[j] <= '9') {
		j++
	}
	v, err := strconv.ParseFloat(strings.TrimRight(s[i:j], "."), 64)
	return v, err == nil
}

// decisionFeatures returns the feature builder of the Yes and No options of a
// recommendation: the cross-step evidence about the candidate item. For each
// chosen attribute, its status (with and without its key); for each typed text,
// whether some attribute of the item equals it; and the number of clear misses
// (other, less, typed-ne), of larger numbers and of pieces of evidence. Each is
// conjoined with the option, so the network learns which statuses mean Yes for
// which keys ("gt" is a fit for a minimum rating, a miss for a price band). The
// tokens architecture has none of it: only the option and the option with the
// channel, and the match module adds to the logit of Yes (tokens.go).
func (v *view) decisionFeatures() func(i int, b *featList) {
	var ev []uint64
	if item := v.p.GetItem(); item != nil && !v.screen {
		attrs := item.GetAttributes()
		bad, gt, n := 0, 0, 0
		for _, k := range v.ev.keys {
			want := v.ev.vals[k]
			if want == "" {
				continue
			}
			s := compare(attrs[k], want)
			ev = append(ev, hcat(tSt, hs(s)), hcat(tStKey, hs(s), hs(k)))
			n++
			switch s {
			case statusOther, statusLess:
				bad++
			case statusGreater:
				gt++
			}
		}
		for _, t := range v.ev.typed {
			s, key := typedMissing, ""
			for k, val := range attrs {
				if strings.EqualFold(val, t) && (key == "" || k < key) {
					s, key = typedFound, k
				}
			}
			ev = append(ev, hcat(tSt, hs(s)), hcat(tStKey, hs(s), hs(key)))
			n++
			if s == typedMissing {
				bad++
			}
		}
		ev = append(ev, hcat(tBad, uint64(min(bad, 2))), hcat(tGt, uint64(min(gt, 2))), hcat(tNEv, uint64(min(n, 5))))
	}
	return func(i int, b *featList) {
		d := hs(decisions[i])
		b.add(hcat(tYN, d))
		b.add(hcat(tYNCh, d, v.ch))
		for _, f := range ev {
			b.add(hcat(tYN, d, f))
		}
	}
}

// buildVocab collects the words an intent text can use: the lexicon's, then the
// prompt's (instruction, typed texts, chosen values, clicked texts, screen
// texts), each once, with where they were found; and the phrase successions
// (word pairs inside one phrase) of the prompt. The tokens architecture has no
// chosen values (no evidence): its words' sources are where they appear, and
// clicked words also carry the roles of the elements clicked.
func (v *view) buildVocab() {
	v.vocabIndex = map[string]int{}
	v.next = map[uint64]uint8{}
	add := func(text string, kind uint8, key string) {
		ws := words(text)
		for k, w := range ws {
			i, ok := v.vocabIndex[w]
			if !ok {
				i = len(v.vocab)
				v.vocabIndex[w] = i
				v.vocab = append(v.vocab, vocabWord{text: w, h: hs(w)})
			}
			vw := &v.vocab[i]
			vw.kinds |= kind
			if key != "" {
				vw.keys = appendUnique(vw.keys, hs(key))
			}
			if k > 0 {
				v.next[hcat(hs(ws[k-1]), vw.h)] |= kind
			}
		}
	}
	for _, w := range lexicon {
		add(w, srcLexicon, "")
	}
	add(v.p.GetInstruction(), srcInstruction, "")
	for _, t := range v.ev.typed {
		add(t, srcTyped, "")
	}
	for _, k := range v.ev.keys {
		add(v.ev.vals[k], srcChosen, k)
	}
	for _, a := range v.p.GetHistory() {
		add(a.GetElementText(), srcClicked, "")
		if v.screen {
			v.addClickedRoles(a)
		}
	}
	for _, e := range v.p.GetElements() {
		add(e.GetText(), srcScreen, "")
	}
	v.intent = v.choiceOptions(len(v.vocab)+1, func(i int, b *featList) {
		if i == len(v.vocab) {
			b.add(tStop)
			b.add(hcat(tStopCh, v.ch))
			return
		}
		w := &v.vocab[i]
		b.add(hcat(tIW, w.h))
		b.add(hcat(tIWCh, w.h, v.ch))
		for s := range numSources {
			if w.kinds&(1<<s) != 0 {
				b.add(hcat(tISrc, uint64(s)))
				b.add(hcat(tISrcCh, uint64(s), v.ch))
			}
		}
		for _, k := range w.keys {
			b.add(hcat(tIKey, k))
		}
		for _, r := range w.roles {
			b.add(hcat(tIRole, r))
		}
	})
}

func appendUnique(s []uint64, x uint64) []uint64 {
	for _, y := range s {
		if y == x {
			return s
		}
	}
	return append(s, x)
}

// intentState is the state of an intent text being composed: the last two
// words, how often each vocabulary word was used, and how many words of the
// evidence (typed or chosen) are still unused.
type intentState struct {
	prev, prev2 uint64
	used        []uint8
	unused      int
	n           int
	// bigrams are the hashes of the word pairs written so far.
	bigrams []uint64
}

func (v *view) newIntentState() intentState {
	st := intentState{prev: hBOS, prev2: hBOS, used: make([]uint8, len(v.vocab))}
	for i := range v.vocab {
		if v.vocab[i].kinds&(srcTyped|srcChosen) != 0 {
			st.unused++
		}
	}
	return st
}

// advance records word i (not the end).
func (st *intentState) advance(v *view, i int) {
	w := &v.vocab[i]
	if st.used[i] == 0 && w.kinds&(srcTyped|srcChosen) != 0 {
		st.unused--
	}
	st.used[i] = min(st.used[i]+1, 2)
	st.bigrams = append(st.bigrams, hcat(st.prev, w.h))
	st.prev2, st.prev = st.prev, w.h
	st.n++
}

// dynamicFeatures writes into dyn[i] the features of option i (word i, or the
// end at len(vocab)) that depend on the words before: bigram and trigram with
// the previous words, the previous word with the word's sources and evidence
// keys, reuse (with the sources and with the word), the position with the
// word, whether it continues a phrase of the prompt and whether it
// repeats a word pair already written; for the end,
// the previous word, the length so far and the unused evidence.
func (v *view) dynamicFeatures(st *intentState, dyn [][]feat) {
	m := v.mask
	for i := range v.vocab {
		w := &v.vocab[i]
		d := append(dyn[i][:0],
			featOf(hcat(tBi, st.prev, w.h), m),
			featOf(hcat(tTri, st.prev2, st.prev, w.h), m))
		for s := range numSources {
			if w.kinds&(1<<s) != 0 {
				d = append(d, featOf(hcat(tBiSrc, st.prev, uint64(s)), m))
			}
		}
		for _, k := range w.keys {
			d = append(d, featOf(hcat(tBiKey, st.prev, k), m))
		}
		for _, r := range w.roles {
			d = append(d, featOf(hcat(tBiRole, st.prev, r), m))
		}
		if u := st.used[i]; u > 0 {
			d = append(d, featOf(hcat(tUsed, uint64(u), uint64(w.kinds)), m), featOf(hcat(tUsedW, uint64(u), w.h), m))
		}
		d = append(d, featOf(hcat(tPosW, uint64(min(st.n, 63)), w.h), m))
		pair := hcat(st.prev, w.h)
		if src, ok := v.next[pair]; ok {
			d = append(d, featOf(hcat(tNext, uint64(src)), m))
		}
		if slices.Contains(st.bigrams, pair) {
			d = append(d, featOf(tRepeat, m))
		}
		dyn[i] = d
	}
	end := len(v.vocab)
	dyn[end] = append(dyn[end][:0],
		featOf(hcat(tStopPrev, st.prev), m),
		featOf(hcat(tStopPos, uint64(min(st.n, 63))), m),
		featOf(hcat(tStopEv, uint64(min(st.unused, 3))), m))
}
