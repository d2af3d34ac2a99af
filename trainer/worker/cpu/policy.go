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
	"math/rand/v2"
	"runtime"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Policy is the CPU reference policy: a worker.Policy. The zero value is not
// ready; use New, then Configure (or Load). Locking is the server's (see
// worker.Policy).
type Policy struct {
	threads, defaultThreads int
	opt                     Options
	rows                    int
	params, ref             []float64
	m, v, grad              []float64
	steps                   int64
	// grads recycles Backward's row indexes and gradient blocks.
	grads gradsPool
}

var _ worker.Policy = (*Policy)(nil)

// New returns an unconfigured policy that runs Generate, LogProbs and Backward on
// up to threads goroutines (GOMAXPROCS when threads < 1).
func New(threads int) *Policy {
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &Policy{threads: threads, defaultThreads: threads, opt: DefaultOptions()}
}

// Configure initialises the policy from seed: table entries and w2 drawn from
// normal distributions (standard deviations init_scale and 1/sqrt(H)) by a PCG
// stream seeded with seed, b1 = 0; in the tokens architecture then the word
// embeddings U, each row a standard normal vector scaled to length embedScale
// (read as length 1, see tokens.go), and the
// rest of the match module 0; the reference equal to the weights; zero moments,
// step count and gradient.
func (p *Policy) Configure(seed uint64, options map[string]string) error {
	o, threads, err := parseOptions(options)
	if err != nil {
		return err
	}
	p.threads = p.defaultThreads
	if threads > 0 {
		p.threads = threads
	}
	p.reset(o)
	rng := rand.New(rand.NewPCG(seed, 0x6573706f2d637075)) // "espo-cpu"
	net := p.net(p.params)
	for i := range net.E {
		net.E[i] = rng.NormFloat64() * o.InitScale
	}
	for i := range net.w2 {
		net.w2[i] = rng.NormFloat64() / sqrt(float64(o.Hidden))
	}
	if net.match != nil {
		initEmbeddings(net.match, rng)
	}
	copy(p.ref, p.params)
	return nil
}

// initEmbeddings draws every row of U as a standard normal vector scaled to
// length embedScale, so that, read divided by embedScale^2, U_w . U_w = 1 and
// two different words have a dot product of about N(0, 1/D).
func initEmbeddings(m *matchNet, rng *rand.Rand) {
	for r := 0; r*m.D < len(m.U); r++ {
		u := m.row(int32(r))
		for k := range u {
			u[k] = rng.NormFloat64()
		}
		addScaled(u, u, embedScale/l2(u)-1)
	}
}

// reset allocates a zero state for options o.
func (p *Policy) reset(o Options) {
	p.opt, p.rows, p.steps = o, o.rows(), 0
	n := o.paramCount()
	p.params, p.ref = make([]float64, n), make([]float64, n)
	p.m, p.v, p.grad = make([]float64, n), make([]float64, n), make([]float64, n)
}

// Describe names the model, its architecture and its size.
func (p *Policy) Describe() worker.Description {
	model := fmt.Sprintf("espo-cpu-mlp arch=features (attributes and evidence features; hashed features 2^%d x %d tanh units, 1 hidden layer)",
		p.opt.HashBits, p.opt.Hidden)
	if p.opt.tokens() {
		model = fmt.Sprintf("espo-cpu-mlp arch=tokens (screen words only; hashed features 2^%d x %d tanh units, 1 hidden layer; "+
			"Yes/No match module over 2^%d x %d tied word embeddings)", p.opt.HashBits, p.opt.Hidden, p.opt.EmbedBits, p.opt.EmbedDim)
	}
	return worker.Description{
		Model:      model,
		Device:     fmt.Sprintf("cpu (%d threads)", p.threads),
		Parameters: int64(p.opt.paramCount()),
		Steps:      p.steps,
	}
}

func (p *Policy) mask() uint64 { return uint64(p.rows - 1) }

// net reads params as the network of the policy's architecture.
func (p *Policy) net(params []float64) netView {
	n := newNetView(params, p.rows, p.opt.Hidden)
	if p.opt.tokens() {
		n.match = newMatchNet(params, paramCount(p.rows, p.opt.Hidden), 1<<p.opt.EmbedBits, p.opt.EmbedDim)
	}
	return n
}

// newView analyses a prompt for the policy's architecture.
func (p *Policy) newView(pr *workerpb.Prompt) *view {
	if p.opt.tokens() {
		return newScreenView(pr, p.mask(), uint64(1<<p.opt.EmbedBits-1))
	}
	return newView(pr, p.mask())
}

// promptSeed keys the sampling stream of a prompt by the call's seed, the
// episode id and the step index, so a prompt's candidates do not depend on the
// other prompts of the call, their order or the goroutines (two prompts with the
// same id and index in one call get the same candidates).
func promptSeed(p *workerpb.Prompt) uint64 {
	return hcat(hs(p.GetEpisodeId()), uint64(uint32(p.GetStepIndex())))
}

// Generate samples o.Samples answers per prompt, each with its token ids and
// per-token log-probs at temperature 1. Prompt i is sampled by a PCG stream
// seeded with (o.Seed, promptSeed), G answers in turn.
func (p *Policy) Generate(prompts []*workerpb.Prompt, o worker.SampleOptions) ([]*workerpb.Candidates, error) {
	out := make([]*workerpb.Candidates, len(prompts))
	net := p.net(p.params)
	err := parallel(len(prompts), p.threads, func(i int) error {
		v := p.newView(prompts[i])
		s := &scorer{sums: newSums(net, v)}
		pk := &sampler{rng: rand.New(rand.NewPCG(o.Seed, promptSeed(prompts[i]))), temperature: o.Temperature, greedy: o.Greedy}
		c := &workerpb.Candidates{Samples: make([]*workerpb.Sample, o.Samples)}
		for g := range o.Samples {
			w := &walk{v: v, s: s, pk: pk, maxTokens: o.MaxTokens, maxWords: p.opt.MaxIntentWords}
			a, err := w.run()
			if err != nil {
				return err
			}
			c.Samples[g] = &workerpb.Sample{Answer: &workerpb.Answer{Text: render(a), TokenIds: w.tokens}, Logprobs: w.logps}
		}
		out[i] = c
		return nil
	})
	return out, err
}

// prepared is a prompt's view with its static sums under the current and the
// reference weights, shared by the answers of one call that have that prompt.
type prepared struct {
	v       *view
	cur, rf *sums
}

// prepare analyses the distinct prompts (by pointer) of n answers, in parallel.
func (p *Policy) prepare(n int, prompt func(i int) *workerpb.Prompt) ([]*prepared, error) {
	index := map[*workerpb.Prompt]int{}
	var distinct []*workerpb.Prompt
	which := make([]int, n)
	for i := range n {
		pr := prompt(i)
		if pr == nil {
			return nil, fmt.Errorf("%w: item %d has no prompt", worker.ErrInvalid, i)
		}
		k, ok := index[pr]
		if !ok {
			k = len(distinct)
			index[pr] = k
			distinct = append(distinct, pr)
		}
		which[i] = k
	}
	preps := make([]*prepared, len(distinct))
	cur, rf := p.net(p.params), p.net(p.ref)
	_ = parallel(len(distinct), p.threads, func(k int) error {
		v := p.newView(distinct[k])
		preps[k] = &prepared{v: v, cur: newSums(cur, v), rf: newSums(rf, v)}
		return nil
	})
	out := make([]*prepared, n)
	for i, k := range which {
		out[i] = preps[k]
	}
	return out, nil
}

// answerTokens returns the tokens of an answer: its token ids, or its text
// tokenized on the view.
func (p *Policy) answerTokens(v *view, a *workerpb.Answer) ([]int32, error) {
	if ids := a.GetTokenIds(); len(ids) > 0 {
		return ids, nil
	}
	return v.tokenize(a.GetText(), p.opt.MaxIntentWords)
}

// score replays tokens on a view under the network of zs, adding the gradient
// of -sum_t weight(t) logp_t to g when g is set; it returns the per-token
// log-probs.
func (p *Policy) score(v *view, zs *sums, toks []int32, g *grads, weight func(int) float64) ([]float64, error) {
	f := &forced{tokens: toks}
	w := &walk{v: v, s: &scorer{sums: zs}, pk: f, maxWords: p.opt.MaxIntentWords, g: g, weight: weight}
	if _, err := w.run(); err != nil {
		return nil, err
	}
	if err := f.done(); err != nil {
		return nil, err
	}
	return w.logps, nil
}

// LogProbs returns each answer's tokens with their log-probs under the current
// weights (unless o.ReferenceOnly) and, when o.Reference, the reference weights.
func (p *Policy) LogProbs(items []*workerpb.Scored, o worker.ScoreOptions) ([]*workerpb.TokenLogProbs, error) {
	preps, err := p.prepare(len(items), func(i int) *workerpb.Prompt { return items[i].GetPrompt() })
	if err != nil {
		return nil, err
	}
	out := make([]*workerpb.TokenLogProbs, len(items))
	err = parallel(len(items), p.threads, func(i int) error {
		pp := preps[i]
		toks, err := p.answerTokens(pp.v, items[i].GetAnswer())
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if out[i], err = p.scoreUnder(pp, toks, o); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		return nil
	})
	return out, err
}

// scoreUnder returns the log-probs of toks under the networks o asks for: the
// current one unless o.ReferenceOnly, the reference one when o.Reference.
func (p *Policy) scoreUnder(pp *prepared, toks []int32, o worker.ScoreOptions) (*workerpb.TokenLogProbs, error) {
	r := &workerpb.TokenLogProbs{TokenIds: toks}
	var err error
	if !o.ReferenceOnly {
		if r.Current, err = p.score(pp.v, pp.cur, toks, nil, nil); err != nil {
			return nil, err
		}
	}
	if o.Reference {
		if r.Reference, err = p.score(pp.v, pp.rf, toks, nil, nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Backward accumulates the gradient of -sum_i sum_t w_{i,t} logp_{i,t}. Each
// answer's gradient is computed on its own (in parallel) and added to the
// accumulator in the order of the items, so the result does not depend on the
// threads. The accumulator is left unchanged when any item is invalid.
func (p *Policy) Backward(items []*workerpb.Weighted) (float64, int64, error) {
	preps, err := p.prepare(len(items), func(i int) *workerpb.Prompt { return items[i].GetPrompt() })
	if err != nil {
		return 0, 0, err
	}
	gs := make([]*grads, len(items))
	objectives := make([]float64, len(items))
	counts := make([]int, len(items))
	err = parallel(len(items), p.threads, func(i int) error {
		it, pp := items[i], preps[i]
		toks, err := p.answerTokens(pp.v, it.GetAnswer())
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		tw := it.GetTokenWeights()
		if len(tw) > 0 && len(tw) != len(toks) {
			return fmt.Errorf("%w: item %d: %d token weights for %d tokens", worker.ErrInvalid, i, len(tw), len(toks))
		}
		weight := func(t int) float64 {
			if len(tw) > 0 {
				return tw[t]
			}
			return it.GetSequenceWeight()
		}
		g := newGrads(&p.grads, len(pp.v.sets), p.rows, p.opt.Hidden)
		logps, err := p.score(pp.v, pp.cur, toks, g, weight)
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		g.finish(pp.v)
		g.computed()
		if g.dDelta != 0 {
			g.match = newMatchGrads(p.opt.EmbedDim)
			pp.cur.match.backward(pp.cur.n.match, g.match, g.dDelta)
		}
		for t, lp := range logps {
			objectives[i] += weight(t) * lp
		}
		gs[i], counts[i] = g, len(toks)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	var objective float64
	var tokens int64
	for i, g := range gs {
		g.addTo(p.grad, p.rows)
		g.release()
		objective += objectives[i]
		tokens += int64(counts[i])
	}
	return objective, tokens, nil
}

// Gradient returns the accumulated gradient as float32.
func (p *Policy) Gradient() []float32 {
	out := make([]float32, len(p.grad))
	for i, g := range p.grad {
		out[i] = float32(g)
	}
	return out
}

// SnapshotReference copies the weights into the reference.
func (p *Policy) SnapshotReference() error {
	copy(p.ref, p.params)
	return nil
}
