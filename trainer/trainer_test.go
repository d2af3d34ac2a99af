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
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/intents"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// smallConfig is a run that finishes in seconds: 12 synthetic episodes, one SFT epoch
// and one epoch of alg, two episodes per batch, G = 3.
func smallConfig(t *testing.T, alg trainingv1alpha1.AlgorithmName) *Config {
	t.Helper()
	c := &Config{OutputDir: t.TempDir()}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "synth",
		Synthetic: &trainingv1alpha1.SyntheticSource{Channels: []trainingv1alpha1.Channel{"food", "hotel"}, Episodes: 12, Seed: 3}}}
	one := int32(1)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: alg, SFTEpochs: &one, Epochs: 1, GroupSize: 3, EpisodesPerBatch: 2,
		LearningRate: "0.01", Seed: 11}
	c.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 16}
	c.Spec.Default()
	return c
}

// cpuMembers returns n in-process CPU workers that save and load under the
// temporary folder, where every test's checkpoint and output folders are (t.TempDir).
func cpuMembers(n int) []worker.Member {
	ms := make([]worker.Member, n)
	for i := range ms {
		ms[i] = worker.NewLocal(cpu.New(0), os.TempDir())
	}
	return ms
}

// cpuGang returns a gang of n in-process CPU workers.
func cpuGang(n int) *worker.Gang { return worker.NewGang(cpuMembers(n)...) }

// recorder keeps every report.
type recorder struct {
	mu      sync.Mutex
	reports []*trainingv1alpha1.TrainingStatus
}

func (r *recorder) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, s)
	return nil
}

// newTrainer resolves c and makes its trainer: Resolve's error, or New's.
func newTrainer(c *Config, opts Options) (*Trainer, error) {
	s, err := Resolve(c)
	if err != nil {
		return nil, err
	}
	return New(s, opts)
}

func run(t *testing.T, c *Config, opts Options) (*Report, *Trainer) {
	t.Helper()
	opts.Log = logr.Discard()
	tr, err := newTrainer(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep, tr
}

// savedState returns a worker's saved state after a run.
func savedState(t *testing.T, m worker.Member) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state")
	if err := m.Save(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRunESPOCompletesWithReportsAndTestMetrics(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	rec := &recorder{}
	rep, tr := run(t, c, Options{Workers: cpuGang(1), Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if want := tr.plan.TotalSteps(); rep.Steps != want || want == 0 {
		t.Errorf("steps %d, want the plan's %d", rep.Steps, want)
	}
	if rep.Test == nil || rep.Test.Steps == 0 || rep.Validation == nil {
		t.Fatalf("missing evaluations: test %+v validation %+v", rep.Test, rep.Validation)
	}
	stages := map[trainingv1alpha1.TrainingStage]bool{}
	for _, r := range rec.reports {
		stages[r.Stage] = true
	}
	for _, s := range []trainingv1alpha1.TrainingStage{trainingv1alpha1.StageSFT, trainingv1alpha1.StageESPO, trainingv1alpha1.StageEval} {
		if !stages[s] {
			t.Errorf("no report in stage %s", s)
		}
	}
	last := rec.reports[len(rec.reports)-1]
	if last.Outcome != trainingv1alpha1.OutcomeCompleted || last.Evaluation == nil || last.Evaluation.Split != "test" {
		t.Errorf("last report %+v, want the completed outcome with the test evaluation", last)
	}
	if last.MeanCOUTReward == "" || last.KL == "" {
		t.Errorf("last report lacks the ESPO statistics: %+v", last)
	}
	if _, err := os.Stat(filepath.Join(c.OutputDir, "report.json")); err != nil {
		t.Errorf("report.json: %v", err)
	}
}

func TestEveryAlgorithmGetsTheSameBudget(t *testing.T) {
	var steps []int64
	for _, alg := range []trainingv1alpha1.AlgorithmName{trainingv1alpha1.AlgorithmESPO, trainingv1alpha1.AlgorithmGRPO, trainingv1alpha1.AlgorithmSFT} {
		rep, _ := run(t, smallConfig(t, alg), Options{Workers: cpuGang(1)})
		if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
			t.Fatalf("%s: outcome %s: %s", alg, rep.Outcome, rep.Message)
		}
		steps = append(steps, rep.Steps)
	}
	if steps[0] != steps[1] || steps[0] != steps[2] {
		t.Errorf("optimizer steps espo/grpo/sft = %v, want equal", steps)
	}
}

// cancelAt is a Reporter that cancels the run's context when a report reaches step,
// as killing the trainer there would: no checkpoint of that step is written.
type cancelAt struct {
	step   int64
	cancel context.CancelFunc
}

func (c cancelAt) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	if s.Step == c.step {
		c.cancel()
	}
	return nil
}

// TestResumeEndsWithTheSameWeights kills a run after a few steps (mid-epoch), resumes
// it with fresh workers from its checkpoint, and compares the final weights with an
// uninterrupted run's, byte for byte.
func TestResumeEndsWithTheSameWeights(t *testing.T) {
	whole := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	whole.CheckpointDir = t.TempDir()
	whole.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 2, Keep: 2}
	ws := cpuMembers(1)
	run(t, whole, Options{Workers: worker.NewGang(ws...)})
	want := savedState(t, ws[0])

	killed := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	killed.CheckpointDir = t.TempDir()
	killed.Spec.Checkpoint = whole.Spec.Checkpoint
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	tr, err := newTrainer(killed, Options{Workers: cpuGang(1), Log: logr.Discard(), Reporter: cancelAt{step: 5, cancel: kill}})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := tr.Run(ctx); !errors.Is(err, context.Canceled) || rep != nil {
		t.Fatalf("the killed run returned %+v, %v; want context.Canceled", rep, err)
	}
	resumedWorkers := cpuMembers(1)
	rec := &recorder{}
	clock := clocktesting.NewFakeClock(resumeTime)
	rep, _ := run(t, killed, Options{Workers: worker.NewGang(resumedWorkers...), Reporter: rec, Clock: clock})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if first := rec.reports[0].Step; first != 5 {
		t.Errorf("the resumed run's first report is at step %d, want 5 (the step of the newest checkpoint, the SFT epoch's end)", first)
	}
	assertResumedFrom(t, rec.reports, killed.CheckpointDir, 1, 1)
	if msg := rec.reports[0].Message; strings.Contains(msg, "written by") {
		t.Errorf("a resume on the same number of workers says %q", msg)
	}
	if got := savedState(t, resumedWorkers[0]); !bytes.Equal(got, want) {
		t.Errorf("resumed final state differs from the uninterrupted run's (%d vs %d bytes)", len(got), len(want))
	}
}

// TestResumeOnAnotherWorkerCountSaysSo: a run killed mid-epoch on one worker resumes
// from its checkpoint on two, says so in its first report's message and in its
// resumedFrom record (written by 1, on 2), and ends with the policy the uninterrupted
// run on one worker ends with (to the log-probs' float tolerance: two workers add
// their gradients in another order).
func TestResumeOnAnotherWorkerCountSaysSo(t *testing.T) {
	whole := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	one := cpuMembers(1)
	_, tr := run(t, whole, Options{Workers: worker.NewGang(one...)})

	killed := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	killed.CheckpointDir = t.TempDir()
	killed.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 2, Keep: 2}
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	first, err := newTrainer(killed, Options{Workers: cpuGang(1), Log: logr.Discard(), Reporter: cancelAt{step: 5, cancel: kill}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the killed run: %v, want context.Canceled", err)
	}
	two := cpuMembers(2)
	rec := &recorder{}
	clock := clocktesting.NewFakeClock(resumeTime)
	rep, _ := run(t, killed, Options{Workers: worker.NewGang(two...), Reporter: rec, Clock: clock})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if msg := rec.reports[0].Message; !strings.Contains(msg, "written by 1 worker, on 2 workers: training goes on from its weights") {
		t.Errorf("the resumed run's first report says %q", msg)
	}
	assertResumedFrom(t, rec.reports, killed.CheckpointDir, 1, 2)
	assertSamePolicy(t, &tr.Splits().Test[0], one[0], two, "after the resume")
}

// resumeTime is the fake clock's reading in the runs that resume.
var resumeTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// assertResumedFrom fails the test unless every report of a resumed run records the
// resume from the step-5 checkpoint of dir (the end of the SFT epoch, the killed
// runs' newest), written by writtenBy workers and loaded on workers, at resumeTime.
func assertResumedFrom(t *testing.T, reports []*trainingv1alpha1.TrainingStatus, dir string, writtenBy, workers int32) {
	t.Helper()
	at := metav1.NewTime(resumeTime)
	want := trainingv1alpha1.ResumeStatus{Step: 5, WrittenBy: writtenBy, Workers: workers, Time: &at}
	for i, s := range reports {
		r := s.ResumedFrom
		if r == nil {
			t.Fatalf("report %d of %d has no resumedFrom", i+1, len(reports))
		}
		if filepath.Dir(r.Path) != dir {
			t.Errorf("report %d: resumedFrom.path %q is not in the checkpoint folder %s", i+1, r.Path, dir)
		}
		got := *r
		got.Path = ""
		if !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("report %d: resumedFrom %+v, want %+v", i+1, got, want)
		}
	}
}

// TestDataParallelWorkersMatchOne trains with one worker and with two, on the same
// seed and batches, and compares the resulting policies' log-probs.
func TestDataParallelWorkersMatchOne(t *testing.T) {
	one := cpuMembers(1)
	_, tr := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(one...)})
	two := cpuMembers(2)
	run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(two...)})

	assertSamePolicy(t, &tr.Splits().Test[0], one[0], two, "")
}

// assertSamePolicy fails the test when a worker of others gives a log-prob of the
// demonstrated answer to a step of ep more than 1e-4 from ref's: the same policy, to
// the tolerance of gradients added in another order. when says in a failure when.
func assertSamePolicy(t *testing.T, ep *dataset.Episode, ref worker.Member, others []worker.Member, when string) {
	t.Helper()
	var items []worker.Scored
	for j := range ep.Steps {
		items = append(items, worker.Scored{Prompt: worker.NewPrompt(ep, j), Answer: worker.Answer{Text: demonstrated(&ep.Steps[j])}})
	}
	a := logProbs(t, ref, items)
	for w, m := range others {
		b := logProbs(t, m, items)
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-4 {
				t.Fatalf("worker %d of %d %s: log-prob %d = %v, the reference worker gives %v", w, len(others), when, i, b[i], a[i])
			}
		}
	}
}

func logProbs(t *testing.T, m worker.Member, items []worker.Scored) []float64 {
	t.Helper()
	lps, err := m.LogProbs(context.Background(), items, worker.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, it := range lps {
		out = append(out, it.Current...)
	}
	return out
}

// nanWorker reports a NaN gradient norm from every step.
type nanWorker struct{ worker.Member }

func (w nanWorker) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	_, err := w.Member.Step(ctx, o)
	return math.NaN(), err
}

func TestNonFiniteGradientStopsTheRun(t *testing.T) {
	rep, _ := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(nanWorker{cpuMembers(1)[0]})})
	if rep.Outcome != trainingv1alpha1.OutcomeNonFiniteLoss || rep.Steps != 1 {
		t.Errorf("outcome %s after %d steps, want NonFiniteLoss after 1: %s", rep.Outcome, rep.Steps, rep.Message)
	}
}

func TestEarlyStoppingOnATargetMetric(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{Target: &trainingv1alpha1.MetricTarget{Metric: trainingv1alpha1.MetricFormatRate, Value: "0"}}
	rep, tr := run(t, c, Options{Workers: cpuGang(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeTargetReached {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if sft := int64(tr.plan.Epochs[0].Batches); rep.Steps != sft {
		t.Errorf("stopped after %d steps, want after the first epoch's %d", rep.Steps, sft)
	}
}

func TestEarlyStoppingOnRewardCollapse(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{MinReward: "100", Patience: 1}
	rep, _ := run(t, c, Options{Workers: cpuGang(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeRewardCollapsed {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
}

// TestInitialCheckpointStartsFromAnEarlierRun starts a new run from the final
// checkpoint of an earlier one: its workers begin with exactly that state.
func TestInitialCheckpointStartsFromAnEarlierRun(t *testing.T) {
	first := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	first.CheckpointDir = t.TempDir()
	first.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 100, Keep: 1}
	run(t, first, Options{Workers: cpuGang(1)})
	entries, err := os.ReadDir(first.CheckpointDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("checkpoints of the first run: %v, %v", entries, err)
	}
	final := filepath.Join(first.CheckpointDir, entries[0].Name())
	want, err := os.ReadFile(filepath.Join(final, checkpoint.WorkerStateFile))
	if err != nil {
		t.Fatal(err)
	}

	second := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	second.InitialCheckpoint = final
	ws := cpuMembers(1)
	tr, err := newTrainer(second, Options{Workers: worker.NewGang(ws...), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := savedState(t, ws[0]); !bytes.Equal(got, want) {
		t.Error("the second run's workers do not start from the initial checkpoint's state")
	}

	// No manifest, in a pod whose files the local node keeps under podRoot: the
	// message names the field and the folder as the pod sees it, and fails the job
	// at once (ConfigInvalid): a restart mounts the same folder.
	podRoot := t.TempDir()
	second.InitialCheckpoint = filepath.Join(podRoot, "init", "ckpt")
	if err := os.MkdirAll(second.InitialCheckpoint, 0o755); err != nil {
		t.Fatal(err)
	}
	tr, _ = newTrainer(second, Options{Workers: cpuGang(1), Log: logr.Discard(), PodRoot: podRoot})
	err = tr.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "spec.model.initialCheckpoint (/init/ckpt)") || strings.Contains(err.Error(), podRoot) {
		t.Errorf("start from an empty folder: %v, want an error naming spec.model.initialCheckpoint at /init/ckpt", err)
	}
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeConfigInvalid {
		t.Errorf("outcome %q, want ConfigInvalid (no restart)", got)
	}
}

// TestWorkersThatCannotServeTheSpecFailAtOnce: a worker that refuses the Configure
// options the spec makes (the CPU policy asked to load a sentence encoder, as an
// external worker of that kind would be) and a worker without the sentence encoder
// the spec names both end the run as ConfigInvalid, naming the cause: a restart
// sends the same options to the same kind of worker.
func TestWorkersThatCannotServeTheSpecFailAtOnce(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Model.Worker = trainingv1alpha1.WorkerExternal
	c.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchEmbedding
	c.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Worker: &trainingv1alpha1.WorkerEmbedderSpec{Model: "all-MiniLM-L6-v2"}}
	c.Spec.Default()
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "embedder_model") || PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
		t.Errorf("configuring a CPU policy with an encoder: %v (outcome %q), want ConfigInvalid naming embedder_model", err, PermanentOutcome(err))
	}

	// The encoder's Embed call refused: the in-process policy has none.
	tr.intents, _ = intents.New(tr.settings.Rewards, c.Spec.Rewards.Intent.Embedder, tr.opts.Workers, nil)
	err = tr.intents.Prepare(context.Background(), logr.Discard(), tr.Splits().Train)
	if !errors.Is(err, worker.ErrNoEncoder) || PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
		t.Errorf("embedding without an encoder: %v (outcome %q), want ErrNoEncoder, ConfigInvalid", err, PermanentOutcome(err))
	}
}
