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

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
)

// TestSilentNamesTheWorkersThatDoNotAnswer: of a gang of an in-process worker, a
// serving remote one and one at an address that refuses connections, Silent names
// only the last, with its place, its address and the refused connection.
func TestSilentNamesTheWorkersThatDoNotAnswer(t *testing.T) {
	refusing := workertest.RefusingAddress(t)
	g := worker.NewGang(worker.NewLocal(cpu.New(1)), serve(t), dial(t, refusing, nil))
	got := g.Silent(context.Background())
	if len(got) != 1 || got[0].Index != 2 || got[0].Address != refusing || !strings.Contains(got[0].Reason, "connection refused") {
		t.Fatalf("Silent = %+v, want worker 2 at %s, connection refused", got, refusing)
	}
}

// TestSilentCountsAnErrorAsAnAnswer: a worker that refuses the trainer's token has
// answered; Configure, not the wait, says what is wrong.
func TestSilentCountsAnErrorAsAnAnswer(t *testing.T) {
	r, err := worker.Dial(listen(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if got := worker.NewGang(r).Silent(context.Background()); len(got) != 0 {
		t.Errorf("Silent = %+v, want none: the worker answered (Unauthenticated)", got)
	}
}

// TestModelIncompleteCrossesTheProtocol: a policy's refusal of an incomplete model
// reaches the trainer as a *ModelIncompleteError with the same detail, from a remote
// worker (a FailedPrecondition status with ModelIncompletePrefix) as from an
// in-process one, through the gang, which names the worker.
func TestModelIncompleteCrossesTheProtocol(t *testing.T) {
	p := workertest.IncompleteModel{Policy: cpu.New(1)}
	addr := listenPolicy(t, p, worker.ServerOptions{NoAuth: true})
	for name, m := range map[string]worker.Member{"remote": dial(t, addr, nil), "local": worker.NewLocal(p)} {
		_, err := worker.NewGang(m).Configure(context.Background(), worker.Setup{})
		var mi *worker.ModelIncompleteError
		if !errors.As(err, &mi) || mi.Detail != workertest.IncompleteModelDetail {
			t.Errorf("%s: Configure: %v, want a *ModelIncompleteError with detail %q", name, err, workertest.IncompleteModelDetail)
		}
	}
}
