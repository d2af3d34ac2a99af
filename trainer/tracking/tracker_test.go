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

package tracking_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// memSink records in memory; down makes every call fail as a tracker that does not
// answer, refuse as one that refuses the credentials.
type memSink struct {
	mu       sync.Mutex
	down     bool
	refuse   bool
	held     map[string]int64 // what Open finds already there
	opens    int
	points   []tracking.Point
	params   map[string]string
	tags     map[string]string
	outcomes []string
}

func (s *memSink) Name() string { return "spec.tracking.mem" }

func (s *memSink) fail() error {
	switch {
	case s.refuse:
		return tracking.Permanent("spec.tracking.mem.credentialsSecret", errors.New("the tracker refused the credentials"))
	case s.down:
		return errors.New("mem tracker does not answer")
	}
	return nil
}

func (s *memSink) Open(context.Context, tracking.Run) (tracking.Opened, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(); err != nil {
		return tracking.Opened{}, err
	}
	s.opens++
	return tracking.Opened{RunID: "run-1", LastSteps: maps.Clone(s.held)}, nil
}

func (s *memSink) LogParams(_ context.Context, p map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(); err != nil {
		return err
	}
	s.params = p
	return nil
}

func (s *memSink) SetTags(_ context.Context, tags map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(); err != nil {
		return err
	}
	s.tags = tags
	return nil
}

func (s *memSink) Log(_ context.Context, ps []tracking.Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail(); err != nil {
		return err
	}
	s.points = append(s.points, ps...)
	return nil
}

func (s *memSink) Close(_ context.Context, outcome string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, outcome)
	return nil
}

func (s *memSink) set(f func(s *memSink)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// recorded lists the sink's points as key@step.
func (s *memSink) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.points {
		out = append(out, fmt.Sprintf("%s@%d", p.Key, p.Step))
	}
	return out
}

var t0 = time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)

// steps returns key's points at the steps from..to.
func steps(key string, from, to int64) []tracking.Point {
	var ps []tracking.Point
	for s := from; s <= to; s++ {
		ps = append(ps, tracking.Point{Key: key, Value: float64(s) / 10, Step: s, Time: t0.Add(time.Duration(s) * time.Second)})
	}
	return ps
}

func names(ps []tracking.Point) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s@%d", p.Key, p.Step))
	}
	return out
}

// waitFor polls cond, moving the fake clock past every retry wait, until it holds
// or the named timeout passes.
func waitFor(t *testing.T, clock *clocktesting.FakeClock, what string, cond func() bool) {
	t.Helper()
	const timeout = 30 * time.Second
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if cond() {
			return true, nil
		}
		clock.Step(tracking.DefaultRetryMax) // past every retry wait
		return false, nil
	}); err != nil {
		t.Fatalf("after %v: %s", timeout, what)
	}
}

func newTracker(sink *memSink, capacity int) (*tracking.Tracker, *clocktesting.FakeClock) {
	clock := clocktesting.NewFakeClock(t0)
	return tracking.New([]tracking.Sink{sink}, tracking.Run{JobUID: "u"}, tracking.Options{Capacity: capacity, Clock: clock}), clock
}

func closeTracker(t *testing.T, tr *tracking.Tracker, outcome string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return tr.Close(ctx, outcome)
}

// TestTrackerRecordsEveryPointOnceInOrder: points, params and tags reach the sink,
// the points in the order logged; Close ends the run with the outcome.
func TestTrackerRecordsEveryPointOnceInOrder(t *testing.T) {
	sink := &memSink{}
	tr, _ := newTracker(sink, 0)
	tr.Params(map[string]string{"algorithm.name": "espo"})
	tr.Tags(map[string]string{"espo.dev/export": "pvc://models/run-1"})
	tr.Log(steps("train/loss", 1, 3)...)
	tr.Log(steps("train/kl", 1, 2)...)
	if err := closeTracker(t, tr, "Succeeded"); err != nil {
		t.Fatal(err)
	}
	want := "train/loss@1 train/loss@2 train/loss@3 train/kl@1 train/kl@2"
	if got := strings.Join(sink.recorded(), " "); got != want {
		t.Errorf("recorded %s, want %s", got, want)
	}
	if sink.params["algorithm.name"] != "espo" || sink.tags["espo.dev/export"] == "" || len(sink.outcomes) != 1 || sink.outcomes[0] != "Succeeded" {
		t.Errorf("params %v, tags %v, outcomes %v", sink.params, sink.tags, sink.outcomes)
	}
	if st := tr.Status(); st.RunIDs["spec.tracking.mem"] != "run-1" || st.Degraded != "" || st.Pending != 0 || st.Dropped != 0 {
		t.Errorf("status %+v", st)
	}
}

// TestTrackerKeepsPointsWhileTheSinkIsDown: Log does not wait for a sink that does
// not answer; the status says it is degraded and how many points wait; when it
// answers again every point arrives once, in order, and the status clears.
func TestTrackerKeepsPointsWhileTheSinkIsDown(t *testing.T) {
	sink := &memSink{down: true}
	tr, clock := newTracker(sink, 0)
	tr.Log(steps("train/loss", 1, 4)...)
	waitFor(t, clock, "the status says the tracker is degraded", func() bool {
		st := tr.Status()
		return strings.Contains(st.Degraded, "does not answer") && st.Pending == 4
	})
	tr.Log(steps("train/loss", 5, 6)...)
	sink.set(func(s *memSink) { s.down = false })
	waitFor(t, clock, "the kept points are recorded", func() bool { return len(sink.recorded()) == 6 })
	if got := strings.Join(sink.recorded(), " "); got != strings.Join(names(steps("train/loss", 1, 6)), " ") {
		t.Errorf("recorded %s", got)
	}
	waitFor(t, clock, "the status clears", func() bool { st := tr.Status(); return st.Degraded == "" && st.Pending == 0 })
	if err := closeTracker(t, tr, ""); err != nil {
		t.Fatal(err)
	}
}

// TestTrackerDropsTheOldestPastCapacity: a sink away longer than Capacity points
// gets the newest, and the status counts the dropped.
func TestTrackerDropsTheOldestPastCapacity(t *testing.T) {
	sink := &memSink{down: true}
	tr, clock := newTracker(sink, 5)
	tr.Log(steps("train/loss", 1, 8)...)
	if st := tr.Status(); st.Dropped != 3 || st.Pending != 5 {
		t.Errorf("status %+v, want 3 dropped and 5 pending", st)
	}
	sink.set(func(s *memSink) { s.down = false })
	waitFor(t, clock, "the kept points are recorded", func() bool { return len(sink.recorded()) == 5 })
	if got, want := strings.Join(sink.recorded(), " "), strings.Join(names(steps("train/loss", 4, 8)), " "); got != want {
		t.Errorf("recorded %s, want the newest: %s", got, want)
	}
	if err := closeTracker(t, tr, ""); err != nil {
		t.Fatal(err)
	}
}

// TestTrackerSkipsWhatTheSinkHolds: a resumed run logs again the steps after its
// checkpoint; those the sink already holds (per key) are skipped, the rest sent.
func TestTrackerSkipsWhatTheSinkHolds(t *testing.T) {
	sink := &memSink{held: map[string]int64{"train/loss": 3}}
	tr, _ := newTracker(sink, 0)
	tr.Log(steps("train/loss", 2, 5)...)
	tr.Log(steps("eval/validation/recommendationAccuracy", 3, 3)...)
	if err := closeTracker(t, tr, ""); err != nil {
		t.Fatal(err)
	}
	want := "train/loss@4 train/loss@5 eval/validation/recommendationAccuracy@3"
	if got := strings.Join(sink.recorded(), " "); got != want {
		t.Errorf("recorded %s, want %s", got, want)
	}
}

// TestTrackerGivesUpARefusingSink: a PermanentError at Open is said at once in the
// status, naming the field; its points are dropped and counted, and Close does not
// wait for it.
func TestTrackerGivesUpARefusingSink(t *testing.T) {
	sink := &memSink{refuse: true}
	tr, clock := newTracker(sink, 0)
	waitFor(t, clock, "the status names the credentials", func() bool {
		return strings.Contains(tr.Status().Degraded, "spec.tracking.mem.credentialsSecret")
	})
	tr.Log(steps("train/loss", 1, 3)...)
	if st := tr.Status(); st.Dropped != 3 || st.Pending != 0 {
		t.Errorf("status %+v, want the 3 points dropped", st)
	}
	if err := closeTracker(t, tr, "Failed"); err != nil {
		t.Fatal(err)
	}
	if len(sink.outcomes) != 0 {
		t.Errorf("a sink never opened was closed: %v", sink.outcomes)
	}
}

// TestTrackerPendingSurvivesARestart: the points a down sink has not recorded are
// what a checkpoint keeps; a new tracker that restores them sends them ahead of the
// points logged since.
func TestTrackerPendingSurvivesARestart(t *testing.T) {
	sink := &memSink{down: true}
	tr, _ := newTracker(sink, 0)
	tr.Log(steps("train/loss", 1, 3)...)
	pending := tr.Pending()
	if got := len(pending["spec.tracking.mem"]); got != 3 {
		t.Fatalf("pending %v, want 3 points", pending)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the pod is killed: nothing more is sent
	if err := tr.Close(ctx, ""); err == nil || !strings.Contains(err.Error(), "3 points were not recorded") {
		t.Errorf("close: %v, want the 3 points named", err)
	}

	sink.set(func(s *memSink) { s.down = false })
	again, _ := newTracker(sink, 0)
	again.Log(steps("train/loss", 4, 5)...)
	again.Restore(pending)
	if err := closeTracker(t, again, "Succeeded"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(sink.recorded(), " "), strings.Join(names(steps("train/loss", 1, 5)), " "); got != want {
		t.Errorf("recorded %s, want %s", got, want)
	}
}

// TestPointsSurviveJSON: a checkpoint keeps points as JSON, the values JSON numbers
// cannot hold (a NaN loss) included.
func TestPointsSurviveJSON(t *testing.T) {
	in := []tracking.Point{{Key: "train/loss", Value: math.NaN(), Step: 3, Time: t0}, {Key: "a", Value: math.Inf(-1), Step: 4, Time: t0},
		{Key: "b", Value: 0.125, Step: 5, Time: t0}, {Key: "c", Value: math.Inf(1), Step: 6, Time: t0}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []tracking.Point
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) || !math.IsNaN(out[0].Value) || !math.IsInf(out[1].Value, -1) || out[2] != in[2] || !math.IsInf(out[3].Value, 1) ||
		out[0].Key != "train/loss" || out[0].Step != 3 || !out[0].Time.Equal(t0) {
		t.Errorf("%s read back as %+v", b, out)
	}
}

// slowSink is a memSink whose Log waits until release is closed.
type slowSink struct {
	memSink
	release chan struct{}
}

func (s *slowSink) Log(ctx context.Context, ps []tracking.Point) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.memSink.Log(ctx, ps)
}

// TestASlowSinkDoesNotHoldUpLog: while the sink takes its time over a Log call,
// the run's Log calls return at once and the points wait; they arrive once it
// answers.
func TestASlowSinkDoesNotHoldUpLog(t *testing.T) {
	sink := &slowSink{release: make(chan struct{})}
	tr, clock := tracking.New([]tracking.Sink{sink}, tracking.Run{JobUID: "u"}, tracking.Options{}), clocktesting.NewFakeClock(t0)
	for s := int64(1); s <= 200; s++ {
		tr.Log(steps("train/loss", s, s)...) // would block here if Log waited for the sink
	}
	if st := tr.Status(); st.Pending != 200 {
		t.Errorf("status %+v, want all 200 points waiting", st)
	}
	close(sink.release)
	waitFor(t, clock, "the points arrive", func() bool { return len(sink.recorded()) == 200 })
	if err := closeTracker(t, tr, "Succeeded"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTrackerLog measures what tracking costs the training loop per step: one
// Log of a step's 30 points, the sink taking them from its own goroutine.
func BenchmarkTrackerLog(b *testing.B) {
	sink := &memSink{}
	tr := tracking.New([]tracking.Sink{sink}, tracking.Run{JobUID: "u"}, tracking.Options{})
	ps := make([]tracking.Point, 30)
	for i := range ps {
		ps[i] = tracking.Point{Key: fmt.Sprintf("train/metric_%d", i), Value: float64(i), Time: t0}
	}
	b.ReportAllocs()
	for i := range b.N {
		for j := range ps {
			ps[j].Step = int64(i + 1)
		}
		tr.Log(ps...)
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tr.Close(ctx, ""); err != nil {
		b.Fatal(err)
	}
}
