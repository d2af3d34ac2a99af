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
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

var smallModel = map[string]string{"hash_bits": "12", "hidden": "8"}

// listen starts a real gRPC worker of a CPU policy on 127.0.0.1:0 that needs
// workertest.Token and saves and loads under allowed, and returns its address.
func listen(t testing.TB, allowed ...string) string {
	t.Helper()
	return listenWith(t, worker.ServerOptions{Token: workertest.Token, Allowed: allowed})
}

// listenWith starts a real gRPC worker of a CPU policy with o on 127.0.0.1:0 and
// returns its address.
func listenWith(t testing.TB, o worker.ServerOptions) string {
	return listenPolicy(t, cpu.New(2), o)
}

// listenPolicy starts a real gRPC worker of p with o on 127.0.0.1:0 and returns its
// address.
func listenPolicy(t testing.TB, p worker.Policy, o worker.ServerOptions) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := worker.NewGRPCServer(p, o)
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// dial returns the worker at addr as a Remote member sending workertest.Token,
// closed at the test's end.
func dial(t testing.TB, addr string, d worker.DialFunc) *worker.Remote {
	t.Helper()
	r, err := worker.Dial(addr, d, workertest.Token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// serve starts a real gRPC worker that saves and loads under allowed and returns a
// Remote member of it.
func serve(t *testing.T, allowed ...string) *worker.Remote {
	return dial(t, listen(t, allowed...), nil)
}

// prompts returns the prompts of every step of ep.
func prompts(ep *dataset.Episode) []worker.Prompt {
	ps := make([]worker.Prompt, len(ep.Steps))
	for j := range ps {
		ps[j] = worker.NewPrompt(ep, j)
	}
	return ps
}

// demonstrated returns step j's demonstrated answer.
func demonstrated(ep *dataset.Episode, j int) worker.Answer {
	return worker.Answer{Text: espo.FormatAnswer("", ep.Steps[j].Answer.Espo())}
}

// recorder notes what each call returned, printed, in order, and ends the test at
// the first error.
type recorder struct {
	t   testing.TB
	out []string
}

func (r *recorder) must(v any, err error) any {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
	r.out = append(r.out, fmt.Sprintf("%v", v))
	return v
}

// rlStep drives m through an RL step on the prompts ps of ep: Generate, LogProbs
// under the reference too, Backward of the candidates and the demonstrated answers,
// Gradient and Step.
func (r *recorder) rlStep(m worker.Member, ep *dataset.Episode, ps []worker.Prompt) {
	r.t.Helper()
	ctx := context.Background()
	gen := r.must(m.Generate(ctx, ps, worker.SampleOptions{Samples: 3, Temperature: 1, Seed: 9})).([][]worker.Sample)
	var scored []worker.Scored
	var weighted []worker.Weighted
	for j, cs := range gen {
		for _, s := range cs {
			scored = append(scored, worker.Scored{Prompt: ps[j], Answer: s.Answer})
			weighted = append(weighted, worker.Weighted{Prompt: ps[j], Answer: s.Answer, SequenceWeight: 0.1})
		}
		weighted = append(weighted, worker.Weighted{Prompt: ps[j], Answer: demonstrated(ep, j), SequenceWeight: 0.2})
	}
	r.must(m.LogProbs(ctx, scored, worker.ScoreOptions{Reference: true}))
	r.must(m.Backward(ctx, weighted))
	r.must(m.Gradient(ctx))
	r.must(m.Step(ctx, worker.StepOptions{LearningRate: 0.01, WeightDecay: 0.01, MaxGradNorm: 1}))
}

// session drives a member through every call and returns what each returned,
// printed, in order.
func session(t *testing.T, m worker.Member, dir string) []string {
	t.Helper()
	ctx := context.Background()
	r := &recorder{t: t}
	ep := &generated(t, 2)[1]
	ps := prompts(ep)
	r.must(m.Configure(ctx, worker.Setup{Seed: 4, Options: smallModel}))
	r.rlStep(m, ep, ps)
	r.must(nil, m.SnapshotReference(ctx))
	path := filepath.Join(dir, "state")
	r.must(nil, m.Save(ctx, path))
	r.must(m.Generate(ctx, ps, worker.SampleOptions{Greedy: true}))
	r.must(m.Configure(ctx, worker.Setup{Seed: 5, LoadPath: path}))
	r.must(m.Generate(ctx, ps, worker.SampleOptions{Greedy: true}))
	r.must(nil, m.Release(ctx))
	state, err := os.ReadFile(path)
	return append(r.out, string(state), fmt.Sprint(err))
}

// TestRemoteEqualsLocal runs the same session on a real gRPC server and on an
// in-process member: every result must be the same.
func TestRemoteEqualsLocal(t *testing.T) {
	remoteDir, localDir := t.TempDir(), t.TempDir()
	remote := session(t, serve(t, remoteDir), remoteDir)
	local := session(t, worker.NewLocal(cpu.New(2), localDir), localDir)
	if len(remote) != len(local) {
		t.Fatalf("%d results remotely, %d in process", len(remote), len(local))
	}
	for i := range remote {
		if remote[i] != local[i] {
			t.Errorf("result %d differs between the remote and the in-process member", i)
		}
	}
}

// TestServerPassesReferenceOnly: LogProbs over the protocol honours ReferenceOnly,
// leaving Current empty and returning the token ids and the reference.
func TestServerPassesReferenceOnly(t *testing.T) {
	ctx := context.Background()
	r := serve(t)
	if _, err := r.Configure(ctx, worker.Setup{Seed: 4, Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	ep := &generated(t, 1)[0]
	items := []worker.Scored{{Prompt: worker.NewPrompt(ep, 0), Answer: demonstrated(ep, 0)}}
	lps, err := r.LogProbs(ctx, items, worker.ScoreOptions{Reference: true, ReferenceOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	it := lps[0]
	if len(it.Current) != 0 || len(it.Tokens) == 0 || len(it.Reference) != len(it.Tokens) {
		t.Errorf("reference only: %d token ids, %d current and %d reference log-probs, want no current",
			len(it.Tokens), len(it.Current), len(it.Reference))
	}
}

// TestServerErrors checks the gRPC status code of each kind of error.
func TestServerErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := serve(t, dir).Client()
	if _, err := c.Generate(ctx, &workerpb.GenerateRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("generate before configure: %v, want FailedPrecondition", err)
	}
	if info, err := c.Info(ctx, &workerpb.InfoRequest{}); err != nil || info.Device == "" {
		t.Errorf("info before configure: %v %v", info, err)
	}
	if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{Options: map[string]string{"bogus": "1"}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad option: %v, want InvalidArgument", err)
	}
	if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	ep := &generated(t, 1)[0]
	bad := &workerpb.Scored{Prompt: worker.PromptFromStep(ep, 0), Answer: &workerpb.Answer{Text: "nonsense"}}
	if _, err := c.LogProbs(ctx, &workerpb.LogProbsRequest{Items: []*workerpb.Scored{bad}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("malformed answer: %v, want InvalidArgument", err)
	}
	if _, err := c.Generate(ctx, &workerpb.GenerateRequest{Temperature: -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative temperature: %v, want InvalidArgument", err)
	}
	if _, err := c.Step(ctx, &workerpb.StepRequest{Beta1: 1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("beta1 = 1: %v, want InvalidArgument", err)
	}
	if _, err := c.Load(ctx, &workerpb.LoadRequest{Path: filepath.Join(dir, "missing")}); status.Code(err) != codes.NotFound {
		t.Errorf("missing state: %v, want NotFound", err)
	}
	if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{LoadPath: filepath.Join(dir, "missing")}); status.Code(err) != codes.NotFound {
		t.Errorf("configure from a missing state: %v, want NotFound", err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(ctx, &workerpb.LoadRequest{Path: garbage}); status.Code(err) != codes.DataLoss {
		t.Errorf("unreadable state: %v, want DataLoss", err)
	}
}

// TestLocalErrors checks that an in-process member's errors are the package's
// sentinels, as the server's codes are.
func TestLocalErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m := worker.NewLocal(cpu.New(1), dir)
	ep := &generated(t, 1)[0]
	ps := []worker.Prompt{worker.NewPrompt(ep, 0)}
	if _, err := m.Generate(ctx, ps, worker.SampleOptions{}); !errors.Is(err, worker.ErrNotConfigured) {
		t.Errorf("generate before configure: %v, want ErrNotConfigured", err)
	}
	if _, err := m.Configure(ctx, worker.Setup{Options: map[string]string{"bogus": "1"}}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("bad option: %v, want ErrInvalid", err)
	}
	if _, err := m.Configure(ctx, worker.Setup{LoadPath: filepath.Join(dir, "missing")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("configure from a missing state: %v, want fs.ErrNotExist", err)
	}
	if _, err := m.Configure(ctx, worker.Setup{Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(ctx, ps, worker.SampleOptions{Temperature: -1}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("negative temperature: %v, want ErrInvalid", err)
	}
	if _, err := m.Step(ctx, worker.StepOptions{Beta2: 1}); !errors.Is(err, worker.ErrInvalid) {
		t.Errorf("beta2 = 1: %v, want ErrInvalid", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Generate(done, ps, worker.SampleOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("generate with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestStepDefaults checks that zero coefficients take the AdamW defaults: the
// same step as one that names them.
func TestStepDefaults(t *testing.T) {
	ctx := context.Background()
	ep := &generated(t, 1)[0]
	var logps [][]float64
	for _, o := range []worker.StepOptions{
		{LearningRate: 0.1},
		{LearningRate: 0.1, Beta1: worker.DefaultBeta1, Beta2: worker.DefaultBeta2, Epsilon: worker.DefaultEpsilon},
	} {
		m := worker.NewLocal(cpu.New(1))
		if _, err := m.Configure(ctx, worker.Setup{Seed: 1, Options: map[string]string{"hash_bits": "4", "hidden": "2"}}); err != nil {
			t.Fatal(err)
		}
		o.Gradient = make([]float32, 16*2+4)
		for i := range o.Gradient {
			o.Gradient[i] = float32(i%3) - 1
		}
		if _, err := m.Step(ctx, o); err != nil {
			t.Fatal(err)
		}
		gen, err := m.Generate(ctx, []worker.Prompt{worker.NewPrompt(ep, 0)}, worker.SampleOptions{Samples: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var lp []float64
		for _, s := range gen[0] {
			lp = append(lp, s.LogProbs...)
		}
		logps = append(logps, lp)
	}
	if !slices.Equal(logps[0], logps[1]) {
		t.Error("a step with zero coefficients differs from one with the defaults")
	}
}

// samplerPolicy is a CPU policy whose Generate also reports sampler log-probs, as a
// worker whose answers a serving engine samples does: each token's log-prob
// shifted by shift.
type samplerPolicy struct {
	worker.Policy
	shift float64
}

func (p samplerPolicy) Generate(prompts []*workerpb.Prompt, o worker.SampleOptions) ([]*workerpb.Candidates, error) {
	cs, err := p.Policy.Generate(prompts, o)
	for _, c := range cs {
		for _, s := range c.GetSamples() {
			for _, lp := range s.GetLogprobs() {
				s.SamplerLogprobs = append(s.SamplerLogprobs, lp+p.shift)
			}
		}
	}
	return cs, err
}

// TestSamplerLogProbsReachTheTrainer: a worker's sampler_logprobs reach
// Sample.SamplerLogProbs, over gRPC and in process, one per token next to the
// policy's log-probs; a worker that sets none gives none.
func TestSamplerLogProbsReachTheTrainer(t *testing.T) {
	ctx := context.Background()
	ep := &generated(t, 1)[0]
	ps := prompts(ep)[:2]
	for name, m := range map[string]worker.Member{
		"remote": dial(t, listenPolicy(t, samplerPolicy{cpu.New(1), -0.25}, worker.ServerOptions{Token: workertest.Token}), nil),
		"local":  worker.NewLocal(samplerPolicy{cpu.New(1), -0.25}),
		"none":   worker.NewLocal(cpu.New(1)),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := m.Configure(ctx, worker.Setup{Seed: 1, Options: smallModel}); err != nil {
				t.Fatal(err)
			}
			gen, err := m.Generate(ctx, ps, worker.SampleOptions{Samples: 2, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			tokens := 0
			for _, c := range gen {
				for _, s := range c {
					tokens += len(s.LogProbs)
					if name == "none" {
						if s.SamplerLogProbs != nil {
							t.Errorf("sampler log-probs %v from a worker that sets none", s.SamplerLogProbs)
						}
						continue
					}
					if len(s.SamplerLogProbs) != len(s.LogProbs) {
						t.Fatalf("%d sampler log-probs for %d tokens", len(s.SamplerLogProbs), len(s.LogProbs))
					}
					for i, lp := range s.LogProbs {
						if s.SamplerLogProbs[i] != lp-0.25 {
							t.Errorf("token %d: sampler log-prob %v, want %v", i, s.SamplerLogProbs[i], lp-0.25)
						}
					}
				}
			}
			if tokens == 0 {
				t.Fatal("no tokens sampled")
			}
		})
	}
}
