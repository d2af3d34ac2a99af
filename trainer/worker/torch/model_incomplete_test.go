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

package torch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// statusRecorder keeps a copy of each of the trainer's reports.
type statusRecorder struct {
	reports []*trainingv1alpha1.TrainingStatus
}

func (r *statusRecorder) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	r.reports = append(r.reports, s.DeepCopy())
	return nil
}

// TestTrainerEndsWithModelIncompleteOnAFolderMissingFiles: the torch worker process
// refuses a model folder that holds only config.json, naming the folder and what it
// lacks; the Go trainer reads the refusal as worker.ModelIncompleteError (the two
// sides agree on the protocol's marker) and ends the run with the ModelIncomplete
// outcome and the worker's message.
func TestTrainerEndsWithModelIncompleteOnAFolderMissingFiles(t *testing.T) {
	model := filepath.Join(t.TempDir(), "Qwen2.5-VL-3B-Instruct")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"model_type": "qwen2_5_vl", "vision_config": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := smallRun(t)
	c.Spec.Model.Pretrained = model
	w := startWorker(t, c.OutputDir)
	rec := &statusRecorder{}
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Reporter: rec, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if got := trainer.PermanentOutcome(err); got != trainingv1alpha1.OutcomeModelIncomplete {
		t.Fatalf("Run: %v (outcome %q), want ModelIncomplete", err, got)
	}
	last := rec.reports[len(rec.reports)-1]
	t.Logf("reported: %s: %s", last.Outcome, last.Message)
	if last.Outcome != trainingv1alpha1.OutcomeModelIncomplete {
		t.Errorf("reported outcome %q, want ModelIncomplete", last.Outcome)
	}
	for _, want := range []string{worker.ModelIncompletePrefix + "the model folder " + model + " lacks ", "the weights",
		"a tokenizer", "a chat template", "preprocessor_config.json"} {
		if !strings.Contains(last.Message, want) {
			t.Errorf("message %q does not contain %q", last.Message, want)
		}
	}
}
