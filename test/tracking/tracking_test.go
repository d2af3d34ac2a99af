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

// Package tracking tests a training run's experiment tracking end to end: the
// trainer with CPU workers records into a real MLflow server (from the worker's
// Python environment, read back through MLflow's own client) and into TensorBoard
// event files, across a kill and a resume, with the tracker down for a while.
package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/mlflowtest"
	"github.com/espo-dev/espo-operator/test/pyenv"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/tracking/tensorboard"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mlflowtest.StopShared()
	os.Exit(code)
}

// trackedConfig is a run of 5 SFT and 5 ESPO steps on synthetic episodes with the
// CPU policy, checkpointed every 2 steps, recorded in MLflow at uri (experiment
// named after the test) and in TensorBoard under the checkpoint folder.
func trackedConfig(t testing.TB, uri string, uid types.UID) *trainer.Config {
	t.Helper()
	c := &trainer.Config{OutputDir: t.TempDir(), CheckpointDir: t.TempDir()}
	c.Job = trainingv1alpha1.JobRef{Namespace: "team-a", Name: "tracked", UID: uid}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "synth",
		Synthetic: &trainingv1alpha1.SyntheticSource{Channels: []trainingv1alpha1.Channel{"food", "hotel"}, Episodes: 12, Seed: 3}}}
	one := int32(1)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmESPO, SFTEpochs: &one, Epochs: 1, GroupSize: 3,
		EpisodesPerBatch: 2, LearningRate: "0.01", Seed: 11}
	c.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 16}
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 2, Keep: 2}
	c.Spec.Tracking = &trainingv1alpha1.TrackingSpec{
		MLflow:      &trainingv1alpha1.MLflowTracking{TrackingURI: uri, Experiment: t.Name(), RunName: "{name}-{algorithm}"},
		TensorBoard: &trainingv1alpha1.TensorBoardTracking{Path: "tb"},
	}
	c.Spec.Default()
	return c
}

// reports keeps every report, and calls at(status) on each.
type reports struct {
	mu  sync.Mutex
	all []*trainingv1alpha1.TrainingStatus
	at  func(s *trainingv1alpha1.TrainingStatus)
}

func (r *reports) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	r.mu.Lock()
	r.all = append(r.all, s)
	r.mu.Unlock()
	if r.at != nil {
		r.at(s)
	}
	return nil
}

func (r *reports) last() *trainingv1alpha1.TrainingStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[len(r.all)-1]
}

// degraded returns the first tracking.degraded any report carried.
func (r *reports) degraded() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.all {
		if s.Tracking != nil && s.Tracking.Degraded != "" {
			return s.Tracking.Degraded
		}
	}
	return ""
}

// run runs c's trainer with one CPU worker and the tracker tr, reporting to rep,
// until ctx ends or the run does; tr gets closeWait to send what it queues at the
// end.
func run(ctx context.Context, t testing.TB, c *trainer.Config, tr *tracking.Tracker, rep trainer.Reporter, closeWait time.Duration) (*trainer.Report, error) {
	t.Helper()
	s, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := trainer.New(s, trainer.Options{Workers: worker.NewGang(worker.NewLocal(cpu.New(0), os.TempDir())), Reporter: rep,
		Log: logr.Discard(), Tracker: tr, TrackerCloseTimeout: closeWait})
	if err != nil {
		t.Fatal(err)
	}
	return tn.Run(ctx)
}

// newTracker is c's tracker, with no credentials in its environment.
func newTracker(c *trainer.Config) *tracking.Tracker {
	return trainer.NewTracker(c, func(string) string { return "" }, clock.RealClock{}, logr.Discard())
}

// waitUntil polls cond until it holds, failing the test after the named timeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const timeout = time.Minute
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("after %v: %s", timeout, what)
	}
}

// killedAt runs c until the report of step kill, then kills it: the tracker gets no
// time to send what it still queues. at runs on every report before that.
func killedAt(t *testing.T, c *trainer.Config, tr *tracking.Tracker, kill int64, at func(s *trainingv1alpha1.TrainingStatus)) *reports {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep := &reports{at: func(s *trainingv1alpha1.TrainingStatus) {
		at(s)
		if s.Step == kill {
			cancel()
		}
	}}
	if _, err := run(ctx, t, c, tr, rep, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("the run killed at step %d returned %v, want context.Canceled", kill, err)
	}
	return rep
}

// TestARunKilledAndResumedHasEachStepOnce: the tracker goes down after step 2 and
// the run trains on, its status saying so; it is killed after step 7, and its
// checkpoint of step 6 keeps the points MLflow did not take. Resumed with the
// tracker back up, it sends them; killed again after step 9 (MLflow holding every
// step so far), it resumes from step 8 and logs step 9 again, which MLflow already
// holds. In the end every step of every metric is in MLflow exactly once, with the
// evaluations, the parameters and the run FINISHED; TensorBoard's event files hold
// the same tags and steps, each once.
func TestARunKilledAndResumedHasEachStepOnce(t *testing.T) {
	server := mlflowtest.Shared(t)
	sw := mlflowtest.NewSwitch(t, server.URI())
	uid := types.UID(fmt.Sprintf("uid-%d", time.Now().UnixNano()))
	c := trackedConfig(t, sw.URI(), uid)
	c.Spec.Trainer.StatusInterval = &metav1.Duration{Duration: time.Nanosecond} // a report after every step

	tr := newTracker(c)
	first := killedAt(t, c, tr, 7, func(s *trainingv1alpha1.TrainingStatus) {
		switch s.Step {
		case 2:
			sw.Down()
		case 3:
			waitUntil(t, "the tracker finds MLflow down", func() bool { return tr.Status().Degraded != "" })
		}
	})
	if d := first.degraded(); !strings.Contains(d, "spec.tracking.mlflow") {
		t.Errorf("no report of the first run said the tracker was down (degraded %q)", d)
	}

	sw.Up()
	tr = newTracker(c)
	killedAt(t, c, tr, 9, func(s *trainingv1alpha1.TrainingStatus) {
		if s.Step == 9 {
			waitUntil(t, "MLflow takes every step so far", func() bool { st := tr.Status(); return st.Pending == 0 && st.Degraded == "" })
		}
	})

	last := &reports{}
	rep, err := run(context.Background(), t, c, newTracker(c), last, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps != 10 {
		t.Fatalf("outcome %s after %d steps: %s", rep.Outcome, rep.Steps, rep.Message)
	}
	if rep.Status.ResumedFrom == nil || rep.Status.ResumedFrom.Step != 8 {
		t.Fatalf("resumed from %+v, want the checkpoint of step 8", rep.Status.ResumedFrom)
	}

	stepKeys := []string{"train/loss", "train/grad_norm", "train/learning_rate", "train/tokens", "time/step", "time/sampling", "time/backward", "time/optimizer"}
	rlKeys := []string{"train/reward", "train/reward/gui", "train/cout", "train/kl", "train/advantage/std", "time/reference"}
	evalKeys := []string{"eval/validation/recommendationAccuracy", "eval/test/stepSuccessRate"}
	all := slices.Concat(stepKeys, rlKeys, evalKeys, []string{"time/checkpoint"})
	mr, ok := server.FindRun(t, t.Name(), string(uid), all...)
	if !ok {
		t.Fatal("MLflow has no run of the job")
	}
	if mr.Status != "FINISHED" || mr.Tags["mlflow.runName"] != "tracked-espo" {
		t.Errorf("run status %s, name %q; want FINISHED, tracked-espo", mr.Status, mr.Tags["mlflow.runName"])
	}
	if got := rep.Status.Tracking; got == nil || got.MLflowRunID != mr.ID || got.Degraded != "" || got.Pending != 0 || got.Dropped != 0 {
		t.Errorf("status.training.tracking %+v, want run %s, recording, nothing waiting or dropped", got, mr.ID)
	}
	if mr.Params["algorithm.groupSize"] != "3" || mr.Params["algorithm.name"] != "espo" || mr.Params["provenance.datasets"] == "" {
		t.Errorf("params %v lack the spec's and the provenance's", mr.Params)
	}
	steps := func(from, to int64) []int64 {
		var s []int64
		for i := from; i <= to; i++ {
			s = append(s, i)
		}
		return s
	}
	want := map[string][]int64{"eval/validation/recommendationAccuracy": {5, 10}, "eval/test/stepSuccessRate": {10},
		"time/checkpoint": {2, 4, 5, 6, 8, 10}}
	for _, k := range stepKeys {
		want[k] = steps(1, 10)
	}
	for _, k := range rlKeys {
		want[k] = steps(6, 10)
	}
	tb, err := tensorboard.Read(filepath.Join(c.CheckpointDir, "tb"))
	if err != nil {
		t.Fatal(err)
	}
	byTensorBoard := readByTensorBoard(t, filepath.Join(c.CheckpointDir, "tb"))
	if len(tb.Files) != 3 {
		t.Errorf("TensorBoard event files %v, want one per start", tb.Files)
	}
	for _, k := range all {
		var ml, board []int64
		for _, m := range mr.History[k] {
			ml = append(ml, m.Step)
		}
		for _, s := range tb.Scalars[k] {
			board = append(board, s.Step)
		}
		if !slices.Equal(ml, want[k]) {
			t.Errorf("MLflow %s at steps %v, want %v (each once)", k, ml, want[k])
		}
		if !slices.Equal(board, want[k]) {
			t.Errorf("TensorBoard %s at steps %v, want %v (each once)", k, board, want[k])
		}
		if !slices.Equal(byTensorBoard[k], want[k]) {
			t.Errorf("TensorBoard's own reader has %s at steps %v, want %v (each once)", k, byTensorBoard[k], want[k])
		}
	}
	if tb.Params["algorithm.groupSize"] != "3" {
		t.Errorf("TensorBoard's params %v lack the spec's", tb.Params)
	}
}

// readTags is what TensorBoard's own reader (EventAccumulator, as its dashboards
// load a log folder) finds in the folder argv[1]: each scalar tag's steps.
const readTags = `
import json, sys
from tensorboard.backend.event_processing import event_accumulator
acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
print(json.dumps({tag: [e.step for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}))
`

// readByTensorBoard returns each scalar tag's steps in dir as TensorBoard reads them.
func readByTensorBoard(t *testing.T, dir string) map[string][]int64 {
	t.Helper()
	out, err := exec.Command(pyenv.Require(t), "-c", readTags, dir).Output()
	if err != nil {
		t.Fatalf("TensorBoard's reader: %v", err)
	}
	var steps map[string][]int64
	if err := json.Unmarshal(out, &steps); err != nil {
		t.Fatalf("TensorBoard's reader printed %s: %v", out, err)
	}
	return steps
}

// TestATrackerThatRefusesIsSaidAndTrainingGoesOn: a tracking URI that answers as no
// MLflow server, and credentials named but absent, are said in the status at once,
// naming the field; the run completes.
func TestATrackerThatRefusesIsSaidAndTrainingGoesOn(t *testing.T) {
	notMLflow := httptest.NewServer(http.NotFoundHandler())
	defer notMLflow.Close()
	for _, tc := range []struct {
		name, field string
		secret      bool
	}{
		{"wrong URI", "spec.tracking.mlflow.trackingURI", false},
		{"missing credentials", "spec.tracking.mlflow.credentialsSecret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := trackedConfig(t, notMLflow.URL, "uid-refused")
			c.Spec.Tracking.TensorBoard = nil
			if tc.secret {
				c.Spec.Tracking.MLflow.CredentialsSecret = &trainingv1alpha1.SecretReference{Name: "mlflow-credentials"}
			}
			var said atomic.Value
			rep := &reports{at: func(s *trainingv1alpha1.TrainingStatus) {
				if s.Tracking != nil && s.Tracking.Degraded != "" && said.Load() == nil {
					said.Store(s.Step)
				}
			}}
			out, err := run(context.Background(), t, c, newTracker(c), rep, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != trainingv1alpha1.OutcomeCompleted {
				t.Fatalf("outcome %s: %s", out.Outcome, out.Message)
			}
			d := rep.last().Tracking
			if d == nil || !strings.Contains(d.Degraded, tc.field) {
				t.Fatalf("final tracking status %+v, want it degraded naming %s", d, tc.field)
			}
			if d.Dropped == 0 || d.Pending != 0 {
				t.Errorf("tracking status %+v: a refusing tracker's values are dropped, and counted", d)
			}
			if s, _ := said.Load().(int64); said.Load() == nil || s > 2 {
				t.Errorf("the refusal was first reported at step %v; want it said at once", said.Load())
			}
		})
	}
}

// BenchmarkRunTracked measures what tracking adds to a run of 10 steps (5 SFT, 5
// ESPO, 3 evaluations) on the CPU policy: untracked, into TensorBoard's files, and
// into TensorBoard and a real MLflow server, the three alternated; the end of each
// run waits for the trackers to take everything. The MLflow server is another
// process on the same cores.
func BenchmarkRunTracked(b *testing.B) {
	server := mlflowtest.Shared(b)
	arms := []struct {
		name  string
		track func(c *trainer.Config)
	}{
		{"untracked", func(c *trainer.Config) { c.Spec.Tracking = nil }},
		{"tensorboard", func(c *trainer.Config) { c.Spec.Tracking.MLflow = nil }},
		{"mlflow+tensorboard", func(*trainer.Config) {}},
	}
	took := make([]time.Duration, len(arms))
	b.ResetTimer()
	for i := range b.N {
		for a, arm := range arms {
			c := benchConfig(b, server.URI(), types.UID(fmt.Sprintf("bench-%d-%d", i, a)))
			arm.track(c)
			start := time.Now()
			rep, err := run(context.Background(), b, c, newTrackerOrNil(c), &reports{}, time.Minute)
			if err != nil || rep.Outcome != trainingv1alpha1.OutcomeCompleted {
				b.Fatalf("%s: %v %+v", arm.name, err, rep)
			}
			took[a] += time.Since(start)
		}
	}
	for a, arm := range arms {
		b.ReportMetric(float64(took[a].Milliseconds())/float64(b.N)/10, arm.name+"-ms/step")
	}
}

// benchConfig is trackedConfig's run, in the experiment "bench".
func benchConfig(b *testing.B, uri string, uid types.UID) *trainer.Config {
	c := trackedConfig(b, uri, uid)
	c.Spec.Tracking.MLflow.Experiment = "bench"
	return c
}

// newTrackerOrNil is c's tracker, nil without spec.tracking.
func newTrackerOrNil(c *trainer.Config) *tracking.Tracker {
	if c.Spec.Tracking == nil {
		return nil
	}
	return newTracker(c)
}
