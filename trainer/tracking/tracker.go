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

package tracking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultCapacity is the most points kept for a sink that does not answer: about
	// three thousand steps of thirty metrics, a day of a run at thirty seconds a step.
	DefaultCapacity = 100_000
	// DefaultRetryMin and DefaultRetryMax bound the wait before another try of a sink
	// that failed: it doubles from the first to the second.
	DefaultRetryMin = 2 * time.Second
	DefaultRetryMax = time.Minute
	// maxPointsPerLog is the most points one Log call carries.
	maxPointsPerLog = 1000
)

// Options are a Tracker's settings; zero values take the defaults.
type Options struct {
	// Capacity is the most points kept for each sink that has not recorded them: past
	// it the oldest are dropped, and counted.
	Capacity int
	// RetryMin and RetryMax bound the wait between tries of a sink that failed.
	RetryMin, RetryMax time.Duration
	// Clock times the waits; nil is the real clock.
	Clock clock.WithTicker
	// Log receives what the tracker does not report in Status (each failure once,
	// each recovery).
	Log logr.Logger
}

// Status is how a Tracker's sinks are doing.
type Status struct {
	// RunIDs holds each sink's run id, by its Name, once it is open (sinks without one
	// are absent).
	RunIDs map[string]string
	// Degraded says why a sink does not record now, one sentence per sink (the
	// sink's error names its field); empty while every sink records.
	Degraded string
	// Pending is the number of points not yet recorded by every sink (the most any
	// sink holds), Dropped the number dropped past Capacity, summed over the sinks.
	Pending, Dropped int64
}

// Tracker records a run's points in its sinks, each from a goroutine of its own, so
// that a sink that is down or slow never holds the run up: Log only queues. A sink
// that fails is tried again after a wait (RetryMin doubling to RetryMax), its points
// kept meanwhile (Capacity, the oldest dropped past it); one that fails with a
// PermanentError is given up, its points dropped. When a sink opens, the points at
// or before the steps it already holds (Opened.LastSteps: a resumed run logs again
// the steps after its checkpoint) are skipped, so that each step of each metric is
// recorded once.
type Tracker struct {
	queues []*queue
	wg     sync.WaitGroup
	stop   context.CancelFunc
}

// New starts recording run in sinks.
func New(sinks []Sink, run Run, o Options) *Tracker {
	o = o.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	t := &Tracker{stop: stop}
	for _, s := range sinks {
		q := &queue{sink: s, run: run, o: o, wake: make(chan struct{}, 1), closing: make(chan struct{})}
		t.queues = append(t.queues, q)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			q.serve(ctx)
		}()
	}
	return t
}

func (o Options) withDefaults() Options {
	if o.Capacity <= 0 {
		o.Capacity = DefaultCapacity
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(DefaultRetryMax, o.RetryMin)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Params queues the run's parameters, sent once each sink is open.
func (t *Tracker) Params(params map[string]string) {
	for _, q := range t.queues {
		q.update(func() { q.params = mergeInto(q.params, params) })
	}
}

// Tags queues tags of the run, for the sinks that record tags (Tagger).
func (t *Tracker) Tags(tags map[string]string) {
	for _, q := range t.queues {
		if _, ok := q.sink.(Tagger); ok {
			q.update(func() { q.tags = mergeInto(q.tags, tags) })
		}
	}
}

// Log queues points for every sink; it never blocks on a sink.
func (t *Tracker) Log(points ...Point) {
	for _, q := range t.queues {
		q.update(func() { q.add(points) })
	}
}

// Pending returns, by sink Name, the points a sink has not recorded yet: what a
// checkpoint keeps, so that a resumed run sends them (Restore).
func (t *Tracker) Pending() map[string][]Point {
	out := map[string][]Point{}
	for _, q := range t.queues {
		q.mu.Lock()
		if len(q.points) > 0 {
			out[q.sink.Name()] = slices.Clone(q.points)
		}
		q.mu.Unlock()
	}
	return out
}

// Restore queues points a checkpoint kept for each sink (Pending), ahead of those
// logged since.
func (t *Tracker) Restore(pending map[string][]Point) {
	for _, q := range t.queues {
		if ps := pending[q.sink.Name()]; len(ps) > 0 {
			q.update(func() {
				rest := q.points
				q.points = nil
				q.add(ps)
				q.add(rest)
			})
		}
	}
}

// Status says how the sinks are doing.
func (t *Tracker) Status() Status {
	st := Status{RunIDs: map[string]string{}}
	var degraded []string
	for _, q := range t.queues {
		q.mu.Lock()
		if q.runID != "" {
			st.RunIDs[q.sink.Name()] = q.runID
		}
		if q.err != nil {
			degraded = append(degraded, describe(q.sink, q.err))
		}
		st.Pending = max(st.Pending, int64(len(q.points)))
		st.Dropped += q.dropped
		q.mu.Unlock()
	}
	st.Degraded = strings.Join(degraded, "; ")
	return st
}

// Close sends what is queued while ctx lasts, then ends each sink's run with
// outcome (Sink.Close) and stops. It returns the sinks' errors, and an error naming
// the points left unsent when ctx ended first.
func (t *Tracker) Close(ctx context.Context, outcome string) error {
	for _, q := range t.queues {
		close(q.closing)
		q.poke()
	}
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.stop()
		<-done
	}
	t.stop()
	var errs []error
	for _, q := range t.queues {
		if err := q.finish(ctx, outcome); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// queue is one sink's share of a Tracker: what it has yet to record, and the
// goroutine that sends it.
type queue struct {
	sink Sink
	run  Run
	o    Options
	// wake is signalled when there is something new to send; closing is closed by
	// Close, after which serve returns once the queue is empty.
	wake, closing chan struct{}

	mu sync.Mutex
	// points, params and tags wait to be sent; dropped counts points dropped past
	// Capacity or with a sink given up.
	points       []Point
	params, tags map[string]string
	dropped      int64
	// opened is set once Open succeeded; last is the largest step the sink holds of
	// each key, runID its run's id.
	opened bool
	last   map[string]int64
	runID  string
	// err is the sink's last failure, nil once it records again; gaveUp is set after
	// a PermanentError.
	err    error
	gaveUp bool
}

// update runs f under the queue's lock and wakes its sender.
func (q *queue) update(f func()) {
	q.mu.Lock()
	f()
	q.mu.Unlock()
	q.poke()
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// add appends the points the sink does not hold yet, dropping the oldest past
// Capacity. It is called with mu held.
func (q *queue) add(points []Point) {
	if q.gaveUp {
		q.dropped += int64(len(points))
		return
	}
	for _, p := range points {
		if q.holds(p) {
			continue
		}
		q.points = append(q.points, p)
	}
	if over := len(q.points) - q.o.Capacity; over > 0 {
		q.dropped += int64(over)
		q.points = slices.Delete(q.points, 0, over)
	}
}

// holds reports whether the sink already has a value of p's key at p's step or a
// later one. It is called with mu held.
func (q *queue) holds(p Point) bool {
	last, ok := q.last[p.Key]
	return ok && p.Step <= last
}

// serve sends the queue to the sink until ctx ends, or Close was called and the
// queue is empty.
func (q *queue) serve(ctx context.Context) {
	wait := time.Duration(0)
	for {
		err := q.sendOnce(ctx)
		switch {
		case err == nil:
			wait = 0
		case IsPermanent(err):
			q.giveUp(err)
			return
		default:
			wait = min(max(2*wait, q.o.RetryMin), q.o.RetryMax)
		}
		if q.idle() && q.isClosing() {
			return
		}
		if !q.pause(ctx, wait, err != nil) {
			return
		}
	}
}

// pause waits before the next try: wait after a failure, else until there is
// something new to send. It returns false when ctx ended.
func (q *queue) pause(ctx context.Context, wait time.Duration, failed bool) bool {
	if !failed {
		if !q.idle() {
			return ctx.Err() == nil
		}
		select {
		case <-q.wake:
			return true
		case <-q.closing:
			return true
		case <-ctx.Done():
			return false
		}
	}
	timer := q.o.Clock.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-ctx.Done():
		return false
	}
}

func (q *queue) isClosing() bool {
	select {
	case <-q.closing:
		return true
	default:
		return false
	}
}

// idle reports whether the sink is open and has nothing to send.
func (q *queue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.opened && len(q.points) == 0 && q.params == nil && q.tags == nil
}

// sendOnce takes one step of the sender: open the sink, or send its parameters,
// its tags or its next points, and records the outcome.
func (q *queue) sendOnce(ctx context.Context) error {
	err := q.next(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case err != nil && q.err == nil:
		q.o.Log.Info("experiment tracker does not record the run; its points are kept and sent when it answers", "tracker", q.sink.Name(), "error", err.Error())
	case err == nil && q.err != nil:
		q.o.Log.Info("experiment tracker records the run again", "tracker", q.sink.Name())
	}
	q.err = err
	return err
}

func (q *queue) next(ctx context.Context) error {
	q.mu.Lock()
	opened, params, tags := q.opened, q.params, q.tags
	var points []Point
	if n := min(len(q.points), maxPointsPerLog); n > 0 {
		points = slices.Clone(q.points[:n])
	}
	q.mu.Unlock()
	switch {
	case !opened:
		return q.open(ctx)
	case params != nil:
		if err := q.sink.LogParams(ctx, params); err != nil {
			return err
		}
		q.update(func() { q.params = nil })
	case tags != nil:
		if err := q.sink.(Tagger).SetTags(ctx, tags); err != nil {
			return err
		}
		q.update(func() { q.tags = nil })
	case len(points) > 0:
		if err := q.sink.Log(ctx, points); err != nil {
			return err
		}
		q.sent(points)
	}
	return nil
}

// open opens the sink and drops the queued points it already holds.
func (q *queue) open(ctx context.Context) error {
	o, err := q.sink.Open(ctx, q.run)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.opened, q.runID, q.last = true, o.RunID, maps.Clone(o.LastSteps)
	if q.last == nil {
		q.last = map[string]int64{}
	}
	q.points = slices.DeleteFunc(q.points, q.holds)
	return nil
}

// sent removes the points just recorded from the head of the queue and notes the
// steps the sink now holds.
func (q *queue) sent(points []Point) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.points = slices.Delete(q.points, 0, min(len(points), len(q.points)))
	for _, p := range points {
		if last, ok := q.last[p.Key]; !ok || p.Step > last {
			q.last[p.Key] = p.Step
		}
	}
}

// giveUp stops sending to a sink after err, a PermanentError: its points are
// dropped and counted.
func (q *queue) giveUp(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.o.Log.Info("experiment tracker given up: no retry fixes its error", "tracker", q.sink.Name(), "error", err.Error())
	q.gaveUp, q.err = true, err
	q.dropped += int64(len(q.points))
	q.points, q.params, q.tags = nil, nil, nil
}

// finish ends the sink's run with outcome, when it was opened, and says what was
// left unsent.
func (q *queue) finish(ctx context.Context, outcome string) error {
	q.mu.Lock()
	opened, left := q.opened, len(q.points)
	q.mu.Unlock()
	var errs []error
	if left > 0 {
		errs = append(errs, fmt.Errorf("%s: %d points were not recorded before the run ended", q.sink.Name(), left))
	}
	if opened {
		if err := q.sink.Close(ctx, outcome); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// describe says why sink does not record: a PermanentError names its field; any
// other error is prefixed with the sink's.
func describe(sink Sink, err error) string {
	if IsPermanent(err) {
		return err.Error()
	}
	return sink.Name() + ": " + err.Error()
}

// mergeInto adds src to dst (a new map when dst is nil) and returns it.
func mergeInto(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}
