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

	"github.com/go-logr/logr"
	"google.golang.org/grpc"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
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

func cpuWorkers(n int) []workerpb.WorkerClient {
	ws := make([]workerpb.WorkerClient, n)
	for i := range ws {
		ws[i] = worker.LocalClient(cpu.New(0))
	}
	return ws
}

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

func run(t *testing.T, c *Config, opts Options) (*Report, *Trainer) {
	t.Helper()
	opts.Log = logr.Discard()
	tr, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep, tr
}

// savedState returns worker 0's saved state after a run.
func savedState(t *testing.T, w workerpb.WorkerClient) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state")
	if _, err := w.Save(context.Background(), &workerpb.SaveRequest{Path: path}); err != nil {
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
	rep, tr := run(t, c, Options{Workers: cpuWorkers(1), Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if want := tr.plan.totalSteps(); rep.Steps != want || want == 0 {
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
		rep, _ := run(t, smallConfig(t, alg), Options{Workers: cpuWorkers(1)})
		if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
			t.Fatalf("%s: outcome %s: %s", alg, rep.Outcome, rep.Message)
		}
		steps = append(steps, rep.Steps)
	}
	if steps[0] != steps[1] || steps[0] != steps[2] {
		t.Errorf("optimizer steps espo/grpo/sft = %v, want equal", steps)
	}
}

// TestResumeEndsWithTheSameWeights kills a run after a few steps (mid-epoch), resumes
// it with fresh workers from its checkpoint, and compares the final weights with an
// uninterrupted run's, byte for byte.
func TestResumeEndsWithTheSameWeights(t *testing.T) {
	whole := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	whole.CheckpointDir = t.TempDir()
	whole.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 2, Keep: 2}
	ws := cpuWorkers(1)
	run(t, whole, Options{Workers: ws})
	want := savedState(t, ws[0])

	killed := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	killed.CheckpointDir = t.TempDir()
	killed.Spec.Checkpoint = whole.Spec.Checkpoint
	tr, err := New(killed, Options{Workers: cpuWorkers(1), Log: logr.Discard(), StopAfterSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := tr.Run(context.Background()); err != nil || rep != nil {
		t.Fatalf("the killed run returned %+v, %v", rep, err)
	}
	resumedWorkers := cpuWorkers(1)
	rec := &recorder{}
	rep, _ := run(t, killed, Options{Workers: resumedWorkers, Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if first := rec.reports[0].Step; first != 5 {
		t.Errorf("the resumed run's first report is at step %d, want 5 (the step after the step-4 checkpoint)", first)
	}
	if got := savedState(t, resumedWorkers[0]); !bytes.Equal(got, want) {
		t.Errorf("resumed final state differs from the uninterrupted run's (%d vs %d bytes)", len(got), len(want))
	}
}

// TestDataParallelWorkersMatchOne trains with one worker and with two, on the same
// seed and batches, and compares the resulting policies' log-probs.
func TestDataParallelWorkersMatchOne(t *testing.T) {
	one := cpuWorkers(1)
	_, tr := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: one})
	two := cpuWorkers(2)
	run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: two})

	ep := &tr.data.Test[0]
	req := &workerpb.LogProbsRequest{}
	for j := range ep.Steps {
		req.Items = append(req.Items, &workerpb.Scored{Prompt: worker.PromptFromStep(ep, j),
			Answer: &workerpb.Answer{Text: demonstrated(&ep.Steps[j])}})
	}
	a := logProbs(t, one[0], req)
	for w := range two {
		b := logProbs(t, two[w], req)
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-4 {
				t.Fatalf("worker %d of 2: log-prob %d = %v, one worker gives %v", w, i, b[i], a[i])
			}
		}
	}
}

func logProbs(t *testing.T, w workerpb.WorkerClient, req *workerpb.LogProbsRequest) []float64 {
	t.Helper()
	resp, err := w.LogProbs(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, it := range resp.Items {
		out = append(out, it.Current...)
	}
	return out
}

// nanWorker reports a NaN gradient norm from every step.
type nanWorker struct{ workerpb.WorkerClient }

func (w nanWorker) Step(ctx context.Context, in *workerpb.StepRequest, opts ...grpc.CallOption) (*workerpb.StepResponse, error) {
	resp, err := w.WorkerClient.Step(ctx, in, opts...)
	if err == nil {
		resp.GradNorm = math.NaN()
	}
	return resp, err
}

func TestNonFiniteGradientStopsTheRun(t *testing.T) {
	rep, _ := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: []workerpb.WorkerClient{nanWorker{cpuWorkers(1)[0]}}})
	if rep.Outcome != trainingv1alpha1.OutcomeNonFiniteLoss || rep.Steps != 1 {
		t.Errorf("outcome %s after %d steps, want NonFiniteLoss after 1: %s", rep.Outcome, rep.Steps, rep.Message)
	}
}

func TestEarlyStoppingOnATargetMetric(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{Target: &trainingv1alpha1.MetricTarget{Metric: trainingv1alpha1.MetricFormatRate, Value: "0"}}
	rep, tr := run(t, c, Options{Workers: cpuWorkers(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeTargetReached {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if sft := int64(tr.plan.batches[0]); rep.Steps != sft {
		t.Errorf("stopped after %d steps, want after the first epoch's %d", rep.Steps, sft)
	}
}

func TestEarlyStoppingOnRewardCollapse(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{MinReward: "100", Patience: 1}
	rep, _ := run(t, c, Options{Workers: cpuWorkers(1)})
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
	run(t, first, Options{Workers: cpuWorkers(1)})
	entries, err := os.ReadDir(first.CheckpointDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("checkpoints of the first run: %v, %v", entries, err)
	}
	final := filepath.Join(first.CheckpointDir, entries[0].Name())
	want, err := os.ReadFile(filepath.Join(final, workerStateFile))
	if err != nil {
		t.Fatal(err)
	}

	second := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	second.InitialCheckpoint = final
	ws := cpuWorkers(1)
	tr, err := New(second, Options{Workers: ws, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := savedState(t, ws[0]); !bytes.Equal(got, want) {
		t.Error("the second run's workers do not start from the initial checkpoint's state")
	}

	second.InitialCheckpoint = t.TempDir() // no manifest
	tr, _ = New(second, Options{Workers: cpuWorkers(1), Log: logr.Discard()})
	if err := tr.start(context.Background()); err == nil || !strings.Contains(err.Error(), "spec.model.initialCheckpoint") {
		t.Errorf("start from an empty folder: %v, want an error naming spec.model.initialCheckpoint", err)
	}
}

// waitCheckingWorker fails Configure unless the call waits for the worker to be ready.
type waitCheckingWorker struct{ workerpb.WorkerClient }

func (w waitCheckingWorker) Configure(ctx context.Context, in *workerpb.ConfigureRequest, opts ...grpc.CallOption) (*workerpb.ConfigureResponse, error) {
	for _, o := range opts {
		if ff, ok := o.(grpc.FailFastCallOption); ok && !ff.FailFast {
			return w.WorkerClient.Configure(ctx, in, opts...)
		}
	}
	return nil, errors.New("Configure without grpc.WaitForReady: a worker whose pod starts after the trainer's fails the run")
}

func TestConfigureWaitsForWorkersStillStarting(t *testing.T) {
	rep, _ := run(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: []workerpb.WorkerClient{waitCheckingWorker{cpuWorkers(1)[0]}}})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Errorf("outcome %s: %s", rep.Outcome, rep.Message)
	}
}
