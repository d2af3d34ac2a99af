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
	"path/filepath"
	"testing"

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
