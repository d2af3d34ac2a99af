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
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// TestIntentCeiling measures how well the policy can state a requirement at
// all: the best intent text it can produce is the requirement's words that are
// in its vocabulary (the lexicon and the prompt's words), in order, which is
// what tokenize maps a pool target to. Its cosine with the requirement under
// espo's default HashEmbedder must reach tau = 0.75 on nearly every episode, or
// intent accuracy could not be learnt. For comparison it also reports the
// evidence alone (typed and chosen values) and the lexicon alone.
func TestIntentCeiling(t *testing.T) {
	eps := episodes(t, 300, 17)
	emb := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	a, b := make([]float64, emb.Dim()), make([]float64, emb.Dim())
	cos := func(x, y string) float64 { emb.Embed(a, x); emb.Embed(b, y); return espo.Cosine(a, b) }
	const maxWords = 40
	var best, evid, lex stat
	for i := range eps {
		ep := &eps[i]
		j := poolStep(ep)
		v := newView(worker.PromptFromStep(ep, j), 1)
		toks, err := v.tokenize(truth(ep, j), maxWords)
		if err != nil {
			t.Fatal(err)
		}
		var ws, evs, lexs []string
		for _, tk := range toks[1:] {
			if k := int(tk) % tokenBase; k < len(v.vocab) {
				ws = append(ws, v.vocab[k].text)
			}
		}
		for _, w := range words(ep.Requirement) {
			if inLexicon[w] {
				lexs = append(lexs, w)
			}
		}
		evs = append(evs, v.ev.typed...)
		for _, k := range v.ev.keys {
			evs = append(evs, v.ev.vals[k])
		}
		best.add(cos(strings.Join(ws, " "), ep.Requirement))
		evid.add(cos(strings.Join(evs, " "), ep.Requirement))
		lex.add(cos(strings.Join(lexs, " "), ep.Requirement))
	}
	t.Logf("best producible text: mean cosine %.3f, min %.3f, >= 0.75 in %d of %d episodes", best.mean(), best.min, best.hits, best.n)
	t.Logf("evidence values only: mean cosine %.3f, >= 0.75 in %d", evid.mean(), evid.hits)
	t.Logf("lexicon words only:   mean cosine %.3f, >= 0.75 in %d", lex.mean(), lex.hits)
	if best.hits < best.n*95/100 {
		t.Errorf("the best producible intent reaches tau in only %d of %d episodes", best.hits, best.n)
	}
}

type stat struct {
	n, hits  int
	sum, min float64
}

func (s *stat) add(c float64) {
	if s.n == 0 || c < s.min {
		s.min = c
	}
	s.n++
	s.sum += c
	if c >= 0.75 {
		s.hits++
	}
}

func (s *stat) mean() float64 { return s.sum / float64(s.n) }

func poolStep(ep *dataset.Episode) int {
	for j := range ep.Steps {
		if ep.Steps[j].Stage == dataset.StagePool {
			return j
		}
	}
	return -1
}
