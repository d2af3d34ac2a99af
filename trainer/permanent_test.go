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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// configMapConfig is a config of one ConfigMap source named web under root.
func configMapConfig(root string) *Config {
	c := &Config{DataRoot: root, Spec: trainingv1alpha1.ESPOJobSpec{Datasets: trainingv1alpha1.Datasets{Sources: []trainingv1alpha1.DatasetSource{
		{Name: "web", ConfigMap: &trainingv1alpha1.ConfigMapSource{Name: "cm"}},
	}}}}
	c.Spec.Default()
	return c
}

// syntheticConfig is a config of one synthetic source of n episodes.
func syntheticConfig(n int32) *Config {
	c := &Config{Spec: trainingv1alpha1.ESPOJobSpec{Datasets: trainingv1alpha1.Datasets{Sources: []trainingv1alpha1.DatasetSource{
		{Name: "gen", Synthetic: &trainingv1alpha1.SyntheticSource{Episodes: n, Seed: 1}},
	}}}}
	c.Spec.Default()
	return c
}

func TestLoadSplitsCallsACorruptDatasetInvalid(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "web"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "web", "episodes.jsonl"), []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadSplits(configMapConfig(root), [3]float64{0.8, 0.1, 0.1})
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeDatasetInvalid {
		t.Fatalf("PermanentOutcome(%v) = %q, want DatasetInvalid", err, got)
	}
	if !strings.Contains(err.Error(), "spec.datasets.sources[0] (web)") || !strings.Contains(err.Error(), "episodes.jsonl") {
		t.Errorf("error %q names neither the source nor the file", err)
	}
}

func TestLoadSplitsRefusesASplitThatLeavesValidationEmpty(t *testing.T) {
	_, err := loadSplits(syntheticConfig(1), [3]float64{0.8, 0.1, 0.1})
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeSplitEmpty {
		t.Fatalf("PermanentOutcome(%v) = %q, want SplitEmpty", err, got)
	}
	want := "the 1 pooled episodes split into train 1, validation 0, test 0: the validation set is empty"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}

func TestLoadSplitsAcceptsAnEmptySetItsFractionAsksNothingOf(t *testing.T) {
	s, err := loadSplits(syntheticConfig(1), [3]float64{1, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 1 {
		t.Errorf("train has %d episodes, want 1", len(s.Train))
	}
}

// reporterFunc is a Reporter that calls itself.
type reporterFunc func(*trainingv1alpha1.TrainingStatus) error

func (f reporterFunc) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	return f(s)
}

func TestReportSetupErrorReportsOnlyPermanentErrors(t *testing.T) {
	var got []trainingv1alpha1.TrainingStatus
	r := reporterFunc(func(s *trainingv1alpha1.TrainingStatus) error { got = append(got, *s); return nil })
	_, splitErr := loadSplits(syntheticConfig(1), [3]float64{0.8, 0.1, 0.1})
	other := errors.New("worker unreachable")
	if err := ReportSetupError(context.Background(), r, other); err != other {
		t.Errorf("ReportSetupError returned %v, want the error itself", err)
	}
	if err := ReportSetupError(context.Background(), r, splitErr); err != splitErr {
		t.Errorf("ReportSetupError returned %v, want the error itself", err)
	}
	if len(got) != 1 || got[0].Outcome != trainingv1alpha1.OutcomeSplitEmpty || got[0].Message != splitErr.Error() {
		t.Fatalf("reports %+v, want one SplitEmpty report with the error's message", got)
	}
	if err := ReportSetupError(context.Background(), nil, splitErr); err != splitErr {
		t.Errorf("with no reporter: returned %v, want the error itself", err)
	}
}

func TestNewNamesADatasetFileAsThePodSeesIt(t *testing.T) {
	podRoot := t.TempDir()
	root := filepath.Join(podRoot, "data")
	os.MkdirAll(filepath.Join(root, "web"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "web", "episodes.jsonl"), []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := newTrainer(configMapConfig(root), Options{Workers: cpuGang(1), PodRoot: podRoot})
	if got := PermanentOutcome(err); got != trainingv1alpha1.OutcomeDatasetInvalid {
		t.Fatalf("PermanentOutcome(%v) = %q, want DatasetInvalid", err, got)
	}
	if !strings.Contains(err.Error(), " /data/web/episodes.jsonl") || strings.Contains(err.Error(), podRoot) {
		t.Errorf("error %q does not name the file as /data/web/episodes.jsonl", err)
	}
}

// refusingMember is a worker that refuses every Generate as invalid, as the PyTorch
// worker refuses a prompt longer than the rollout engine's context.
type refusingMember struct {
	*worker.Local
	generates int
}

func (m *refusingMember) Generate(context.Context, []worker.Prompt, worker.SampleOptions) ([][]worker.Sample, error) {
	m.generates++
	return nil, status.Error(codes.InvalidArgument, "generate: a prompt of 2116 tokens is longer than the rollout engine's "+
		"context of 2048 tokens (spec.model.rollout.maxModelLen)")
}

// TestAWorkersRefusalMidRunEndsItAtOnce: a call a worker refuses as invalid after
// Configure (gRPC InvalidArgument) ends the run with ConfigInvalid and the worker's
// words, not with an error a restart would retry: the same plan sends the same call.
func TestAWorkersRefusalMidRunEndsItAtOnce(t *testing.T) {
	m := &refusingMember{Local: worker.NewLocal(cpu.New(0), os.TempDir())}
	tr, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: worker.NewGang(m), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid || !strings.Contains(err.Error(), "spec.model.rollout.maxModelLen") {
		t.Errorf("a run whose worker refuses Generate: %v (outcome %q), want ConfigInvalid naming the field", err, PermanentOutcome(err))
	}
	if m.generates != 1 {
		t.Errorf("Generate was called %d times, want once: the refusal ends the run", m.generates)
	}
}
