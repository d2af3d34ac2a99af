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
	"encoding/gob"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// scoredSamples pairs every sample with its prompt.
func scoredSamples(ps []*workerpb.Prompt, cands []*workerpb.Candidates) []*workerpb.Scored {
	var out []*workerpb.Scored
	for i, c := range cands {
		for _, s := range c.Samples {
			out = append(out, &workerpb.Scored{Prompt: ps[i], Answer: s.Answer})
		}
	}
	return out
}

func TestGenerateLogProbsAgree(t *testing.T) {
	p := configured(t, 5, nil)
	ep := &episodes(t, 3, 2)[2]
	ps := prompts(ep)
	cands, err := p.Generate(ps, sampleOptions(5, 9))
	if err != nil {
		t.Fatal(err)
	}
	scored := scoredSamples(ps, cands)
	lps, err := p.LogProbs(scored, worker.ScoreOptions{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for i, c := range cands {
		if len(c.Samples) != 5 {
			t.Fatalf("prompt %d: %d samples, want 5", i, len(c.Samples))
		}
		for _, s := range c.Samples {
			if _, err := espo.ParseAnswer(s.Answer.Text); err != nil {
				t.Errorf("prompt %d: answer %q does not parse: %v", i, s.Answer.Text, err)
			}
			got := lps[k]
			k++
			if !slices.Equal(got.TokenIds, s.Answer.TokenIds) || !slices.Equal(got.Current, s.Logprobs) {
				t.Errorf("prompt %d: LogProbs %v %v, Generate %v %v", i, got.TokenIds, got.Current, s.Answer.TokenIds, s.Logprobs)
			}
			// The reference is the initial policy, so far the same.
			if !slices.Equal(got.Reference, s.Logprobs) {
				t.Errorf("prompt %d: reference %v, want %v", i, got.Reference, s.Logprobs)
			}
		}
	}
}

// TestReferenceOnlySkipsTheCurrentPolicy: LogProbs with ReferenceOnly leaves every
// Current empty and returns the token ids and reference log-probs of the full call,
// for sampled answers and for text-only ones, after an optimizer step has moved the
// weights away from the reference (so that current and reference differ).
func TestReferenceOnlySkipsTheCurrentPolicy(t *testing.T) {
	p := configured(t, 5, nil)
	ep := &episodes(t, 3, 4)[1]
	ps := prompts(ep)
	var sft []*workerpb.Weighted
	for j, pr := range ps {
		sft = append(sft, &workerpb.Weighted{Prompt: pr, Answer: &workerpb.Answer{Text: truth(ep, j)}, SequenceWeight: 1})
	}
	if _, _, err := p.Backward(sft); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Step(worker.StepOptions{LearningRate: 0.05, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}); err != nil {
		t.Fatal(err)
	}
	cands, err := p.Generate(ps, sampleOptions(3, 2))
	if err != nil {
		t.Fatal(err)
	}
	scored := scoredSamples(ps, cands)
	for j, pr := range ps {
		scored = append(scored, &workerpb.Scored{Prompt: pr, Answer: &workerpb.Answer{Text: truth(ep, j)}})
	}
	full, err := p.LogProbs(scored, worker.ScoreOptions{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	only, err := p.LogProbs(scored, worker.ScoreOptions{Reference: true, ReferenceOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for i := range scored {
		if len(only[i].Current) != 0 {
			t.Errorf("item %d: reference only returned %d current log-probs, want none", i, len(only[i].Current))
		}
		if len(full[i].Reference) == 0 || !slices.Equal(only[i].Reference, full[i].Reference) {
			t.Errorf("item %d: reference only gives reference %v, the full call %v", i, only[i].Reference, full[i].Reference)
		}
		if !slices.Equal(only[i].TokenIds, full[i].TokenIds) {
			t.Errorf("item %d: reference only gives tokens %v, the full call %v", i, only[i].TokenIds, full[i].TokenIds)
		}
		moved = moved || !slices.Equal(full[i].Current, full[i].Reference)
	}
	if !moved {
		t.Fatal("the step left current and reference log-probs equal: the test cannot tell them apart")
	}
}

// TestTemperatureAndGreedy checks that log-probs are reported at temperature 1
// whatever the sampling temperature, and that greedy answers take the most
// likely option of every decision.
func TestTemperatureAndGreedy(t *testing.T) {
	p := configured(t, 5, nil)
	ep := &episodes(t, 1, 3)[0]
	ps := prompts(ep)
	for _, o := range []worker.SampleOptions{{Samples: 3, Temperature: 0.3, Seed: 1}, {Samples: 2, Temperature: 1, Greedy: true}} {
		cands, err := p.Generate(ps, o)
		if err != nil {
			t.Fatal(err)
		}
		lps, err := p.LogProbs(scoredSamples(ps, cands), worker.ScoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, c := range cands {
			for _, s := range c.Samples {
				if !slices.Equal(lps[k].Current, s.Logprobs) {
					t.Errorf("%+v: LogProbs %v, Generate %v", o, lps[k].Current, s.Logprobs)
				}
				k++
			}
			if o.Greedy && !proto2Equal(c.Samples[0], c.Samples[1]) {
				t.Errorf("greedy samples differ: %v %v", c.Samples[0], c.Samples[1])
			}
		}
	}
}

func proto2Equal(a, b *workerpb.Sample) bool {
	return a.Answer.Text == b.Answer.Text && slices.Equal(a.Answer.TokenIds, b.Answer.TokenIds) && slices.Equal(a.Logprobs, b.Logprobs)
}

func TestMaxTokensTruncates(t *testing.T) {
	p := configured(t, 5, nil)
	ep := &episodes(t, 1, 3)[0]
	ps := prompts(ep)
	cands, err := p.Generate(ps, worker.SampleOptions{Samples: 4, Temperature: 1, Seed: 4, MaxTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		for _, s := range c.Samples {
			if n := len(s.Answer.TokenIds); n > 3 || n != len(s.Logprobs) {
				t.Errorf("%d tokens and %d log-probs, want at most 3", n, len(s.Logprobs))
			}
		}
	}
	if _, err := p.LogProbs(scoredSamples(ps, cands), worker.ScoreOptions{}); err != nil {
		t.Fatalf("truncated answers must score: %v", err)
	}
}

// TestTokenizeTargets checks that every ground-truth answer of an episode maps to
// tokens whose answer is right: the click lands in the target box, the type,
// scroll and decision values match, and the intent text keeps its similarity.
func TestTokenizeTargets(t *testing.T) {
	p := configured(t, 5, nil)
	rw, err := espo.NewRewarder(espo.DefaultRewardConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	eps := episodes(t, 12, 8)
	rw.SetSlotVocab(dataset.SlotVocab(eps))
	for _, ep := range eps {
		for j := range ep.Steps {
			v := newView(worker.PromptFromStep(&ep, j), p.mask())
			toks, err := v.tokenize(truth(&ep, j), p.opt.MaxIntentWords)
			if err != nil {
				t.Fatal(err)
			}
			w := &walk{v: v, s: &scorer{sums: newSums(p.net(p.params), v)}, pk: &forced{tokens: toks}, maxWords: p.opt.MaxIntentWords}
			a, err := w.run()
			if err != nil {
				t.Fatal(err)
			}
			gt := ep.GroundTruth(&ep.Steps[j])
			sc := rw.ScoreAction(&gt, a)
			typed := ep.Steps[j].Answer.Action == espo.ActionType
			if !sc.TypeOK || !sc.ValueOK && !typed {
				t.Errorf("%s step %d: target %q maps to %+v (similarity %.3f)", ep.ID, j, truth(&ep, j), a, sc.Similarity)
			}
		}
	}
}

func TestInvalidAnswers(t *testing.T) {
	p := configured(t, 5, nil)
	ep := &episodes(t, 1, 3)[0]
	pr := worker.PromptFromStep(ep, 0)
	for _, a := range []*workerpb.Answer{
		{Text: "click somewhere"},
		{Text: espo.FormatAnswer("", espo.Action{Type: "long_press", Point: espo.NoPoint, Text: espo.NoText})},
		{TokenIds: []int32{tokenID(kindElement, 0)}},
		{TokenIds: []int32{tokenID(kindType, 0), tokenID(kindElement, 9999)}},
		{TokenIds: []int32{tokenID(kindType, 3), tokenID(kindElement, 0)}},
	} {
		_, err := p.LogProbs([]*workerpb.Scored{{Prompt: pr, Answer: a}}, worker.ScoreOptions{})
		if !errors.Is(err, worker.ErrInvalid) {
			t.Errorf("answer %v: error %v, want ErrInvalid", a, err)
		}
	}
	_, _, err := p.Backward([]*workerpb.Weighted{{Prompt: pr, Answer: &workerpb.Answer{Text: truth(ep, 0)}, TokenWeights: []float64{1, 2, 3}}})
	if !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("3 weights for 2 tokens: error %v, want ErrInvalid", err)
	}
	if n := l2(p.grad); n != 0 {
		t.Errorf("a refused Backward changed the gradient (norm %v)", n)
	}
}

// TestDeterministic checks that the same seeds give the same weights, answers
// and gradients, whatever the number of threads.
func TestDeterministic(t *testing.T) {
	checkDeterministic(t, map[string]string{"hash_bits": "12"})
}

// checkDeterministic runs TestDeterministic's checks with options.
func checkDeterministic(t *testing.T, options map[string]string) {
	ep := &episodes(t, 2, 4)[1]
	ps := prompts(ep)
	run := func(threads string) ([]*workerpb.Candidates, []float32) {
		o := map[string]string{"threads": threads}
		for k, v := range options {
			o[k] = v
		}
		p := configured(t, 11, o)
		cands, err := p.Generate(ps, sampleOptions(3, 21))
		if err != nil {
			t.Fatal(err)
		}
		var items []*workerpb.Weighted
		for i, c := range cands {
			for _, s := range c.Samples {
				items = append(items, &workerpb.Weighted{Prompt: ps[i], Answer: s.Answer, SequenceWeight: 0.1 * float64(i-5)})
			}
		}
		if _, _, err := p.Backward(items); err != nil {
			t.Fatal(err)
		}
		return cands, p.Gradient()
	}
	c1, g1 := run("1")
	c2, g2 := run("2")
	c3, g3 := run("2")
	for i := range c1 {
		for g := range c1[i].Samples {
			if !proto2Equal(c1[i].Samples[g], c2[i].Samples[g]) || !proto2Equal(c1[i].Samples[g], c3[i].Samples[g]) {
				t.Fatalf("prompt %d sample %d differs between runs", i, g)
			}
		}
	}
	if !slices.Equal(g1, g2) || !slices.Equal(g1, g3) {
		t.Fatal("gradients differ between runs")
	}
}

// TestGenerateSeed checks that another seed gives other answers, and that a
// prompt's answers do not depend on the other prompts of the call.
func TestGenerateSeed(t *testing.T) {
	p := configured(t, 1, nil)
	ep := &episodes(t, 1, 4)[0]
	ps := prompts(ep)
	a, _ := p.Generate(ps, sampleOptions(4, 1))
	b, _ := p.Generate(ps, sampleOptions(4, 2))
	c, _ := p.Generate([]*workerpb.Prompt{ps[5], ps[2]}, sampleOptions(4, 1))
	same := 0
	for i := range a {
		for g := range a[i].Samples {
			if proto2Equal(a[i].Samples[g], b[i].Samples[g]) {
				same++
			}
		}
	}
	if same == len(a)*4 {
		t.Error("seeds 1 and 2 gave the same answers")
	}
	for g := range 4 {
		if !proto2Equal(c[0].Samples[g], a[5].Samples[g]) || !proto2Equal(c[1].Samples[g], a[2].Samples[g]) {
			t.Fatal("a prompt's answers depend on the other prompts of the call")
		}
	}
}

func TestSaveLoad(t *testing.T) {
	ep := &episodes(t, 2, 6)[1]
	ps := prompts(ep)
	p := configured(t, 2, map[string]string{"hash_bits": "12", "hidden": "8"})
	train := func(p *Policy) {
		items := make([]*workerpb.Weighted, len(ps))
		for j := range ps {
			items[j] = &workerpb.Weighted{Prompt: ps[j], Answer: &workerpb.Answer{Text: truth(ep, j)}, SequenceWeight: 0.1}
		}
		if _, _, err := p.Backward(items); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Step(worker.StepOptions{LearningRate: 0.01, WeightDecay: 0.01, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}); err != nil {
			t.Fatal(err)
		}
	}
	train(p)
	if err := p.SnapshotReference(); err != nil {
		t.Fatal(err)
	}
	train(p)
	q, state := reloaded(t, p)
	if q.Describe().Parameters != p.Describe().Parameters || q.Describe().Steps != 2 {
		t.Fatalf("loaded %+v, saved %+v", q.Describe(), p.Describe())
	}
	pa, qa := sameGenerate(t, p, q, ps)
	pl, _ := p.LogProbs(scoredSamples(ps, pa), worker.ScoreOptions{Reference: true})
	ql, _ := q.LogProbs(scoredSamples(ps, qa), worker.ScoreOptions{Reference: true})
	for i := range pl {
		if !slices.Equal(pl[i].Reference, ql[i].Reference) {
			t.Fatal("loaded reference differs")
		}
	}
	// The optimizer state came along: one more step stays identical.
	train(p)
	train(q)
	if !slices.Equal(p.params, q.params) || p.steps != q.steps || p.steps != 3 {
		t.Fatalf("after one more step the weights differ (steps %d, %d)", p.steps, q.steps)
	}
	if err := q.Load(bytes.NewReader(state[:len(state)/2])); err == nil {
		t.Error("a truncated state loaded")
	}
	if !slices.Equal(p.params, q.params) {
		t.Error("a failed Load changed the state")
	}
}

// TestLoadReadsAVersion1State: a state in the format Save wrote before version 2
// (the vectors inside the gob value) loads into the same weights, reference,
// moments and step count; the current format refuses data after its vectors.
func TestLoadReadsAVersion1State(t *testing.T) {
	ep := &episodes(t, 2, 6)[1]
	ps := prompts(ep)
	p := configured(t, 2, map[string]string{"hash_bits": "10", "hidden": "4"})
	items := make([]*workerpb.Weighted, len(ps))
	for j := range ps {
		items[j] = &workerpb.Weighted{Prompt: ps[j], Answer: &workerpb.Answer{Text: truth(ep, j)}, SequenceWeight: 0.1}
	}
	if _, _, err := p.Backward(items); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Step(worker.StepOptions{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}); err != nil {
		t.Fatal(err)
	}
	var v1 bytes.Buffer
	if err := gob.NewEncoder(&v1).Encode(savedState{Version: 1, Format: stateFormat, Options: p.opt, Steps: p.steps,
		Params: p.params, Ref: p.ref, Moment1: p.m, Moment2: p.v}); err != nil {
		t.Fatal(err)
	}
	q := New(1)
	if err := q.Load(&v1); err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2][]float64{"weights": {p.params, q.params}, "reference": {p.ref, q.ref},
		"first moments": {p.m, q.m}, "second moments": {p.v, q.v}} {
		if !slices.Equal(pair[0], pair[1]) {
			t.Errorf("the version 1 state's %s differ from the saved policy's", name)
		}
	}
	if q.steps != 1 || q.opt != p.opt {
		t.Errorf("loaded %d steps with options %+v, want 1 with %+v", q.steps, q.opt, p.opt)
	}
	_, state := reloaded(t, p)
	if err := q.Load(bytes.NewReader(append(state, 0))); err == nil || !strings.Contains(err.Error(), "data after the last vector") {
		t.Errorf("a state with a byte after its vectors: %v", err)
	}
}

// TestAdamW checks one and two steps against the formulas computed by hand, with
// clipping, weight decay and an external gradient.
// sameGenerate samples G = 3 answers per prompt from p and q with the same seed,
// fails unless they are equal, and returns both.
func sameGenerate(t *testing.T, p, q *Policy, ps []*workerpb.Prompt) (pa, qa []*workerpb.Candidates) {
	t.Helper()
	pa, _ = p.Generate(ps, sampleOptions(3, 5))
	qa, _ = q.Generate(ps, sampleOptions(3, 5))
	for i := range pa {
		for g := range pa[i].Samples {
			if !proto2Equal(pa[i].Samples[g], qa[i].Samples[g]) {
				t.Fatalf("prompt %d: the loaded policy answers differently", i)
			}
		}
	}
	return pa, qa
}

func TestAdamW(t *testing.T) {
	p := configured(t, 1, map[string]string{"hash_bits": "4", "hidden": "1"})
	theta0 := slices.Clone(p.params)
	n := len(p.params)
	g1 := make([]float32, n)
	for i := range g1 {
		g1[i] = float32(i%5) - 2 // norm > 1 for the clipping
	}
	o := worker.StepOptions{LearningRate: 0.1, WeightDecay: 0.5, Beta1: 0.8, Beta2: 0.9, Epsilon: 1e-3, MaxGradNorm: 1, Gradient: g1}
	norm, err := p.Step(o)
	if err != nil {
		t.Fatal(err)
	}
	var ss float64
	for _, g := range g1 {
		ss += float64(g) * float64(g)
	}
	if want := math.Sqrt(ss); math.Abs(norm-want) > 1e-12 {
		t.Fatalf("norm %v, want %v", norm, want)
	}
	scale := 1 / (math.Sqrt(ss) + 1e-6)
	m, v := make([]float64, n), make([]float64, n)
	want := slices.Clone(theta0)
	for i := range want {
		g := float64(g1[i]) * scale
		m[i] = 0.2 * g
		v[i] = 0.1 * g * g
		mhat, vhat := m[i]/(1-0.8), v[i]/(1-0.9)
		want[i] = want[i] - 0.1*0.5*want[i] - 0.1*mhat/(math.Sqrt(vhat)+1e-3)
	}
	assertClose(t, p.params, want, 1e-12)
	// Second step on the accumulated gradient (zero here: only decay and momentum).
	o.Gradient, o.MaxGradNorm = nil, 0
	if _, err := p.Step(o); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		m[i] *= 0.8
		v[i] *= 0.9
		mhat, vhat := m[i]/(1-0.8*0.8), v[i]/(1-0.9*0.9)
		want[i] = want[i] - 0.1*0.5*want[i] - 0.1*mhat/(math.Sqrt(vhat)+1e-3)
	}
	assertClose(t, p.params, want, 1e-12)
	if p.steps != 2 {
		t.Errorf("steps %d, want 2", p.steps)
	}
	if _, err := p.Step(worker.StepOptions{Gradient: make([]float32, 3)}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("a gradient of the wrong length: %v, want ErrInvalid", err)
	}
}

func assertClose(t *testing.T, got, want []float64, tol float64) {
	t.Helper()
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("value %d: %.15g, want %.15g", i, got[i], want[i])
		}
	}
}

func TestOptions(t *testing.T) {
	p := New(1)
	for _, bad := range []map[string]string{{"hidden": "0"}, {"hash_bits": "x"}, {"colour": "red"}, {"init_scale": "-1"}} {
		if err := p.Configure(1, bad); !errors.Is(err, worker.ErrInvalid) {
			t.Errorf("options %v: %v, want ErrInvalid", bad, err)
		}
	}
	if err := p.Configure(1, map[string]string{"hash_bits": "10", "hidden": "16"}); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Describe().Parameters, int64(1024*16+32); got != want {
		t.Errorf("parameters %d, want %d", got, want)
	}
}
