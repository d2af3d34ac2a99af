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
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// drainAt is a Reporter that closes drain when a report reaches step and stage,
// as SIGTERM would while that step's report goes out, and keeps every report.
type drainAt struct {
	recorder
	step  int64
	stage trainingv1alpha1.TrainingStage
	drain chan struct{}
	once  sync.Once
}

func (d *drainAt) Report(ctx context.Context, s *trainingv1alpha1.TrainingStatus) error {
	if s.Step == d.step && s.Stage == d.stage {
		d.once.Do(func() { close(d.drain) })
	}
	return d.recorder.Report(ctx, s)
}

// drainedRun runs c until the drain at step (in stage), with fresh workers, and
// returns the reports and Run's error.
func drainedRun(t *testing.T, c *Config, step int64, stage trainingv1alpha1.TrainingStage) (*drainAt, error) {
	t.Helper()
	d := &drainAt{step: step, stage: stage, drain: make(chan struct{})}
	c.Spec.Trainer.StatusInterval = &metav1.Duration{} // report every step: the drain comes with step's report
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Reporter: d, Drain: d.drain, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if rep != nil {
		t.Fatalf("a drained run returned the final report %+v", rep)
	}
	return d, err
}

// drainAndResume runs the config mk makes three times: whole; with a checkpoint claim,
// drained at step 3 of stage; and resumed from that claim, which must complete with the
// whole run's weights, byte for byte. It returns the drained run's reports and the
// resumed run's.
func drainAndResume(t *testing.T, mk func() *Config, stage trainingv1alpha1.TrainingStage) (*drainAt, *recorder) {
	t.Helper()
	ws := cpuMembers(1)
	run(t, mk(), Options{Workers: worker.NewGang(ws...)})
	want := savedState(t, ws[0])

	c := mk()
	c.CheckpointDir = t.TempDir()
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 100, Keep: 2}
	d, err := drainedRun(t, c, 3, stage)
	if !errors.Is(err, ErrDrained) {
		t.Fatalf("Run returned %v, want ErrDrained", err)
	}
	resumed, rec := cpuMembers(1), &recorder{}
	rep, _ := run(t, c, Options{Workers: worker.NewGang(resumed...), Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if got := savedState(t, resumed[0]); !bytes.Equal(got, want) {
		t.Errorf("the drained and resumed run's final state differs from the uninterrupted run's")
	}
	return d, rec
}

// TestDrainCheckpointsTheStepInFlight drains a run mid-epoch, far from any periodic
// checkpoint: it checkpoints the step it was in, says so in its last report, and a
// resumed run continues at the next step and ends with the uninterrupted run's
// weights, byte for byte.
func TestDrainCheckpointsTheStepInFlight(t *testing.T) {
	d, rec := drainAndResume(t, func() *Config { return smallConfig(t, trainingv1alpha1.AlgorithmESPO) }, trainingv1alpha1.StageSFT)
	last := d.reports[len(d.reports)-1]
	if last.LastCheckpoint == nil || last.LastCheckpoint.Step != 3 || last.Step != 3 {
		t.Fatalf("last report: step %d, checkpoint %+v; want both at step 3", last.Step, last.LastCheckpoint)
	}
	if !strings.Contains(last.Message, "stopped on SIGTERM after step 3") || last.Outcome != "" {
		t.Errorf("last report: outcome %q, message %q", last.Outcome, last.Message)
	}
	if first := rec.reports[0].Step; first != 4 {
		t.Errorf("the resumed run's first report is at step %d, want 4", first)
	}
}

// TestDrainWithoutCheckpointsSaysSo drains a run that has no checkpoint claim.
func TestDrainWithoutCheckpointsSaysSo(t *testing.T) {
	d, err := drainedRun(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), 2, trainingv1alpha1.StageSFT)
	if !errors.Is(err, ErrDrained) {
		t.Fatalf("Run returned %v, want ErrDrained", err)
	}
	last := d.reports[len(d.reports)-1]
	if last.Step != 2 || !strings.Contains(last.Message, "no checkpoint") {
		t.Errorf("last report: step %d, message %q", last.Step, last.Message)
	}
}

// drainOnSave closes drain when the worker is asked to save (a checkpoint).
type drainOnSave struct {
	worker.Member
	drain chan struct{}
	once  sync.Once
}

func (w *drainOnSave) Save(ctx context.Context, path string) error {
	err := w.Member.Save(ctx, path)
	w.once.Do(func() { close(w.drain) })
	return err
}

// TestDrainAtAnEpochsEnd drains a run while it writes the first epoch's checkpoint,
// just before that epoch's evaluation: it stops without starting the next epoch, and
// a resumed run evaluates the epoch and completes with the uninterrupted run's weights.
func TestDrainAtAnEpochsEnd(t *testing.T) {
	whole := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	ws := cpuMembers(1)
	wholeRep, _ := run(t, whole, Options{Workers: worker.NewGang(ws...)})
	want := savedState(t, ws[0])

	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.CheckpointDir = t.TempDir()
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 100, Keep: 2}
	w := &drainOnSave{Member: cpuMembers(1)[0], drain: make(chan struct{})}
	rec := &recorder{}
	tr, err := newTrainer(c, Options{Workers: worker.NewGang(w), Reporter: rec, Drain: w.drain, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatalf("Run returned %v, want ErrDrained", err)
	}
	last := rec.reports[len(rec.reports)-1]
	if last.Stage != trainingv1alpha1.StageSFT || last.LastCheckpoint == nil || last.LastCheckpoint.Step != last.Step {
		t.Fatalf("last report: stage %s, step %d, checkpoint %+v; want the SFT epoch's end", last.Stage, last.Step, last.LastCheckpoint)
	}

	resumed := cpuMembers(1)
	rep, _ := run(t, c, Options{Workers: worker.NewGang(resumed...)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps != wholeRep.Steps {
		t.Fatalf("resumed run: outcome %s after %d steps, want Completed after %d", rep.Outcome, rep.Steps, wholeRep.Steps)
	}
	if len(rep.Validation) != len(wholeRep.Validation) {
		t.Errorf("resumed run: %d validations, want %d (one per epoch)", len(rep.Validation), len(wholeRep.Validation))
	}
	if got := savedState(t, resumed[0]); !bytes.Equal(got, want) {
		t.Errorf("the resumed run's final state differs from the uninterrupted run's")
	}
}

// stuckWorker never answers Configure until its context ends (a worker pod still
// pending); it counts Release calls as releaseCounter does.
type stuckWorker struct {
	releaseCounter
}

func (w *stuckWorker) Configure(ctx context.Context, _ worker.Setup) (worker.Description, error) {
	<-ctx.Done()
	return worker.Description{}, ctx.Err()
}

// TestDrainWhileWaitingForWorkers drains a run whose worker never starts: Run stops
// at once, reports no Error outcome, and releases the worker.
func TestDrainWhileWaitingForWorkers(t *testing.T) {
	w := &stuckWorker{releaseCounter{Member: cpuMembers(1)[0]}}
	drain, rec := make(chan struct{}), &recorder{}
	close(drain)
	tr, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(w), Reporter: rec, Drain: drain, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatalf("Run returned %v, want ErrDrained", err)
	}
	for _, r := range rec.reports {
		if r.Outcome != "" {
			t.Errorf("a drained run reported the outcome %s: %s", r.Outcome, r.Message)
		}
	}
	if last := rec.reports[len(rec.reports)-1]; !strings.Contains(last.Message, "stopped on SIGTERM after step 0") {
		t.Errorf("last message %q", last.Message)
	}
	if w.released.Load() != 1 {
		t.Errorf("the worker was released %d times, want 1", w.released.Load())
	}
}

// releaseCounter counts Release calls.
type releaseCounter struct {
	worker.Member
	released atomic.Int32
}

func (w *releaseCounter) Release(ctx context.Context) error {
	w.released.Add(1)
	return w.Member.Release(ctx)
}

// TestEveryRunReleasesItsWorkers checks that a run that completes releases each of
// its workers once.
func TestEveryRunReleasesItsWorkers(t *testing.T) {
	ws := []*releaseCounter{{Member: cpuMembers(1)[0]}, {Member: cpuMembers(1)[0]}}
	rep, _ := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(ws[0], ws[1])})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	for i, w := range ws {
		if n := w.released.Load(); n != 1 {
			t.Errorf("worker %d released %d times, want 1", i, n)
		}
	}
}
