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

package trainer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/permanent"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
)

// TestAnIncompleteModelEndsTheRunWithModelIncomplete: a worker's refusal of an
// incomplete model folder ends the run at once with the ModelIncomplete outcome, the
// worker's message (the folder, the missing file) in the report, and an error whose
// PermanentOutcome is ModelIncomplete.
func TestAnIncompleteModelEndsTheRunWithModelIncomplete(t *testing.T) {
	rec := &recorder{}
	tr, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{
		Workers: worker.NewGang(worker.NewLocal(workertest.IncompleteModel{Policy: cpu.New(0)})), Reporter: rec, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeModelIncomplete {
		t.Fatalf("Run: %v, outcome %q; want ModelIncomplete", err, got)
	}
	last := rec.reports[len(rec.reports)-1]
	want := "worker 0 (in process): " + worker.ModelIncompletePrefix + workertest.IncompleteModelDetail
	if last.Outcome != trainingv1alpha1.OutcomeModelIncomplete || last.Message != want {
		t.Errorf("last report: outcome %q, message %q; want ModelIncomplete, %q", last.Outcome, last.Message, want)
	}
}

// TestAnyOtherConfigureErrorIsNoPermanentOutcome: an error of Configure that is no
// refusal of the model keeps the Error outcome, which the controller retries.
func TestAnyOtherConfigureErrorIsNoPermanentOutcome(t *testing.T) {
	if got := PermanentOutcome(permanent.OfWorkers(errors.New("connection reset"), "")); got != "" {
		t.Errorf("PermanentOutcome = %q, want none", got)
	}
}

// waitFor polls cond until it holds, failing the test after a generous bound: the
// goroutines it waits for react to the fake clock, not to time passing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waits returns the waitingForWorker of every report so far.
func (r *recorder) waits() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.reports {
		out = append(out, s.WaitingForWorker)
	}
	return out
}

// TestAWorkerThatDoesNotAnswerIsReported: while the trainer waits for a worker at an
// address that refuses connections, it reports, once per statusInterval on its
// clock, which worker, its address, how long it has waited and the refused
// connection; a run stopped meanwhile ends without an outcome.
func TestAWorkerThatDoesNotAnswerIsReported(t *testing.T) {
	addr := workertest.RefusingAddress(t)
	r, err := worker.Dial(addr, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Trainer.StatusInterval = &metav1.Duration{Duration: 10 * time.Second}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := &recorder{}
	tr, err := newTrainer(c, Options{Workers: worker.NewGang(worker.NewLocal(cpu.New(0)), r), Reporter: rec, Clock: clock, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { _, err := tr.Run(ctx); ran <- err }()

	step := func(d time.Duration, reports int) []string {
		t.Helper()
		waitFor(t, "the trainer's timer", clock.HasWaiters)
		clock.Step(d)
		waitFor(t, "a report", func() bool { return len(rec.waits()) >= reports })
		return rec.waits()
	}
	if got := step(10*time.Second, 1); !strings.HasPrefix(got[0], "waiting 10s for worker 1 ("+addr+"): ") ||
		!strings.Contains(got[0], "connection refused") {
		t.Fatalf("first report %q, want waiting 10s for worker 1 (%s), connection refused", got[0], addr)
	}
	waitFor(t, "the trainer's next timer", clock.HasWaiters)
	clock.Step(5 * time.Second) // half an interval: no report
	got := step(2*time.Minute+5*time.Second, 2)
	if len(got) != 2 || !strings.HasPrefix(got[1], "waiting 2m20s for worker 1 ("+addr+"): ") {
		t.Fatalf("reports %q, want a second one after 2m20s and none in between", got)
	}
	t.Logf("reported: %s", got[1])
	cancel()
	if err := <-ran; err == nil {
		t.Fatal("Run returned no error after its context ended")
	}
	for _, s := range rec.reports {
		if s.Outcome != "" {
			t.Errorf("a stopped run reported the outcome %s", s.Outcome)
		}
	}
}

// TestAWaitIsClearedOnceTheWorkerAnswers: once the worker at the refused address
// comes up, the trainer clears the wait in a report at once and trains to the end;
// no later report carries the wait.
func TestAWaitIsClearedOnceTheWorkerAnswers(t *testing.T) {
	addr := workertest.RefusingAddress(t)
	r, err := worker.Dial(addr, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := &recorder{}
	tr, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmSFT), Options{Workers: worker.NewGang(r), Reporter: rec, Clock: clock, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		rep *Report
		err error
	}
	ran := make(chan result, 1)
	go func() { rep, err := tr.Run(context.Background()); ran <- result{rep, err} }()
	waitFor(t, "the trainer's timer", clock.HasWaiters)
	clock.Step(trainingv1alpha1.DefaultStatusInterval)
	waitFor(t, "the wait's report", func() bool { return len(rec.waits()) == 1 })

	lis, err := net.Listen("tcp", addr) // the worker comes up where the trainer waits for it
	if err != nil {
		t.Fatal(err)
	}
	gs, err := worker.NewGRPCServer(cpu.New(0), worker.ServerOptions{NoAuth: true, Allowed: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	res := <-ran
	if res.err != nil || res.rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("Run: %v, %+v; want Completed", res.err, res.rep)
	}
	waits := rec.waits()
	if !strings.HasPrefix(waits[0], "waiting 10s for worker 0 ("+addr+"): ") || waits[1] != "" {
		t.Fatalf("waits reported %q, want the wait, then a report that clears it", waits[:2])
	}
	for i, w := range waits[1:] {
		if w != "" {
			t.Errorf("report %d carries the wait %q after the worker answered", i+1, w)
		}
	}
}
