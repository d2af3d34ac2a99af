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
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// An answer is a short sequence of decisions, its tokens. The first chooses the
// action type; then, by type:
//
//	click           the target element (its box centre is the point)
//	type            the text, one of view.textOptions
//	scroll          the direction
//	exit, complete  nothing more
//	pool_found      the words of the intent text, one per token, then the end
//	recommendation  Yes or No
//
// Token ids name the decision and the option: kind*tokenBase + option index.
const (
	tokenBase     = 1_000_000
	kindType      = 1
	kindElement   = 2
	kindText      = 3
	kindDirection = 4
	kindWord      = 5
	kindDecision  = 6
)

func tokenID(kind, option int) int32 { return int32(kind*tokenBase + option) }

// picker chooses the option of each decision.
type picker interface {
	// pick returns the chosen option of a decision of the given kind with the
	// scorer's current logits, or ok = false when the answer ends before it.
	pick(kind int, s *scorer) (o int, ok bool, err error)
}

// walk produces one answer on a view: it asks the picker at each decision,
// records the tokens and their log-probs and, when g is set, accumulates the
// gradient of -sum_t weight(t) * logp_t.
type walk struct {
	v         *view
	s         *scorer
	pk        picker
	maxTokens int // 0: no cap
	maxWords  int
	g         *grads
	weight    func(t int) float64
	tokens    []int32
	logps     []float64
	dyn       [][]feat
}

// decide takes one decision over the options of set (with dynamic features dyn).
func (w *walk) decide(kind int, set optionSet, dyn [][]feat) (int, bool, error) {
	if set.n == 0 || w.maxTokens > 0 && len(w.tokens) == w.maxTokens {
		return 0, false, nil
	}
	w.s.eval(set, dyn)
	o, ok, err := w.pk.pick(kind, w.s)
	if !ok || err != nil {
		return 0, false, err
	}
	if o < 0 || o >= set.n {
		return 0, false, fmt.Errorf("%w: token %d: option %d of %d", worker.ErrInvalid, len(w.tokens), o, set.n)
	}
	if w.g != nil {
		w.g.decision(w.s, set, dyn, o, w.weight(len(w.tokens)))
	}
	w.tokens = append(w.tokens, tokenID(kind, o))
	w.logps = append(w.logps, w.s.logp(o))
	return o, true, nil
}

// run walks one answer and returns it.
func (w *walk) run() (espo.Action, error) {
	a := espo.Action{Point: espo.NoPoint, Text: espo.NoText}
	t, ok, err := w.decide(kindType, w.v.types, nil)
	if !ok || err != nil {
		return a, err
	}
	a.Type = actionTypes[t]
	var o int
	switch a.Type {
	case espo.ActionClick:
		if o, ok, err = w.decide(kindElement, w.v.elems, nil); ok {
			a.Point = centre(w.v.p.GetElements()[o].GetBox())
		}
	case espo.ActionType:
		if o, ok, err = w.decide(kindText, w.v.texts, nil); ok {
			a.Text = w.v.textOptions[o]
		}
	case espo.ActionScroll:
		if o, ok, err = w.decide(kindDirection, w.v.dirs, nil); ok {
			a.Text = scrollDirections[o]
		}
	case espo.ActionPoolFound:
		a.Text, err = w.intent()
	case espo.ActionRecommendation:
		if o, ok, err = w.decide(kindDecision, w.v.yesno, nil); ok {
			a.Text = decisions[o]
		}
	}
	return a, err
}

// intent composes the words of an intent text until the end token, maxWords
// words or the end of the tokens.
func (w *walk) intent() (string, error) {
	v := w.v
	if len(w.dyn) < v.intent.n {
		w.dyn = make([][]feat, v.intent.n)
	}
	dyn := w.dyn[:v.intent.n]
	st := v.newIntentState()
	var b strings.Builder
	for st.n < w.maxWords {
		v.dynamicFeatures(&st, dyn)
		o, ok, err := w.decide(kindWord, v.intent, dyn)
		if !ok || err != nil || o == len(v.vocab) {
			return b.String(), err
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.vocab[o].text)
		st.advance(v, o)
	}
	return b.String(), nil
}

// centre returns the middle of a box x1, y1, x2, y2, or NoPoint for a malformed
// box.
func centre(box []float64) [2]float64 {
	if len(box) != 4 {
		return espo.NoPoint
	}
	return [2]float64{(box[0] + box[2]) / 2, (box[1] + box[3]) / 2}
}

// sampler picks by sampling from softmax(logits / temperature), or the most
// likely option (the first of equals) when greedy.
type sampler struct {
	rng         *rand.Rand
	temperature float64
	greedy      bool
	probs       []float64
}

func (s *sampler) pick(_ int, sc *scorer) (int, bool, error) {
	l := sc.logits
	if s.greedy {
		best := 0
		for o, x := range l {
			if x > l[best] {
				best = o
			}
		}
		return best, true, nil
	}
	s.probs = grow(s.probs, len(l))
	m := math.Inf(-1)
	for _, x := range l {
		m = max(m, x)
	}
	var sum float64
	for o, x := range l {
		s.probs[o] = math.Exp((x - m) / s.temperature)
		sum += s.probs[o]
	}
	u := s.rng.Float64() * sum
	for o, p := range s.probs {
		if u -= p; u < 0 {
			return o, true, nil
		}
	}
	return len(l) - 1, true, nil
}

// forced picks the given tokens in order; the answer ends when they do.
type forced struct {
	tokens []int32
	next   int
}

func (f *forced) pick(kind int, _ *scorer) (int, bool, error) {
	if f.next == len(f.tokens) {
		return 0, false, nil
	}
	t := f.tokens[f.next]
	if int(t)/tokenBase != kind {
		return 0, false, fmt.Errorf("%w: token %d is %d, want a token of kind %d (%d..%d)",
			worker.ErrInvalid, f.next, t, kind, kind*tokenBase, (kind+1)*tokenBase-1)
	}
	f.next++
	return int(t) % tokenBase, true, nil
}

// done reports an error when tokens are left over after the answer ended.
func (f *forced) done() error {
	if f.next != len(f.tokens) {
		return fmt.Errorf("%w: %d tokens after the end of the answer", worker.ErrInvalid, len(f.tokens)-f.next)
	}
	return nil
}
