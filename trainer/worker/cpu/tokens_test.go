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
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// tokensOptions are the options of a tokens policy, with extra ones.
func tokensOptions(extra map[string]string) map[string]string {
	o := map[string]string{"arch": ArchTokens}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// majorityRate is the share of the most common label of the recommend steps.
func majorityRate(eps []dataset.Episode) float64 {
	yes, n := 0, 0
	for i := range eps {
		for _, st := range eps[i].Steps {
			if st.Stage == dataset.StageRecommend {
				n++
				if st.Answer.InputText == dataset.Yes {
					yes++
				}
			}
		}
	}
	return float64(max(yes, n-yes)) / float64(max(n, 1))
}

// TestTokensGradientFiniteDifference checks every parameter of a small tokens
// network, the match module's U, A, B, C, alpha and beta included, against
// central differences of the objective, as TestGradientFiniteDifference does.
// The module's tables start at 0 but for U; they are drawn here so that every
// path of the gradient (gates, polarities, offsets, repetition) is active, and
// 2^4 rows make history and page words share rows.
func TestTokensGradientFiniteDifference(t *testing.T) {
	p := configured(t, 3, tokensOptions(map[string]string{"hash_bits": "6", "hidden": "4", "init_scale": "0.3",
		"max_intent_words": "12", "embed_bits": "4", "embed_dim": "3"}))
	m := p.net(p.params).match
	rng := rand.New(rand.NewPCG(4, 5))
	for _, x := range [][]float64{m.A, m.B, m.C, m.scal} {
		for i := range x {
			x[i] = 0.5 * rng.NormFloat64()
		}
	}
	ep := &episodes(t, 2, 5)[1]
	items := gradientItems(t, p, ep)
	checkGradient(t, p, items, len(p.params)-matchParamCount(16, 3))
	base := m.base
	for _, b := range []struct {
		name     string
		from, to int
	}{{"U", 0, len(m.U)}, {"A", len(m.U), len(m.U) + 16}, {"B", len(m.U) + 16, len(m.U) + 32},
		{"C", len(m.U) + 32, len(m.U) + 48}, {"alpha", len(m.U) + 48, len(m.U) + 49}, {"beta", len(m.U) + 49, len(m.U) + 50}} {
		if l2(p.grad[base+b.from:base+b.to]) == 0 {
			t.Errorf("no gradient on block %s: the check covers nothing there", b.name)
		}
	}
}

// stripAttributes returns a copy of p without any attribute map.
func stripAttributes(p *workerpb.Prompt) *workerpb.Prompt {
	return rewriteAttributes(p, func(map[string]string) map[string]string { return nil })
}

// scrambleAttributes returns a copy of p whose attribute maps are replaced by
// random ones: other keys and values, selection states and groups.
func scrambleAttributes(p *workerpb.Prompt, rng *rand.Rand) *workerpb.Prompt {
	keys := []string{"group", "selected", "opens", "focused", "price", "rating", "city", "cuisine", "item"}
	vals := []string{"true", "false", "price", "Sydney", "4.5+", "$20-40", "Korean"}
	return rewriteAttributes(p, func(map[string]string) map[string]string {
		m := map[string]string{}
		for range 1 + rng.IntN(4) {
			m[pick(rng, keys)] = pick(rng, vals)
		}
		return m
	})
}

func pick(rng *rand.Rand, xs []string) string { return xs[rng.IntN(len(xs))] }

// rewriteAttributes returns a deep copy of p with every attribute map (of the
// elements, of the history's elements and of the item) replaced by f's.
func rewriteAttributes(p *workerpb.Prompt, f func(map[string]string) map[string]string) *workerpb.Prompt {
	q := proto.Clone(p).(*workerpb.Prompt)
	for _, e := range q.Elements {
		e.Attributes = f(e.Attributes)
	}
	for _, a := range q.History {
		a.ElementAttributes = f(a.ElementAttributes)
	}
	if q.Item != nil {
		q.Item.Attributes = f(q.Item.Attributes)
	}
	return q
}

// answersOf returns the samples, the log-probs of the ground truths and the
// gradient of an SFT batch on prompts ps of ep.
func answersOf(t *testing.T, p *Policy, ep *dataset.Episode, ps []*workerpb.Prompt) ([]*workerpb.Candidates, []*workerpb.TokenLogProbs, []float32) {
	t.Helper()
	cands, err := p.Generate(ps, sampleOptions(4, 3))
	if err != nil {
		t.Fatal(err)
	}
	scored := make([]*workerpb.Scored, len(ps))
	items := make([]*workerpb.Weighted, len(ps))
	for j := range ps {
		scored[j] = &workerpb.Scored{Prompt: ps[j], Answer: &workerpb.Answer{Text: truth(ep, j)}}
		items[j] = &workerpb.Weighted{Prompt: ps[j], Answer: scored[j].Answer, SequenceWeight: 0.5}
	}
	lps, err := p.LogProbs(scored, worker.ScoreOptions{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Backward(items); err != nil {
		t.Fatal(err)
	}
	g := p.Gradient()
	clear(p.grad)
	return cands, lps, g
}

// sameAnswers reports whether two calls of answersOf gave identical results.
func sameAnswers(c1, c2 []*workerpb.Candidates, l1, l2 []*workerpb.TokenLogProbs, g1, g2 []float32) bool {
	for i := range c1 {
		for g := range c1[i].Samples {
			if !proto2Equal(c1[i].Samples[g], c2[i].Samples[g]) {
				return false
			}
		}
		if !slices.Equal(l1[i].TokenIds, l2[i].TokenIds) || !slices.Equal(l1[i].Current, l2[i].Current) {
			return false
		}
	}
	return slices.Equal(g1, g2)
}

// TestTokensIgnoreAttributes: in the tokens architecture, prompts whose
// attribute maps are removed or scrambled give the same samples, log-probs and
// gradients as the originals, on every stage, after some training (so that the
// match module's weights are not 0). The features architecture, given the same
// scrambled prompts, answers differently: the test can tell.
func TestTokensIgnoreAttributes(t *testing.T) {
	eps := episodes(t, 8, 21)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, arch := range []string{ArchTokens, ArchFeatures} {
		p := configured(t, 4, map[string]string{"arch": arch})
		sftEpoch(t, p, eps[:6], 1e-2)
		differs := false
		for i := 6; i < 8; i++ {
			ep := &eps[i]
			ps := prompts(ep)
			stripped, scrambled := make([]*workerpb.Prompt, len(ps)), make([]*workerpb.Prompt, len(ps))
			for j, pr := range ps {
				stripped[j], scrambled[j] = stripAttributes(pr), scrambleAttributes(pr, rng)
			}
			c0, l0, g0 := answersOf(t, p, ep, ps)
			c1, l1, g1 := answersOf(t, p, ep, stripped)
			c2, l2, g2 := answersOf(t, p, ep, scrambled)
			same := sameAnswers(c0, c1, l0, l1, g0, g1) && sameAnswers(c0, c2, l0, l2, g0, g2)
			if arch == ArchTokens && !same {
				t.Errorf("%s: tokens answers change when attributes are removed or scrambled", ep.ID)
			}
			differs = differs || !same
		}
		if arch == ArchFeatures && !differs {
			t.Error("the features architecture ignores scrambled attributes too: the test cannot tell")
		}
	}
}

// TestTokensDeterministic is TestDeterministic in the tokens architecture.
func TestTokensDeterministic(t *testing.T) {
	checkDeterministic(t, tokensOptions(map[string]string{"hash_bits": "12", "embed_bits": "8"}))
}

// TestTokensSaveLoad: a tokens state loads into a fresh policy and answers the
// same, Describe names the architecture, and a policy configured with the other
// architecture refuses the state with an error that says so.
func TestTokensSaveLoad(t *testing.T) {
	ep := &episodes(t, 2, 6)[1]
	ps := prompts(ep)
	p := configured(t, 2, tokensOptions(map[string]string{"hash_bits": "10", "hidden": "8", "embed_bits": "8", "embed_dim": "16"}))
	sftEpoch(t, p, []dataset.Episode{*ep}, 1e-2)
	if d := p.Describe().Model; !strings.Contains(d, "arch=tokens") {
		t.Errorf("Describe: %q does not name the architecture", d)
	}
	q, state := reloaded(t, p)
	if dq, dp := q.Describe(), p.Describe(); dq.Model != dp.Model || dq.Parameters != dp.Parameters || dq.Steps != dp.Steps {
		t.Errorf("loaded %+v, saved %+v", q.Describe(), p.Describe())
	}
	sameGenerate(t, p, q, ps)
	f := configured(t, 2, map[string]string{"hash_bits": "10", "hidden": "8"})
	err := f.Load(bytes.NewReader(state))
	if err == nil || !strings.Contains(err.Error(), `architecture "tokens"`) || !strings.Contains(err.Error(), "arch=tokens") {
		t.Errorf("a features policy loading a tokens state: %v, want an error naming both architectures", err)
	}
	if !strings.Contains(f.Describe().Model, "arch=features") {
		t.Errorf("a refused Load changed the policy: %q", f.Describe().Model)
	}
}

// recAccuracy is the greedy accuracy on the recommend steps of eps.
func recAccuracy(t testing.TB, p *Policy, eps []dataset.Episode) float64 {
	return evaluate(t, p, eps).of(dataset.StageRecommend)
}

// TestTokensLearns trains the tokens policy with SFT on 36 generated episodes
// and checks that its greedy Yes/No accuracy on 36 held-out episodes is well
// above the majority-class rate: the match module has learnt which history
// words matter. It reads no attribute, so unlike the features policy it cannot
// score 100%: preferences it must find among distractors (a chip clicked twice,
// a sort order, a Back), minimum ratings met by better values.
func TestTokensLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	train := episodes(t, 36, 11)
	heldOut := episodes(t, 36, 12)
	p := configured(t, 1, tokensOptions(nil))
	before := recAccuracy(t, p, heldOut)
	for range 6 {
		sftEpoch(t, p, train, 3e-3)
	}
	got, majority := recAccuracy(t, p, heldOut), majorityRate(heldOut)
	t.Logf("held-out RecAcc %.3f before, %.3f after 6 epochs; majority class %.3f; train RecAcc %.3f",
		before, got, majority, recAccuracy(t, p, train))
	if got < majority+0.1 {
		t.Errorf("held-out RecAcc %.3f after SFT, want >= majority %.3f + 0.10", got, majority)
	}
}
