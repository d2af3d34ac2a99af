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
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// syncingWorker answers every Generate with one sample per prompt and says it spent
// sync seconds copying weights into its engine first.
type syncingWorker struct {
	workerpb.UnimplementedWorkerServer
	sync float64
}

func (w *syncingWorker) Generate(_ context.Context, req *workerpb.GenerateRequest) (*workerpb.GenerateResponse, error) {
	resp := &workerpb.GenerateResponse{WeightSyncSeconds: w.sync}
	for range req.GetPrompts() {
		resp.Candidates = append(resp.Candidates, &workerpb.Candidates{Samples: []*workerpb.Sample{{
			Answer: &workerpb.Answer{Text: "a", TokenIds: []int32{1}}, Logprobs: []float64{-0.5}}}})
	}
	return resp, nil
}

// dialSyncing serves a syncingWorker on loopback and dials it.
func dialSyncing(t *testing.T, sync float64) *worker.Remote {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	workerpb.RegisterWorkerServer(s, &syncingWorker{sync: sync})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	r, err := worker.Dial(lis.Addr().String(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestWeightSyncTimeAddsUpWhatWorkersSay: a Remote member adds up the weight sync
// each Generate answer reports; the gang's is its busiest member's, since members
// copy side by side.
func TestWeightSyncTimeAddsUpWhatWorkersSay(t *testing.T) {
	slow, quick := dialSyncing(t, 0.25), dialSyncing(t, 0.1)
	gang := worker.NewGang(slow, quick)
	ctx := context.Background()
	p := prompts(&generated(t, 1)[0])[0]
	for range 2 {
		if _, err := gang.Generate(ctx, []worker.Rollouts{{Prompts: []worker.Prompt{p}}, {Prompts: []worker.Prompt{p}}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := slow.WeightSyncTime(); got != 500*time.Millisecond {
		t.Errorf("the slow member synced %v, want 2 x 250ms", got)
	}
	if got := gang.WeightSyncTime(); got != 500*time.Millisecond {
		t.Errorf("the gang synced %v, want its busiest member's 500ms", got)
	}
}
