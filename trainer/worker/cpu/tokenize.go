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
	"slices"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// tokenize maps an answer given as text (a supervised target, or any answer
// without token ids) to the decisions that produce it on this view. It parses the
// answer with espo.ParseAnswer; a malformed answer or an unknown action type is
// an error. Values map to the nearest option:
//
//	click           the smallest element whose box holds the point (read as
//	                normalised), else the element whose box is nearest to it
//	type, scroll,   the option equal to the text ignoring case, else the one with
//	recommendation  the highest token-set F1, else the highest HashEmbedder
//	                cosine, else the first
//	pool_found      the text's words (as the HashEmbedder splits them) that are in
//	                the vocabulary, in order, at most maxWords, then the end token
//	                when there is room; words outside the vocabulary are dropped
//
// so a target the policy cannot produce exactly (a typed text found nowhere in
// the prompt, the words of a requirement outside the vocabulary) is learnt as
// the nearest answer it can produce.
func (v *view) tokenize(text string, maxWords int) ([]int32, error) {
	a, err := espo.ParseAnswer(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", worker.ErrInvalid, err)
	}
	t := slices.Index(actionTypes, a.Type)
	if t < 0 {
		return nil, fmt.Errorf("%w: unknown action type %q, want one of %s", worker.ErrInvalid, a.Type, strings.Join(actionTypes, ", "))
	}
	toks := []int32{tokenID(kindType, t)}
	switch a.Type {
	case espo.ActionClick:
		if v.elems.n > 0 {
			toks = append(toks, tokenID(kindElement, v.elementAt(a.Point)))
		}
	case espo.ActionType:
		if v.texts.n > 0 {
			toks = append(toks, tokenID(kindText, nearest(v.textOptions, a.Text)))
		}
	case espo.ActionScroll:
		toks = append(toks, tokenID(kindDirection, nearest(scrollDirections, a.Text)))
	case espo.ActionRecommendation:
		toks = append(toks, tokenID(kindDecision, nearest(decisions, a.Text)))
	case espo.ActionPoolFound:
		n := 0
		for _, w := range words(a.Text) {
			if i, ok := v.vocabIndex[w]; ok && n < maxWords {
				toks = append(toks, tokenID(kindWord, i))
				n++
			}
		}
		if n < maxWords {
			toks = append(toks, tokenID(kindWord, len(v.vocab)))
		}
	}
	return toks, nil
}

// elementAt returns the index of the smallest element containing p, or of the
// element whose box is nearest to p.
func (v *view) elementAt(p [2]float64) int {
	best, bestArea, bestDist := 0, math.Inf(1), math.Inf(1)
	inside := false
	for i, e := range v.p.GetElements() {
		b := e.GetBox()
		if len(b) != 4 {
			continue
		}
		area := (b[2] - b[0]) * (b[3] - b[1])
		dx := max(b[0]-p[0], 0, p[0]-b[2])
		dy := max(b[1]-p[1], 0, p[1]-b[3])
		d := dx*dx + dy*dy
		switch {
		case d == 0 && (!inside || area < bestArea):
			best, bestArea, inside = i, area, true
		case !inside && d < bestDist:
			best, bestDist = i, d
		}
	}
	return best
}

// nearest returns the index of the option nearest to text: equal ignoring case,
// else the highest token-set F1, else the highest HashEmbedder cosine, else 0.
func nearest(options []string, text string) int {
	for i, o := range options {
		if strings.EqualFold(o, text) {
			return i
		}
	}
	best, score := 0, 0.0
	for i, o := range options {
		if f := espo.TokenF1(o, text); f > score {
			best, score = i, f
		}
	}
	if score > 0 {
		return best
	}
	emb := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	a, b := make([]float64, emb.Dim()), make([]float64, emb.Dim())
	emb.Embed(b, text)
	for i, o := range options {
		emb.Embed(a, o)
		if c := espo.Cosine(a, b); c > score {
			best, score = i, c
		}
	}
	return best
}
