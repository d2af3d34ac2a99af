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
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// hungBackward is a CPU policy whose Backward never returns until release is closed.
type hungBackward struct {
	worker.Policy
	release chan struct{}
}

func (h *hungBackward) Backward(items []*workerpb.Weighted) (float64, int64, error) {
	<-h.release
	return h.Policy.Backward(items)
}

// TestACallThatNeverReturnsFailsNamingTheWorkerTheCallAndTheWait: with a call timeout,
// a Backward that hangs fails after it with a *CallTimeoutError naming the worker's
// address, the call and the wait (and wrapping gRPC's DeadlineExceeded), while the
// calls before it, quick ones, pass; without one, the call waits on.
func TestACallThatNeverReturnsFailsNamingTheWorkerTheCallAndTheWait(t *testing.T) {
	h := &hungBackward{Policy: cpu.New(2), release: make(chan struct{})}
	defer close(h.release)
	addr := listenPolicy(t, h, worker.ServerOptions{Token: workertest.Token})
	ctx := context.Background()
	ep := &generated(t, 2)[1]
	ps := prompts(ep)
	items := []worker.Weighted{{Prompt: ps[0], Answer: demonstrated(ep, 0), SequenceWeight: 1}}

	r, err := worker.Dial(addr, nil, workertest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const timeout = 300 * time.Millisecond
	r.SetCallTimeout(timeout)
	if _, err := r.Configure(ctx, worker.Setup{Seed: 4, Options: smallModel}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Backward(ctx, items)
	var te *worker.CallTimeoutError
	if !errors.As(err, &te) || te.Addr != addr || te.Call != "Backward" || te.Timeout != timeout {
		t.Fatalf("Backward: %v, want a CallTimeoutError of %s, Backward, %s", err, addr, timeout)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("code %v, want DeadlineExceeded", status.Code(err))
	}
	want := "worker " + addr + ": Backward did not return within 300ms (half of spec.runPolicy.progressDeadlineSeconds)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start with %q", err, want)
	}

	r.SetCallTimeout(0)
	short, cancel := context.WithTimeout(ctx, 3*timeout)
	defer cancel()
	_, err = r.Backward(short, items)
	if errors.As(err, &te) || status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("without a call timeout, Backward ended with %v, want the caller's own deadline", err)
	}
}
