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
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/permanent"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// exportedState is the one file exportingMember writes into an export's folder.
const exportedState = "policy.state"

// exportingMember stands in for a PyTorch worker: the CPU policy, configured with its
// own defaults whatever model options the spec gives, whose Export writes its saved
// state into the folder, so that a test can tell which weights were exported.
type exportingMember struct {
	*worker.Local
	steps   int64
	exports int
}

func newExportingMember() *exportingMember {
	return &exportingMember{Local: worker.NewLocal(cpu.New(0), os.TempDir())}
}

func (m *exportingMember) Configure(ctx context.Context, s worker.Setup) (worker.Description, error) {
	s.Options = nil // a cuda spec's options (pretrained, lora_r) are no CPU policy's
	d, err := m.Local.Configure(ctx, s)
	m.steps = d.Steps
	return d, err
}

func (m *exportingMember) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	m.steps++
	return m.Local.Step(ctx, o)
}

func (m *exportingMember) Export(ctx context.Context, path string, merge bool) (worker.Exported, error) {
	m.exports++
	if err := os.MkdirAll(path, 0o755); err != nil {
		return worker.Exported{}, err
	}
	if err := m.Save(ctx, filepath.Join(path, exportedState)); err != nil {
		return worker.Exported{}, err
	}
	return worker.Exported{Path: path, Kind: "lora", Merged: merge, Step: m.steps, Files: 1}, nil
}

// exportConfig is smallConfig as a LoRA job of the PyTorch worker with SFT and
// three ESPO epochs (four validation evaluations), that exports to a temporary
// folder, merged, the best checkpoint by bestBy when it is set; it keeps one
// checkpoint, so the best one survives only if protected.
func exportConfig(t *testing.T, bestBy trainingv1alpha1.EvalMetric) *Config {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "Qwen2.5-VL-3B-Instruct",
		LoRA: &trainingv1alpha1.LoRASpec{Rank: 8}}
	c.Spec.Algorithm.Epochs = 3
	c.Spec.Algorithm.LearningRate = "0.05"
	c.CheckpointDir = t.TempDir()
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 1000, Keep: 1}
	c.ExportDir = filepath.Join(t.TempDir(), "models", "run-1")
	c.Spec.Export = &trainingv1alpha1.ExportSpec{PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "models", Path: "run-1"},
		Merge: true, BestBy: bestBy}
	c.Spec.Default()
	return c
}

// TestExportWritesTheFinalPolicy: a run that succeeds without bestBy exports the
// policy it ended with, once, and status.training.export names the folder, its kind
// and the final step, with no metric.
func TestExportWritesTheFinalPolicy(t *testing.T) {
	c := exportConfig(t, "")
	m := newExportingMember()
	rec := &recorder{}
	rep, _ := run(t, c, Options{Workers: worker.NewGang(m), Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	got, err := os.ReadFile(filepath.Join(c.ExportDir, exportedState))
	if err != nil {
		t.Fatal(err)
	}
	if want := savedState(t, m); !bytes.Equal(got, want) || m.exports != 1 {
		t.Errorf("exported %d times; the export equals the final policy: %v", m.exports, bytes.Equal(got, want))
	}
	ex := rec.reports[len(rec.reports)-1].Export
	if ex == nil || ex.Path != "run-1" || ex.Kind != trainingv1alpha1.ExportLoRA || !ex.Merged || ex.Step != rep.Steps ||
		ex.Files != 1 || ex.Metric != "" || ex.Value != "" || ex.Time == nil {
		t.Errorf("status.training.export %+v, want run-1, lora, merged, step %d, no metric", ex, rep.Steps)
	}
}

// TestExportWritesTheBestCheckpoint: with bestBy, the best validation evaluation's
// checkpoint outlives pruning (keep 1), is loaded after the last epoch, evaluated on
// the test split and exported: the export holds exactly that checkpoint's weights,
// and the status names its step, the metric and its value. The metric is one whose
// best evaluation is not the last, so the final policy would be the wrong answer.
func TestExportWritesTheBestCheckpoint(t *testing.T) {
	c := exportConfig(t, trainingv1alpha1.MetricOperationF1)
	m := newExportingMember()
	rec := &recorder{}
	rep, _ := run(t, c, Options{Workers: worker.NewGang(m), Reporter: rec})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || len(rep.Validation) != 4 {
		t.Fatalf("outcome %s (%s), %d validations; want Completed after 4", rep.Outcome, rep.Message, len(rep.Validation))
	}
	best := rep.Validation[0]
	for _, r := range rep.Validation[1:] {
		if r.OperationF1 > best.OperationF1 {
			best = r
		}
	}
	if best.Step == rep.Steps {
		t.Fatalf("the best operationF1 (%v) is the last evaluation's: the test bed cannot tell the best checkpoint from the final policy", best.OperationF1)
	}
	ckpt, err := checkpoint.Verify(filepath.Join(c.CheckpointDir, fmt.Sprintf("step-%012d", best.Step)))
	if err != nil {
		t.Fatalf("the best checkpoint (step %d) did not outlive pruning: %v", best.Step, err)
	}
	want, err := os.ReadFile(filepath.Join(ckpt.Dir, checkpoint.WorkerStateFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(c.ExportDir, exportedState))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the export is not the best checkpoint's policy")
	}
	final, err := os.ReadFile(filepath.Join(c.CheckpointDir, fmt.Sprintf("step-%012d", rep.Steps), checkpoint.WorkerStateFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, final) {
		t.Error("the best checkpoint's policy equals the final one: the test cannot tell them apart")
	}
	last := rec.reports[len(rec.reports)-1]
	ex := last.Export
	if ex == nil || ex.Step != best.Step || ex.Metric != trainingv1alpha1.MetricOperationF1 || ex.Value != trainingv1alpha1.NewMetric(best.OperationF1) {
		t.Errorf("status.training.export %+v, want step %d, operationF1 %v", ex, best.Step, best.OperationF1)
	}
	if rep.Test == nil || rep.Test.Step != best.Step || last.Evaluation.Step != best.Step {
		t.Errorf("the test evaluation is of step %v (status %d), want the best checkpoint's %d", rep.Test, last.Evaluation.Step, best.Step)
	}
}

// TestExportTargetThatCannotBeWrittenFailsAtOnce: an export folder that cannot be
// created fails the run before any step, with ConfigInvalid naming spec.export.
func TestExportTargetThatCannotBeWrittenFailsAtOnce(t *testing.T) {
	c := exportConfig(t, "")
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.ExportDir = filepath.Join(file, "models", "run-1")
	m := newExportingMember()
	tr, err := newTrainer(c, Options{Workers: worker.NewGang(m), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if permanent.Outcome(err) != trainingv1alpha1.OutcomeConfigInvalid || !strings.Contains(err.Error(), `spec.export.persistentVolumeClaim (claim models, path "run-1")`) {
		t.Fatalf("run: %v; want ConfigInvalid naming spec.export.persistentVolumeClaim", err)
	}
	if m.steps != 0 || m.exports != 0 {
		t.Errorf("%d steps and %d exports before the refusal, want none", m.steps, m.exports)
	}
}

// TestExportRulesWithoutTheAPIServer: Resolve refuses, naming the field, what the
// API server's rules refuse in spec.export, for a run config that did not pass
// through it; New refuses bestBy when the split leaves no validation episode.
func TestExportRulesWithoutTheAPIServer(t *testing.T) {
	zero := int32(0)
	for name, tc := range map[string]struct {
		change func(c *Config)
		want   string
	}{
		"cpu worker": {func(c *Config) { c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCPU} },
			"spec.export: it writes the PyTorch worker's model as a Hugging Face folder, and spec.model.worker is cpu"},
		"external worker": {func(c *Config) {
			c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerExternal, Endpoint: "w:50051"}
		}, "spec.model.worker is external"},
		"merge without lora": {func(c *Config) { c.Spec.Model.LoRA = nil }, "spec.export.merge: it merges a LoRA adapter"},
		"best without checkpoints": {func(c *Config) { c.Spec.Checkpoint, c.CheckpointDir = nil, "" },
			"spec.export.bestBy: it exports the best checkpoint, and the run keeps none"},
		"best without validation episodes": {func(c *Config) {
			c.Spec.Datasets = trainingv1alpha1.Datasets{Environment: &trainingv1alpha1.EnvironmentSource{
				Simulated: &trainingv1alpha1.SimulatedEnvironment{}, ValidationEpisodes: &zero}}
			c.Spec.Algorithm.EpisodesPerBatch, c.Spec.Algorithm.MaxStepsPerBatch = 2, nil
		}, "spec.datasets.environment.validationEpisodes is 0"},
		"no export folder": {func(c *Config) { c.ExportDir = "" }, "spec.export: the run config has no exportDir"},
		"a split without validation": {func(c *Config) { c.Spec.Datasets.Split.Validation, c.Spec.Datasets.Split.Train = "0", "0.9" },
			"spec.export.bestBy: it compares validation evaluations, and the split leaves the validation set no episode"},
	} {
		t.Run(name, func(t *testing.T) {
			c := exportConfig(t, trainingv1alpha1.MetricIntentAccuracy)
			tc.change(c)
			_, err := newTrainer(c, Options{Workers: worker.NewGang(newExportingMember()), Log: logr.Discard()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || permanent.Outcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
				t.Fatalf("got %v; want ConfigInvalid with %q", err, tc.want)
			}
		})
	}
	if _, err := newTrainer(exportConfig(t, trainingv1alpha1.MetricIntentAccuracy), Options{Workers: cpuGang(1), Log: logr.Discard()}); err != nil {
		t.Fatalf("the valid export config: %v", err)
	}
}

// TestResumedRunExportsTheSameBestCheckpoint: a run killed in its last epoch, after
// its best evaluation, and resumed with a fresh worker keeps protecting the best
// checkpoint (its evaluation is in the resumed state's history) and exports exactly
// what the uninterrupted run exports.
func TestResumedRunExportsTheSameBestCheckpoint(t *testing.T) {
	whole := exportConfig(t, trainingv1alpha1.MetricOperationF1)
	rep, _ := run(t, whole, Options{Workers: worker.NewGang(newExportingMember())})
	want, err := os.ReadFile(filepath.Join(whole.ExportDir, exportedState))
	if err != nil {
		t.Fatal(err)
	}

	killed := exportConfig(t, trainingv1alpha1.MetricOperationF1)
	killed.Spec.Checkpoint.EverySteps = 1
	killed.Spec.Trainer.StatusInterval = &metav1.Duration{} // every step reported, so cancelAt sees it
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	tr, err := newTrainer(killed, Options{Workers: worker.NewGang(newExportingMember()), Log: logr.Discard(),
		Reporter: cancelAt{step: rep.Steps - 1, cancel: kill}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the killed run: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(killed.ExportDir); !os.IsNotExist(err) {
		t.Fatalf("the killed run exported: %v", err)
	}
	run(t, killed, Options{Workers: worker.NewGang(newExportingMember())})
	got, err := os.ReadFile(filepath.Join(killed.ExportDir, exportedState))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the resumed run exported other weights than the uninterrupted one")
	}
}

// tagSink is an experiment tracker in memory that keeps the tags and the outcome.
type tagSink struct {
	mu      sync.Mutex
	tags    map[string]string
	outcome string
}

func (s *tagSink) Name() string { return "spec.tracking.test" }
func (s *tagSink) Open(context.Context, tracking.Run) (tracking.Opened, error) {
	return tracking.Opened{RunID: "r"}, nil
}
func (s *tagSink) LogParams(context.Context, map[string]string) error { return nil }
func (s *tagSink) Log(context.Context, []tracking.Point) error        { return nil }
func (s *tagSink) SetTags(_ context.Context, tags map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags = mergeTags(s.tags, tags)
	return nil
}
func (s *tagSink) Close(_ context.Context, outcome string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcome = outcome
	return nil
}

func mergeTags(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// TestExportIsTaggedWhereItLives: the trackers' run is tagged with the export's
// place as a storage URI serving tools take, its kind and step, and ends Succeeded.
func TestExportIsTaggedWhereItLives(t *testing.T) {
	c := exportConfig(t, "")
	sink := &tagSink{}
	tr := tracking.New([]tracking.Sink{sink}, tracking.Run{JobUID: "u"}, tracking.Options{})
	rep, _ := run(t, c, Options{Workers: worker.NewGang(newExportingMember()), Tracker: tr})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	want := map[string]string{"espo.dev/export": "pvc://models/run-1", "espo.dev/export-kind": "lora",
		"espo.dev/export-merged": "true", "espo.dev/export-step": strconv.FormatInt(rep.Steps, 10)}
	for k, v := range want {
		if sink.tags[k] != v {
			t.Errorf("tag %s = %q, want %q (tags %v)", k, sink.tags[k], v, sink.tags)
		}
	}
	if sink.outcome != "Succeeded" {
		t.Errorf("the trackers' run ended %q, want Succeeded", sink.outcome)
	}
}
