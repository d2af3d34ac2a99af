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
	"math"
	"math/rand/v2"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// gradientItems returns weighted answers on every stage of one episode: the
// ground truth of each step and a sampled answer, with random token
// weights of both signs (and a sequence weight for the ground truths), for a
// third of the steps.
func gradientItems(t *testing.T, p *Policy, ep *dataset.Episode) []*workerpb.Weighted {
	t.Helper()
	ps := prompts(ep)
	cands, err := p.Generate(ps, sampleOptions(1, 7))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var items []*workerpb.Weighted
	for j := range ps {
		items = append(items, &workerpb.Weighted{Prompt: ps[j], Answer: &workerpb.Answer{Text: truth(ep, j)}, SequenceWeight: 0.3})
		if j%3 != 0 {
			continue
		}
		s := cands[j].Samples[0]
		w := make([]float64, len(s.Logprobs))
		for k := range w {
			w[k] = rng.NormFloat64()
		}
		items = append(items, &workerpb.Weighted{Prompt: ps[j], Answer: s.Answer, TokenWeights: w})
	}
	return items
}

// objective returns sum_i sum_t w_{i,t} logp_{i,t} under the current weights.
func objective(t *testing.T, p *Policy, items []*workerpb.Weighted) float64 {
	t.Helper()
	scored := make([]*workerpb.Scored, len(items))
	for i, it := range items {
		scored[i] = &workerpb.Scored{Prompt: it.Prompt, Answer: it.Answer}
	}
	lps, err := p.LogProbs(scored, worker.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var j float64
	for i, lp := range lps {
		for k, x := range lp.Current {
			w := items[i].SequenceWeight
			if tw := items[i].TokenWeights; len(tw) > 0 {
				w = tw[k]
			}
			j += w * x
		}
	}
	return j
}

// TestGradientFiniteDifference checks every parameter of a small network: the
// accumulated gradient of Backward must equal the central difference
// -(J(theta + e) - J(theta - e)) / 2e of the objective J = sum w logp, on answers
// of every decision kind (types, elements, texts, directions, intent words with
// their dynamic features, Yes/No). With 2^6 rows every row is shared by many
// features, so collisions are covered too.
func TestGradientFiniteDifference(t *testing.T) {
	p := configured(t, 3, map[string]string{"hash_bits": "6", "hidden": "4", "init_scale": "0.3", "max_intent_words": "12"})
	ep := &episodes(t, 2, 5)[1]
	checkGradient(t, p, gradientItems(t, p, ep), 0)
}

// checkGradient checks the gradient Backward accumulates for items against
// central differences, for every parameter; it fails unless some parameter from
// index first on has a gradient, so a test of a block cannot pass vacuously.
func checkGradient(t *testing.T, p *Policy, items []*workerpb.Weighted, first int) {
	t.Helper()
	want, tokens, err := p.Backward(items)
	if err != nil {
		t.Fatal(err)
	}
	if got := objective(t, p, items); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Fatalf("Backward objective %v, LogProbs gives %v", want, got)
	}
	t.Logf("%d answers, %d tokens, %d parameters", len(items), tokens, len(p.params))
	const eps = 1e-5
	worst := 0.0
	for i := range p.params {
		x := p.params[i]
		p.params[i] = x + eps
		up := objective(t, p, items)
		p.params[i] = x - eps
		down := objective(t, p, items)
		p.params[i] = x
		fd := -(up - down) / (2 * eps)
		diff := math.Abs(fd - p.grad[i])
		if diff > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Errorf("parameter %d: gradient %.10g, finite difference %.10g", i, p.grad[i], fd)
		}
		worst = math.Max(worst, diff)
	}
	t.Logf("largest difference %.3g", worst)
	if l2(p.grad[first:]) == 0 {
		t.Errorf("no gradient on parameters %d.. : the test checks nothing there", first)
	}
}

// TestBackwardOnRecycledGradientsEqualsAFreshPolicy: Backward recycles the row
// indexes and gradient blocks of its per-answer gradients (gradsPool). After
// Backward on other answers, and after a Configure that changes the network's
// shape, a Backward must accumulate exactly the gradient a fresh policy does:
// nothing of an earlier answer may remain.
func TestBackwardOnRecycledGradientsEqualsAFreshPolicy(t *testing.T) {
	small := map[string]string{"hash_bits": "8", "hidden": "4"}
	eps := episodes(t, 3, 11)
	for _, earlier := range []map[string]string{small, {"hash_bits": "9", "hidden": "6"}} {
		used := configured(t, 5, earlier)
		if _, _, err := used.Backward(gradientItems(t, used, &eps[0])); err != nil {
			t.Fatal(err)
		}
		if err := used.Configure(5, small); err != nil { // zero gradient, same weights as fresh
			t.Fatal(err)
		}
		if _, _, err := used.Backward(gradientItems(t, used, &eps[1])); err != nil {
			t.Fatal(err)
		}
		clear(used.grad)
		fresh := configured(t, 5, small)
		items := gradientItems(t, fresh, &eps[2])
		for _, p := range []*Policy{used, fresh} {
			if _, _, err := p.Backward(items); err != nil {
				t.Fatal(err)
			}
		}
		if l2(fresh.grad) == 0 {
			t.Fatal("the answers have no gradient: the test compares nothing")
		}
		for i := range fresh.grad {
			if used.grad[i] != fresh.grad[i] {
				t.Fatalf("after Backward with %v: parameter %d has gradient %v, a fresh policy %v", earlier, i, used.grad[i], fresh.grad[i])
			}
		}
	}
}
