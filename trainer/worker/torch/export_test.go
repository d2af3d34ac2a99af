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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// TestGangExportsTheTrainedAdapter: Gang.Export asks the PyTorch worker to write a
// LoRA-trained random Qwen3 as a Hugging Face folder with its merged model, and
// describes what it wrote as the folder's manifest does; the in-process CPU policy
// refuses with ErrNoExport.
func TestGangExportsTheTrainedAdapter(t *testing.T) {
	allowed := t.TempDir()
	w := startWorker(t, allowed, "--max-new-tokens", "8")
	gang := worker.NewGang(w.Remote)
	ctx := context.Background()
	setup := worker.Setup{Seed: 1, Options: map[string]string{"pretrained": randomModel(t, "qwen3"), "dtype": "float32", "lora_r": "4"}}
	if _, err := gang.Configure(ctx, setup); err != nil {
		t.Fatalf("%v\nworker log:\n%s", err, w.log())
	}
	if _, err := gang.Step(ctx, worker.StepOptions{LearningRate: 0.01}); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(allowed, "export", "policy")
	got, err := gang.Export(ctx, dest, true)
	if err != nil {
		t.Fatalf("%v\nworker log:\n%s", err, w.log())
	}
	raw, err := os.ReadFile(filepath.Join(dest, "espo-export.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Kind   string            `json:"kind"`
		Merged bool              `json:"merged"`
		Step   int64             `json:"step"`
		Files  map[string]string `json:"files"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	want := worker.Exported{Path: dest, Kind: "lora", Merged: true, Step: 1, Files: int64(len(manifest.Files))}
	if got != want || manifest.Kind != "lora" || !manifest.Merged || manifest.Step != 1 {
		t.Errorf("exported %+v (manifest %+v), want %+v", got, manifest, want)
	}
	for _, f := range []string{"adapter_model.safetensors", "adapter_config.json", "merged/config.json", "merged/model.safetensors"} {
		if _, ok := manifest.Files[f]; !ok {
			t.Errorf("the manifest names no %s: %v", f, manifest.Files)
		}
	}
	if _, err := gang.Export(ctx, filepath.Join(t.TempDir(), "elsewhere"), false); err == nil {
		t.Error("an export outside the worker's allowed folders was written")
	}
	local := worker.NewGang(worker.NewLocal(cpu.New(0)))
	if _, err := local.Export(ctx, dest, false); !errors.Is(err, worker.ErrNoExport) {
		t.Errorf("the CPU policy's export: %v, want ErrNoExport", err)
	}
}

// TestTrainerExportsTheBestCheckpointThroughTheTorchWorker: a LoRA run of a random
// Qwen3 on the PyTorch worker with spec.export (merge, bestBy) ends Completed with
// status.training.export naming the best validation evaluation's step, and the
// folder passes the worker's own verification (every file of its manifest there with
// its digest) with that step and the merged model beside the adapter.
func TestTrainerExportsTheBestCheckpointThroughTheTorchWorker(t *testing.T) {
	c := smallRun(t)
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: randomModel(t, "qwen3"),
		DType: trainingv1alpha1.DTypeFloat32, LoRA: &trainingv1alpha1.LoRASpec{Rank: 4}}
	c.Spec.Algorithm.LearningRate = "0.01"
	c.CheckpointDir = filepath.Join(c.OutputDir, "checkpoints")
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 1000, Keep: 1}
	c.ExportDir = filepath.Join(c.OutputDir, "export", "run-1")
	c.Spec.Export = &trainingv1alpha1.ExportSpec{PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "models", Path: "run-1"},
		Merge: true, BestBy: trainingv1alpha1.MetricFormatRate}
	c.Spec.Default()
	w := startWorker(t, c.OutputDir, "--max-new-tokens", "8", "--max-prompt-tokens", "96")
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatalf("%v\nworker log:\n%s", err, w.log())
	}
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || len(rep.Validation) != 2 {
		t.Fatalf("outcome %s (%s), %d validations; want Completed after 2", rep.Outcome, rep.Message, len(rep.Validation))
	}
	best := rep.Validation[0]
	for _, r := range rep.Validation[1:] {
		if r.FormatRate > best.FormatRate {
			best = r
		}
	}
	ex := rep.Status.Export
	if ex == nil || ex.Step != best.Step || ex.Kind != trainingv1alpha1.ExportLoRA || !ex.Merged || ex.Metric != trainingv1alpha1.MetricFormatRate {
		t.Fatalf("status.training.export %+v, want the LoRA adapter, merged, of step %d (formatRate %v)", ex, best.Step, best.FormatRate)
	}
	cmd := exec.Command(python, "-c", "import sys, json; from espo_worker import export; m = export.verify(sys.argv[1]); print(json.dumps([m.step, m.kind, m.merged, len(m.files)]))", c.ExportDir)
	cmd.Env = pyEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verifying the export: %v", err)
	}
	var got []any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if want := []any{float64(best.Step), "lora", true, float64(ex.Files)}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("the export's manifest says %v, want %v", got, want)
	}
}
