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

package workertest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// CheckInlineState checks the worker c, a single one (not a rank of a group) that
// may save under allowed and is configured with options, against
// ConfigureRequest.state: a state sent inline restores what Save wrote exactly as
// the same file's load_path does (the step count, and the log-probs of an answer,
// which a fresh policy scores otherwise); a request with both load_path and state
// is InvalidArgument; bytes that are no state are DataLoss.
func CheckInlineState(t *testing.T, c workerpb.WorkerClient, allowed string, options map[string]string) {
	t.Helper()
	ctx := context.Background()
	configure := func(req *workerpb.ConfigureRequest) (steps int64, logprobs []float64) {
		t.Helper()
		req.Seed, req.Options = 3, options
		resp, err := c.Configure(ctx, req)
		if err != nil {
			t.Fatalf("configure (load path %q, %d bytes of state): %v", req.LoadPath, len(req.State), err)
		}
		return resp.GetInfo().GetSteps(), scoreProbe(t, c)
	}
	path := trainedState(t, c, allowed, options)
	state, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, fresh := configure(&workerpb.ConfigureRequest{})
	fileSteps, fromFile := configure(&workerpb.ConfigureRequest{LoadPath: path})
	inlineSteps, inline := configure(&workerpb.ConfigureRequest{State: state})
	switch {
	case fileSteps != 1 || inlineSteps != 1:
		t.Errorf("steps after loading the state: %d from its path, %d inline; want 1", fileSteps, inlineSteps)
	case !slices.Equal(inline, fromFile):
		t.Errorf("log-probs after the inline state %v, after its file %v: want them equal", inline, fromFile)
	case slices.Equal(inline, fresh):
		t.Errorf("log-probs after the inline state equal a fresh policy's (%v): the probe proves nothing", fresh)
	}
	_, err = c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 3, Options: options, LoadPath: path, State: state})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("configure with both load_path and state: %v, want InvalidArgument", err)
	}
	_, err = c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 3, Options: options, State: []byte("not a state")})
	if status.Code(err) != codes.DataLoss {
		t.Errorf("configure with bytes that are no state: %v, want DataLoss", err)
	}
}

// trainedState configures c with options, takes one optimizer step with a given
// gradient, saves the state under allowed and returns its path.
func trainedState(t *testing.T, c workerpb.WorkerClient, allowed string, options map[string]string) string {
	t.Helper()
	ctx := context.Background()
	resp, err := c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 2, Options: options})
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, resp.GetInfo().GetParameters())
	for i := range grad {
		grad[i] = float32(i%7-3) / 10
	}
	if _, err := c.Step(ctx, &workerpb.StepRequest{LearningRate: 0.05, Gradient: grad}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(allowed, "inline.state")
	if _, err := c.Save(ctx, &workerpb.SaveRequest{Path: path}); err != nil {
		t.Fatal(err)
	}
	return path
}

// scoreProbe returns the log-probs of a fixed answer to a fixed prompt under c's
// current policy.
func scoreProbe(t *testing.T, c workerpb.WorkerClient) []float64 {
	t.Helper()
	item := &workerpb.Scored{
		Prompt: &workerpb.Prompt{EpisodeId: "probe", Stage: workerpb.Stage_STAGE_GUI, Instruction: "open the menu",
			Elements: []*workerpb.Element{{Id: "menu", Role: "button", Text: "Menu", Box: []float64{0.1, 0.1, 0.2, 0.2}}}},
		Answer: &workerpb.Answer{Text: "<think></think><answer>[{'action': 'click', 'point': [0.15, 0.15], 'input_text': 'no input text'}]</answer>"},
	}
	resp, err := c.LogProbs(context.Background(), &workerpb.LogProbsRequest{Items: []*workerpb.Scored{item}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetItems()[0].GetCurrent()
}
