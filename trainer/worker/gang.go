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

package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Gang is the policy workers of one trainer, data-parallel: every member holds the
// same policy; each serves a share of a batch's requests, and every optimizer step
// applies the whole batch's gradient on every member.
//
// Calls that take a slice of requests deal them among the members: request i goes
// to member i mod Size, in every call, so that the requests of one episode at the
// same index meet the same member; a member serves its requests in order, the
// members concurrently. Every call fans out to the members concurrently; the first
// member to fail cancels the others' calls, and the error names it.
//
// Members that hold the model sharded (Description.Sharded) run every call that
// runs the model as a collective of all of them, so the gang calls each of them
// alike: as many Generate and LogProbs calls as the member with the most requests
// makes (the others make empty calls), a Backward call each, empty or not, and Save
// and Export on all (the first writes, the others help it gather the weights).
type Gang struct {
	members []Member
	// reduces is whether the members all-reduce gradients among themselves in Step
	// (Description.ReducesGradients of member 0, set by Configure).
	reduces bool
	// sharded is whether the members hold the model sharded (Description.Sharded of
	// member 0, set by Configure).
	sharded bool
}

// NewGang returns the gang of members, in that order; member 0 is the one whose
// state Save writes. It panics without members.
func NewGang(members ...Member) *Gang {
	if len(members) == 0 {
		panic("worker.NewGang: a gang needs at least one member")
	}
	return &Gang{members: members}
}

// Size returns the number of members.
func (g *Gang) Size() int { return len(g.members) }

// Close closes every member that holds a connection (an io.Closer, as Remote is).
func (g *Gang) Close() error {
	var errs []error
	for _, m := range g.members {
		if c, ok := m.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Configure initialises every member from s (remote members may still be starting:
// it waits for them until ctx ends) and returns member 0's description. A state to
// load, s.LoadPath, reaches each member as setups decides: the path to the members
// that read it themselves, the file's content (Setup.State, read once here) to the
// others. Every member must then report the same number of steps: one that does not
// has ignored the state (a worker that predates ConfigureRequest.state).
func (g *Gang) Configure(ctx context.Context, s Setup) (Description, error) {
	setups, err := g.setups(ctx, s)
	if err != nil {
		return Description{}, err
	}
	ds := make([]Description, len(g.members))
	err = g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
		ds[i], err = m.Configure(ctx, setups[i])
		return err
	})
	if err != nil {
		return Description{}, err
	}
	for i, d := range ds {
		if d.Steps != ds[0].Steps {
			return Description{}, memberError(i, g.members[i], fmt.Errorf("configured with %d optimizer steps, worker 0 with %d: "+
				"the members must start from the same state; a worker that ignores ConfigureRequest.state is too old for this trainer",
				d.Steps, ds[0].Steps))
		}
	}
	g.reduces, g.sharded = ds[0].ReducesGradients, ds[0].Sharded
	return ds[0], nil
}

// Rollouts asks for Options.Samples answers (1 when 0) to each of Prompts, sampled
// with Options (its Seed included).
type Rollouts struct {
	Prompts []Prompt
	Options SampleOptions
}

// Generate samples the answers of every request, dealt among the members: out[i]
// holds request i's, the answers to prompt j at j*Samples, ..., j*Samples+Samples-1.
// A sample whose SamplerLogProbs are neither empty nor one per token fails the call,
// naming its member.
func (g *Gang) Generate(ctx context.Context, reqs []Rollouts) ([][]Sample, error) {
	out := make([][]Sample, len(reqs))
	err := g.dealt(ctx, len(reqs), func(ctx context.Context, i int, m Member) error {
		r := &reqs[i]
		cs, err := m.Generate(ctx, r.Prompts, r.Options)
		if err != nil {
			return err
		}
		out[i], err = flatten(cs, len(r.Prompts), max(r.Options.Samples, 1))
		return err
	}, func(ctx context.Context, m Member) error {
		_, err := m.Generate(ctx, nil, reqs[0].Options)
		return err
	})
	return out, err
}

// flatten returns the candidates of n prompts, k each, in one slice, or an error
// when there are not that many, or when a sample has sampler log-probs, but not one
// per token.
func flatten(cs [][]Sample, n, k int) ([]Sample, error) {
	if len(cs) != n {
		return nil, fmt.Errorf("generate: %d candidate lists for %d prompts", len(cs), n)
	}
	out := make([]Sample, 0, n*k)
	for j, c := range cs {
		if len(c) != k {
			return nil, fmt.Errorf("generate: %d samples, want %d", len(c), k)
		}
		for g, s := range c {
			if m := len(s.SamplerLogProbs); m > 0 && m != len(s.LogProbs) {
				return nil, fmt.Errorf("generate: sample %d of prompt %d has %d sampler log-probs for %d tokens", g, j, m, len(s.LogProbs))
			}
		}
		out = append(out, c...)
	}
	return out, nil
}

// ReferenceLogProbs scores every request's answers under the reference policy
// (ScoreOptions.ReferenceOnly), dealt among the members: out[i][k] is reqs[i][k]'s.
// A member that ignores ReferenceOnly returns the current log-probs too.
func (g *Gang) ReferenceLogProbs(ctx context.Context, reqs [][]Scored) ([][]TokenLogProbs, error) {
	out := make([][]TokenLogProbs, len(reqs))
	o := ScoreOptions{Reference: true, ReferenceOnly: true}
	err := g.dealt(ctx, len(reqs), func(ctx context.Context, i int, m Member) error {
		lps, err := m.LogProbs(ctx, reqs[i], o)
		if err != nil {
			return err
		}
		if len(lps) != len(reqs[i]) {
			return fmt.Errorf("logprobs: %d results for %d answers", len(lps), len(reqs[i]))
		}
		out[i] = lps
		return nil
	}, func(ctx context.Context, m Member) error {
		_, err := m.LogProbs(ctx, nil, o)
		return err
	})
	return out, err
}

// WeightSyncTime returns the most time any member has spent so far copying the
// policy's updated weights into its sampling engine (a Remote member whose worker
// samples with vLLM; the others spend none): the members copy side by side, so the
// busiest one's time is the gang's.
func (g *Gang) WeightSyncTime() time.Duration {
	var most time.Duration
	for _, m := range g.members {
		if s, ok := m.(interface{ WeightSyncTime() time.Duration }); ok {
			most = max(most, s.WeightSyncTime())
		}
	}
	return most
}

// Backward accumulates the gradient of every request's weighted answers, dealt among
// the members (one Backward call per member with all of its requests), and returns
// the sum of their objectives and of their tokens.
func (g *Gang) Backward(ctx context.Context, reqs [][]Weighted) (Backwarded, error) {
	done := make([]Backwarded, len(g.members))
	err := g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
		var items []Weighted
		for r := i; r < len(reqs); r += len(g.members) {
			items = append(items, reqs[r]...)
		}
		if len(items) == 0 && !g.sharded {
			return nil
		}
		done[i], err = m.Backward(ctx, items)
		return err
	})
	var sum Backwarded
	for _, d := range done {
		sum.Objective += d.Objective
		sum.Tokens += d.Tokens
	}
	return sum, err
}

// Step applies one optimizer step to the batch's gradient on every member and
// returns member 0's gradient norm. With one member, or members that all-reduce
// among themselves, each applies its own accumulated gradient; otherwise the gang
// gathers every member's gradient, adds them in member order (the loss weights
// normalise over the whole batch, so the sum is the batch gradient) and has every
// member apply that sum. o.Gradient is the gang's to set and must be empty.
func (g *Gang) Step(ctx context.Context, o StepOptions) (float64, error) {
	if len(o.Gradient) > 0 {
		return 0, fmt.Errorf("%w: Gang.Step: StepOptions.Gradient must be empty: the gang sums its members' gradients", ErrInvalid)
	}
	if len(g.members) > 1 && !g.reduces {
		sum, err := g.sumGradients(ctx)
		if err != nil {
			return 0, err
		}
		o.Gradient = sum
	}
	norms := make([]float64, len(g.members))
	err := g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
		norms[i], err = m.Step(ctx, o)
		return err
	})
	return norms[0], err
}

// sumGradients gathers every member's accumulated gradient and adds them in member
// order.
func (g *Gang) sumGradients(ctx context.Context) ([]float32, error) {
	grads := make([][]float32, len(g.members))
	err := g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
		grads[i], err = m.Gradient(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	sum := make([]float32, len(grads[0]))
	for i, gr := range grads {
		if len(gr) != len(sum) {
			return nil, fmt.Errorf("worker %d has %d gradient values, worker 0 has %d", i, len(gr), len(sum))
		}
		for k, v := range gr {
			sum[k] += v
		}
	}
	return sum, nil
}

// SnapshotReference freezes every member's current weights as its reference.
func (g *Gang) SnapshotReference(ctx context.Context) error {
	return g.each(ctx, func(ctx context.Context, _ int, m Member) error { return m.SnapshotReference(ctx) })
}

// Save writes the gang's full state to path: replicated, member 0's, which every
// member shares, as one file; sharded, a folder of every member's shards, each
// member writing its own (each must be able to write path's folder). Configure's
// Setup.LoadPath loads either back, at any gang size.
func (g *Gang) Save(ctx context.Context, path string) error {
	if g.sharded {
		return g.each(ctx, func(ctx context.Context, _ int, m Member) error { return m.Save(ctx, path) })
	}
	if err := g.members[0].Save(ctx, path); err != nil {
		return memberError(0, g.members[0], err)
	}
	return nil
}

// Release tells every member that the trainer is done with it, so that workers
// asked to stop exit now. Unlike the other calls, a member that fails (one already
// gone) does not cancel the others; the errors are joined.
func (g *Gang) Release(ctx context.Context) error {
	errs := make([]error, len(g.members))
	_ = g.each(ctx, func(ctx context.Context, i int, m Member) error {
		if err := m.Release(ctx); err != nil {
			errs[i] = memberError(i, m, err)
		}
		return nil
	})
	return errors.Join(errs...)
}

// Export asks member 0 to write its policy to the folder path (Member.Export): every
// member holds the same weights after a step.
func (g *Gang) Export(ctx context.Context, path string, merge bool) (Exported, error) {
	if g.sharded { // all gather the weights; member 0 writes them
		outs := make([]Exported, len(g.members))
		err := g.each(ctx, func(ctx context.Context, i int, m Member) (err error) {
			outs[i], err = m.Export(ctx, path, merge)
			return err
		})
		return outs[0], err
	}
	out, err := g.members[0].Export(ctx, path, merge)
	if err != nil {
		return Exported{}, memberError(0, g.members[0], err)
	}
	return out, nil
}

// Embed asks member 0 for the sentence embeddings of texts (Member.Embed): every
// member loads the same encoder, so one answers for all.
func (g *Gang) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out, err := g.members[0].Embed(ctx, texts)
	if err != nil {
		return nil, memberError(0, g.members[0], err)
	}
	return out, nil
}

// dealt calls fn for requests 0..n-1, request i on member i mod Size: the requests
// of one member in order, the members concurrently, as each does. Sharded members
// all make as many calls as the first: one short of requests makes idle, an empty
// call, in place of the requests it lacks.
func (g *Gang) dealt(ctx context.Context, n int, fn func(ctx context.Context, i int, m Member) error,
	idle func(ctx context.Context, m Member) error) error {
	size := len(g.members)
	end := n // sharded: every member makes ceil(n/size) calls, idle ones past n
	if g.sharded {
		end = (n + size - 1) / size * size
	}
	return g.each(ctx, func(ctx context.Context, k int, m Member) error {
		for i := k; i < end; i += size {
			if i >= n {
				if err := idle(ctx, m); err != nil {
					return fmt.Errorf("an empty call beside request %d: %w", n-1, err)
				}
				continue
			}
			if err := fn(ctx, i, m); err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
		}
		return nil
	})
}

// each calls fn on every member concurrently, with a context that is cancelled as
// soon as one call fails, and returns the first error, naming its member.
func (g *Gang) each(ctx context.Context, fn func(ctx context.Context, i int, m Member) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i, m := range g.members {
		wg.Go(func() {
			if err := fn(ctx, i, m); err != nil {
				once.Do(func() {
					first = memberError(i, m, err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	return first
}

// memberError names member i in err: "worker 1 (host:port): ...".
func memberError(i int, m Member, err error) error {
	if s, ok := m.(fmt.Stringer); ok {
		return fmt.Errorf("worker %d (%s): %w", i, s, err)
	}
	return fmt.Errorf("worker %d: %w", i, err)
}
