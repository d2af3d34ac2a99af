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
	"net"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

var smallModel = map[string]string{"hash_bits": "12", "hidden": "8"}

// serve starts a real gRPC worker on 127.0.0.1:0 and returns a client of it.
func serve(t *testing.T) workerpb.WorkerClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := worker.NewGRPCServer(cpu.New(2), nil)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	c, closer, err := worker.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return c
}

// session drives a worker through every call of the protocol and returns the
// responses, in order.
func session(t *testing.T, c workerpb.WorkerClient, dir string) []proto.Message {
	t.Helper()
	ctx := context.Background()
	var out []proto.Message
	must := func(m proto.Message, err error) proto.Message {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		return m
	}
	ep := &generated(t, 2)[1]
	ps := make([]*workerpb.Prompt, len(ep.Steps))
	for j := range ps {
		ps[j] = worker.PromptFromStep(ep, j)
	}
	must(c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 4, Options: smallModel}))
	must(c.Health(ctx, &workerpb.HealthRequest{}))
	gen := must(c.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps, Samples: 3, Temperature: 1, Seed: 9})).(*workerpb.GenerateResponse)
	var scored []*workerpb.Scored
	var weighted []*workerpb.Weighted
	for i, cs := range gen.Candidates {
		for _, s := range cs.Samples {
			scored = append(scored, &workerpb.Scored{Prompt: ps[i], Answer: s.Answer})
			weighted = append(weighted, &workerpb.Weighted{Prompt: ps[i], Answer: s.Answer, SequenceWeight: 0.1})
		}
		truth := espo.FormatAnswer("", ep.Steps[i].Answer.Espo())
		weighted = append(weighted, &workerpb.Weighted{Prompt: ps[i], Answer: &workerpb.Answer{Text: truth}, SequenceWeight: 0.2})
	}
	must(c.LogProbs(ctx, &workerpb.LogProbsRequest{Items: scored, Reference: true}))
	must(c.Backward(ctx, &workerpb.BackwardRequest{Items: weighted}))
	must(c.Gradients(ctx, &workerpb.GradientsRequest{}))
	must(c.Step(ctx, &workerpb.StepRequest{LearningRate: 0.01, WeightDecay: 0.01, MaxGradNorm: 1}))
	must(c.SnapshotReference(ctx, &workerpb.SnapshotReferenceRequest{}))
	path := filepath.Join(dir, "state")
	save := must(c.Save(ctx, &workerpb.SaveRequest{Path: path})).(*workerpb.SaveResponse)
	save.Path = filepath.Base(save.Path)
	must(c.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps, Greedy: true}))
	must(c.Load(ctx, &workerpb.LoadRequest{Path: path}))
	must(c.Info(ctx, &workerpb.InfoRequest{}))
	return out
}

// TestRemoteEqualsLocal runs the same session on a real gRPC server and on the
// in-process client: every response must be the same.
func TestRemoteEqualsLocal(t *testing.T) {
	remote := session(t, serve(t), t.TempDir())
	local := session(t, worker.LocalClient(cpu.New(2)), t.TempDir())
	for i := range remote {
		if !proto.Equal(remote[i], local[i]) {
			t.Errorf("response %d (%T) differs between the remote and the local worker", i, remote[i])
		}
	}
}

// TestServerPassesReferenceOnly: LogProbs over the protocol honours reference_only,
// leaving current empty and returning the token ids and the reference.
func TestServerPassesReferenceOnly(t *testing.T) {
	ctx := context.Background()
	c := serve(t)
	if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 4, Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	ep := &generated(t, 1)[0]
	truth := &workerpb.Answer{Text: espo.FormatAnswer("", ep.Steps[0].Answer.Espo())}
	req := &workerpb.LogProbsRequest{Items: []*workerpb.Scored{{Prompt: worker.PromptFromStep(ep, 0), Answer: truth}},
		Reference: true, ReferenceOnly: true}
	resp, err := c.LogProbs(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	it := resp.Items[0]
	if len(it.Current) != 0 || len(it.TokenIds) == 0 || len(it.Reference) != len(it.TokenIds) {
		t.Errorf("reference only: %d token ids, %d current and %d reference log-probs, want no current",
			len(it.TokenIds), len(it.Current), len(it.Reference))
	}
}

func TestServerErrors(t *testing.T) {
	ctx := context.Background()
	c := worker.LocalClient(cpu.New(1))
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
	if _, err := c.Load(ctx, &workerpb.LoadRequest{Path: filepath.Join(t.TempDir(), "missing")}); status.Code(err) != codes.NotFound {
		t.Errorf("missing state: %v, want NotFound", err)
	}
	if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{LoadPath: filepath.Join(t.TempDir(), "missing")}); status.Code(err) != codes.NotFound {
		t.Errorf("configure from a missing state: %v, want NotFound", err)
	}
}

// TestStepDefaults checks that zero coefficients take the AdamW defaults: the
// same step as one that names them.
func TestStepDefaults(t *testing.T) {
	ctx := context.Background()
	var logps [][]float32
	for _, req := range []*workerpb.StepRequest{
		{LearningRate: 0.1},
		{LearningRate: 0.1, Beta1: worker.DefaultBeta1, Beta2: worker.DefaultBeta2, Epsilon: worker.DefaultEpsilon},
	} {
		c := worker.LocalClient(cpu.New(1))
		if _, err := c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 1, Options: map[string]string{"hash_bits": "4", "hidden": "2"}}); err != nil {
			t.Fatal(err)
		}
		req.Gradient = make([]float32, 16*2+4)
		for i := range req.Gradient {
			req.Gradient[i] = float32(i%3) - 1
		}
		if _, err := c.Step(ctx, req); err != nil {
			t.Fatal(err)
		}
		gen, err := c.Generate(ctx, &workerpb.GenerateRequest{Prompts: []*workerpb.Prompt{worker.PromptFromStep(&generated(t, 1)[0], 0)}, Samples: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var lp []float32
		for _, s := range gen.Candidates[0].Samples {
			for _, x := range s.Logprobs {
				lp = append(lp, float32(x))
			}
		}
		logps = append(logps, lp)
	}
	if !slices.Equal(logps[0], logps[1]) {
		t.Error("a step with zero coefficients differs from one with the defaults")
	}
}
