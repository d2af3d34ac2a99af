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
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// samplerMismatchBound is the largest mean |trainer - engine| per-token log-prob
// difference a step may report when the engine serves the trained weights (float32
// on both sides: they agree to about 1e-6); an engine left with the weights of
// before differs by tenths after a few steps (tests/test_rollout.py).
const samplerMismatchBound = 1e-3

// TestTrainerSamplesWithVLLM: the Go trainer runs the SFT cold start and an ESPO
// epoch of a random Qwen2 on the torch worker with spec.model.rollout.engine vllm to
// Completed. The reinforcement steps' reports carry the sampler mismatch, small
// because the trained weights reached the engine before each Generate, and the
// worker's statistics count a weight push per optimizer step that was followed by
// sampling.
func TestTrainerSamplesWithVLLM(t *testing.T) {
	t.Parallel() // one of the package's longest: see TestPythonUnitTests
	c := smallRun(t)
	c.Spec.Model.Pretrained = randomModel(t, "qwen2")
	c.Spec.Model.DType = trainingv1alpha1.DTypeFloat32
	c.Spec.Model.Rollout = &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, CPUKVCacheGiB: 1, MaxModelLen: 1024, EnforceEager: ptr.To(true)}
	c.Spec.Default()
	stats := filepath.Join(t.TempDir(), "stats.json")
	w := startWorkerEnv(t, []string{"ESPO_WORKER_STATS=" + stats}, c.OutputDir, "--max-new-tokens", "16", "--max-prompt-tokens", "96")
	rec := &statusRecorder{}
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Reporter: rec, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatalf("%v\nworker log:\n%s", err, w.log())
	}
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s\nworker log:\n%s", rep.Outcome, rep.Message, w.log())
	}
	var mismatches []float64
	for _, s := range rec.reports {
		if s.SamplerMismatch == "" {
			continue
		}
		m, err := strconv.ParseFloat(string(s.SamplerMismatch), 64)
		if err != nil {
			t.Fatalf("samplerMismatch %q: %v", s.SamplerMismatch, err)
		}
		mismatches = append(mismatches, m)
	}
	if len(mismatches) == 0 {
		t.Fatalf("no report carried samplerMismatch in %d reports: the engine's log-probs did not reach the loss", len(rec.reports))
	}
	for _, m := range mismatches {
		if !(m >= 0 && m < samplerMismatchBound) {
			t.Errorf("samplerMismatch %g, want within [0, %g): the engine does not serve the trained weights", m, samplerMismatchBound)
		}
	}
	var st struct {
		Rollout struct {
			Engine      string  `json:"engine"`
			Pushes      int64   `json:"pushes"`
			PushSeconds float64 `json:"push_seconds"`
		} `json:"rollout"`
	}
	b, err := os.ReadFile(stats)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Every Generate after an optimizer step pushes first: the SFT steps' last one
	// before the first ESPO Generate, then each ESPO step but the last.
	if st.Rollout.Engine != "vllm" || st.Rollout.Pushes < 1 || st.Rollout.PushSeconds <= 0 {
		t.Errorf("worker statistics %s: want the vllm engine's pushes counted and timed", b)
	}
	t.Logf("%d steps; sampler mismatch per reinforcement step %v; %d pushes, %.3f s in all", rep.Steps, mismatches,
		st.Rollout.Pushes, st.Rollout.PushSeconds)
}
