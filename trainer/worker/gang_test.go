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

package worker_test

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// configured returns n in-process CPU members configured alike.
func configured(t *testing.T, n int) []worker.Member {
	t.Helper()
	ms := make([]worker.Member, n)
	for i := range ms {
		ms[i] = worker.NewLocal(cpu.New(1))
		if _, err := ms[i].Configure(context.Background(), worker.Setup{Seed: 4, Options: smallModel}); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// journal is a Member that notes the seed of every Generate call and the number of
// items of every Backward call it gets.
type journal struct {
	worker.Member
	mu        sync.Mutex
	seeds     []uint64
	backwards []int
}

func (j *journal) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	j.mu.Lock()
	j.seeds = append(j.seeds, o.Seed)
	j.mu.Unlock()
	return j.Member.Generate(ctx, ps, o)
}

func (j *journal) Backward(ctx context.Context, items []worker.Weighted) (worker.Backwarded, error) {
	j.mu.Lock()
	j.backwards = append(j.backwards, len(items))
	j.mu.Unlock()
	return j.Member.Backward(ctx, items)
}

// TestGangDealsRequestsRoundRobin: request i goes to member i mod 3, in order;
// the answers come back in request order, the same as one member's, and Backward
// sends each member its requests' items in one call.
func TestGangDealsRequestsRoundRobin(t *testing.T) {
	ctx := context.Background()
	eps := generated(t, 5)
	reqs := make([]worker.Rollouts, len(eps))
	for i := range eps {
		reqs[i] = worker.Rollouts{Prompts: prompts(&eps[i]), Options: worker.SampleOptions{Samples: 2, Seed: uint64(100 + i)}}
	}
	var js []*journal
	var ms []worker.Member
	for _, m := range configured(t, 3) {
		js = append(js, &journal{Member: m})
		ms = append(ms, js[len(js)-1])
	}
	gang := worker.NewGang(ms...)
	got, err := gang.Generate(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := worker.NewGang(configured(t, 1)...).Generate(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if len(got[i]) != 2*len(eps[i].Steps) || !sameSamples(got[i], want[i]) {
			t.Errorf("request %d: %d answers, or answers unlike one member's", i, len(got[i]))
		}
	}
	for k, wantSeeds := range [][]uint64{{100, 103}, {101, 104}, {102}} {
		if !slices.Equal(js[k].seeds, wantSeeds) {
			t.Errorf("member %d served the requests of seeds %v, want %v", k, js[k].seeds, wantSeeds)
		}
	}
	weighted := make([][]worker.Weighted, len(reqs))
	for i := range reqs {
		for k, s := range got[i] {
			weighted[i] = append(weighted[i], worker.Weighted{Prompt: reqs[i].Prompts[k/2], Answer: s.Answer, SequenceWeight: 0.1})
		}
	}
	if _, err := gang.Backward(ctx, weighted); err != nil {
		t.Fatal(err)
	}
	for k, want := range []int{len(weighted[0]) + len(weighted[3]), len(weighted[1]) + len(weighted[4]), len(weighted[2])} {
		if !slices.Equal(js[k].backwards, []int{want}) {
			t.Errorf("member %d: Backward calls of %v items, want one of %d", k, js[k].backwards, want)
		}
	}
}

func sameSamples(a, b []worker.Sample) bool {
	return slices.EqualFunc(a, b, func(x, y worker.Sample) bool {
		return x.Answer.Text == y.Answer.Text && slices.Equal(x.Answer.Tokens, y.Answer.Tokens) && slices.Equal(x.LogProbs, y.LogProbs)
	})
}

// TestGangStepAppliesTheBatchGradient: two members that each accumulate half of a
// batch's gradient end, after one Gang.Step, with the policy of one member that
// accumulated all of it.
func TestGangStepAppliesTheBatchGradient(t *testing.T) {
	ctx := context.Background()
	ep := &generated(t, 1)[0]
	ps := prompts(ep)
	halves := [][]worker.Weighted{nil, nil}
	for j := range ps {
		halves[j%2] = append(halves[j%2], worker.Weighted{Prompt: ps[j], Answer: demonstrated(ep, j), SequenceWeight: 0.5})
	}
	o := worker.StepOptions{LearningRate: 0.05}
	one, two := configured(t, 1), configured(t, 2)
	gangOne, gangTwo := worker.NewGang(one...), worker.NewGang(two...)
	if _, err := gangOne.Backward(ctx, [][]worker.Weighted{slices.Concat(halves...)}); err != nil {
		t.Fatal(err)
	}
	if _, err := gangTwo.Backward(ctx, halves); err != nil {
		t.Fatal(err)
	}
	normOne, err := gangOne.Step(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	normTwo, err := gangTwo.Step(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(normOne-normTwo) > 1e-5*normOne {
		t.Errorf("gradient norm %v with two members, %v with one", normTwo, normOne)
	}
	scored := []worker.Scored{{Prompt: ps[0], Answer: demonstrated(ep, 0)}}
	want := currentLogProbs(t, one[0], scored)
	for k, m := range two {
		if got := currentLogProbs(t, m, scored); !slices.EqualFunc(got, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-5 }) {
			t.Errorf("member %d of 2: log-probs %v after the step, one member gives %v", k, got, want)
		}
	}
	if _, err := gangTwo.Step(ctx, worker.StepOptions{Gradient: []float32{1}}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("Gang.Step with a gradient: %v, want ErrInvalid", err)
	}
}

func currentLogProbs(t *testing.T, m worker.Member, items []worker.Scored) []float64 {
	t.Helper()
	lps, err := m.LogProbs(context.Background(), items, worker.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lps[0].Current
}

// reducing is a Member that says it all-reduces gradients itself and must never be
// asked for its gradient.
type reducing struct {
	worker.Member
	t *testing.T
}

func (r reducing) Configure(ctx context.Context, s worker.Setup) (worker.Description, error) {
	d, err := r.Member.Configure(ctx, s)
	d.ReducesGradients = true
	return d, err
}

func (r reducing) Gradient(context.Context) ([]float32, error) {
	r.t.Error("the gang gathered the gradient of members that reduce it themselves")
	return nil, errors.New("not served")
}

func TestGangLeavesReducingMembersTheirGradients(t *testing.T) {
	ctx := context.Background()
	gang := worker.NewGang(reducing{worker.NewLocal(cpu.New(1)), t}, reducing{worker.NewLocal(cpu.New(1)), t})
	if _, err := gang.Configure(ctx, worker.Setup{Seed: 1, Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	if _, err := gang.Step(ctx, worker.StepOptions{LearningRate: 0.1}); err != nil {
		t.Fatal(err)
	}
}

// shardedJournal is a journal that says it holds the model sharded and notes every
// call's size: the prompts of each Generate, the items of each LogProbs, and each
// Save and Export path.
type shardedJournal struct {
	journal
	generates, logprobs []int
	saves, exports      []string
}

func (j *shardedJournal) Configure(ctx context.Context, s worker.Setup) (worker.Description, error) {
	d, err := j.Member.Configure(ctx, s)
	d.ReducesGradients, d.Sharded = true, true
	return d, err
}

func (j *shardedJournal) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	j.mu.Lock()
	j.generates = append(j.generates, len(ps))
	j.mu.Unlock()
	return j.journal.Generate(ctx, ps, o)
}

func (j *shardedJournal) LogProbs(ctx context.Context, items []worker.Scored, o worker.ScoreOptions) ([]worker.TokenLogProbs, error) {
	j.mu.Lock()
	j.logprobs = append(j.logprobs, len(items))
	j.mu.Unlock()
	return j.Member.LogProbs(ctx, items, o)
}

func (j *shardedJournal) Save(ctx context.Context, path string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.saves = append(j.saves, path)
	return nil
}

func (j *shardedJournal) Export(_ context.Context, path string, _ bool) (worker.Exported, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.exports = append(j.exports, path)
	return worker.Exported{Path: path, Kind: "full"}, nil
}

// TestGangCallsShardedMembersAlike: with members that hold the model sharded, every
// member makes as many Generate and LogProbs calls as the busiest (the others empty
// ones), a Backward call even with nothing to back-propagate, and every member is
// sent Save and Export: each of these is a collective of all of them.
func TestGangCallsShardedMembersAlike(t *testing.T) {
	ctx := context.Background()
	eps := generated(t, 4)
	reqs := make([]worker.Rollouts, len(eps))
	for i := range eps {
		reqs[i] = worker.Rollouts{Prompts: prompts(&eps[i])[:1], Options: worker.SampleOptions{Samples: 1, Seed: uint64(i)}}
	}
	var js []*shardedJournal
	var ms []worker.Member
	for _, m := range configured(t, 3) {
		js = append(js, &shardedJournal{journal: journal{Member: m}})
		ms = append(ms, js[len(js)-1])
	}
	gang := worker.NewGang(ms...)
	if _, err := gang.Configure(ctx, worker.Setup{Seed: 4, Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	got, err := gang.Generate(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	scored := [][]worker.Scored{{{Prompt: reqs[0].Prompts[0], Answer: got[0][0].Answer}}}
	if _, err := gang.ReferenceLogProbs(ctx, scored); err != nil {
		t.Fatal(err)
	}
	weighted := [][]worker.Weighted{{{Prompt: reqs[0].Prompts[0], Answer: got[0][0].Answer, SequenceWeight: 1}}}
	if _, err := gang.Backward(ctx, weighted); err != nil {
		t.Fatal(err)
	}
	if err := gang.Save(ctx, "/checkpoints/step/worker.state"); err != nil {
		t.Fatal(err)
	}
	if _, err := gang.Export(ctx, "/export/run-1", false); err != nil {
		t.Fatal(err)
	}
	// 4 requests over 3 members: member 0 serves two, the others one and an empty
	// call; one LogProbs request: member 0 serves it, the others make an empty call
	for k, want := range [][]int{{1, 1}, {1, 0}, {1, 0}} {
		j := js[k]
		wantScored := []int{[]int{1, 0, 0}[k]}
		if !slices.Equal(j.generates, want) || !slices.Equal(j.logprobs, wantScored) {
			t.Errorf("member %d: Generate calls of %v prompts (want %v), LogProbs calls of %v items (want %v)",
				k, j.generates, want, j.logprobs, wantScored)
		}
		if want := []int{1, 0, 0}[k]; !slices.Equal(j.backwards, []int{want}) {
			t.Errorf("member %d: Backward calls of %v items, want one of %d", k, j.backwards, want)
		}
		if !slices.Equal(j.saves, []string{"/checkpoints/step/worker.state"}) || !slices.Equal(j.exports, []string{"/export/run-1"}) {
			t.Errorf("member %d: saves %v and exports %v, want one of each", k, j.saves, j.exports)
		}
	}
}

// failing fails every Generate; waiting answers Generate only when its context ends.
type (
	failing struct{ worker.Member }
	waiting struct {
		worker.Member
		cancelled atomic.Bool
	}
)

func (failing) Generate(context.Context, []worker.Prompt, worker.SampleOptions) ([][]worker.Sample, error) {
	return nil, errors.New("out of memory")
}

func (w *waiting) Generate(ctx context.Context, _ []worker.Prompt, _ worker.SampleOptions) ([][]worker.Sample, error) {
	<-ctx.Done()
	w.cancelled.Store(true)
	return nil, ctx.Err()
}

// TestGangFirstErrorCancelsTheOthers: a member that fails ends the call at once,
// cancelling the other members' calls, with an error that names it.
func TestGangFirstErrorCancelsTheOthers(t *testing.T) {
	ms := configured(t, 2)
	w := &waiting{Member: ms[0]}
	gang := worker.NewGang(w, failing{ms[1]})
	ep := &generated(t, 1)[0]
	reqs := []worker.Rollouts{{Prompts: prompts(ep)}, {Prompts: prompts(ep)}}
	_, err := gang.Generate(context.Background(), reqs)
	if err == nil || !strings.HasPrefix(err.Error(), "worker 1") || !strings.HasSuffix(err.Error(), "request 1: out of memory") {
		t.Errorf("error %v, want one naming worker 1, its request and the cause", err)
	}
	if !w.cancelled.Load() {
		t.Error("the other member's call was not cancelled")
	}
}

// released counts Release calls and fails them when gone.
type released struct {
	worker.Member
	n    atomic.Int32
	gone bool
}

func (r *released) Release(ctx context.Context) error {
	r.n.Add(1)
	if r.gone {
		return errors.New("connection refused")
	}
	return r.Member.Release(ctx)
}

// TestGangReleasesEveryMember: a member already gone does not keep the others from
// being released, and the error names it.
func TestGangReleasesEveryMember(t *testing.T) {
	ms := configured(t, 3)
	rs := []*released{{Member: ms[0]}, {Member: ms[1], gone: true}, {Member: ms[2]}}
	err := worker.NewGang(rs[0], rs[1], rs[2]).Release(context.Background())
	if err == nil || err.Error() != "worker 1: connection refused" {
		t.Errorf("error %v, want one naming worker 1", err)
	}
	for k, r := range rs {
		if r.n.Load() != 1 {
			t.Errorf("member %d released %d times, want 1", k, r.n.Load())
		}
	}
}

// TestRemoteConfigureWaitsForAWorkerStillStarting dials a worker by a name only
// the dial function knows, whose first connection fails (a pod still starting):
// the dial function gets the name as given, and Configure waits and succeeds.
func TestRemoteConfigureWaitsForAWorkerStillStarting(t *testing.T) {
	addr := listen(t)
	const name = "demo-trainer-1.demo.ns.svc:50051"
	var dials atomic.Int32
	var wrongName atomic.Value
	r := dial(t, name, func(ctx context.Context, a string) (net.Conn, error) {
		if a != name {
			wrongName.Store(a)
		}
		if dials.Add(1) == 1 {
			return nil, errors.New("connection refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
	gang := worker.NewGang(r)
	d, err := gang.Configure(context.Background(), worker.Setup{Seed: 1, Options: smallModel})
	if err != nil || d.Parameters == 0 {
		t.Fatalf("Configure = %+v, %v; want the worker's description", d, err)
	}
	if a := wrongName.Load(); a != nil {
		t.Errorf("the dial function got %q, want %q as given", a, name)
	}
	if dials.Load() < 2 {
		t.Errorf("%d dials, want a failed one and a retry", dials.Load())
	}
	ep := &generated(t, 1)[0]
	_, err = gang.Generate(context.Background(), []worker.Rollouts{{Prompts: prompts(ep), Options: worker.SampleOptions{Temperature: -1}}})
	if err == nil || !strings.HasPrefix(err.Error(), "worker 0 ("+name+"): request 0: ") || status.Code(err) != codes.InvalidArgument {
		t.Errorf("error %v, want InvalidArgument naming the worker by its address", err)
	}
	if err := gang.Close(); err != nil {
		t.Error(err)
	}
}

// longSampler is a Member whose samples carry one sampler log-prob too many.
type longSampler struct{ worker.Member }

func (s longSampler) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	cs, err := s.Member.Generate(ctx, ps, o)
	for _, c := range cs {
		for g := range c {
			c[g].SamplerLogProbs = append(slices.Clone(c[g].LogProbs), -1)
		}
	}
	return cs, err
}

// TestGangRefusesSamplerLogProbsOfAnotherLength: a member whose samples carry sampler
// log-probs, but not one per token, fails Generate with an error naming it and the
// sample; one per token passes.
func TestGangRefusesSamplerLogProbsOfAnotherLength(t *testing.T) {
	ctx := context.Background()
	ep := &generated(t, 1)[0]
	reqs := []worker.Rollouts{{Prompts: prompts(ep)[:1], Options: worker.SampleOptions{Samples: 2, Seed: 1}},
		{Prompts: prompts(ep)[:1], Options: worker.SampleOptions{Samples: 2, Seed: 2}}}
	ms := configured(t, 2)
	_, err := worker.NewGang(ms[0], longSampler{ms[1]}).Generate(ctx, reqs)
	if err == nil || !strings.Contains(err.Error(), "worker 1") || !strings.Contains(err.Error(), "sample 0 of prompt 0 has") ||
		!strings.Contains(err.Error(), "sampler log-probs for") {
		t.Fatalf("Generate: %v; want an error naming worker 1 and its sample", err)
	}
	if _, err := worker.NewGang(ms[0], samplerMember{ms[1]}).Generate(ctx, reqs); err != nil {
		t.Errorf("one sampler log-prob per token refused: %v", err)
	}
}

// samplerMember is a Member whose samples carry one sampler log-prob per token.
type samplerMember struct{ worker.Member }

func (s samplerMember) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	cs, err := s.Member.Generate(ctx, ps, o)
	for _, c := range cs {
		for g := range c {
			c[g].SamplerLogProbs = slices.Clone(c[g].LogProbs)
		}
	}
	return cs, err
}
