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

package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// modelSettings sets every model setting of the PyTorch worker; %s is the worker and
// its own fields.
const modelSettings = `
apiVersion: training.espo.dev/v1alpha1
kind: ESPOJob
metadata:
  name: %s
spec:
  datasets:
    sources:
    - name: s
      synthetic: {}
  model:
    %s
    dtype: float16
    lora:
      rank: 16
      alpha: 32
      dropout: "0.05"
      targetModules: [q_proj, v_proj, model.layers.0.mlp.up_proj]
    gradientCheckpointing: false
    attnImplementation: flash_attention_2
    maxNewTokens: 32768
    maxPromptTokens: 1
`

// TestModelSettingsAccepted creates a cuda job and an external one with every model
// setting, each at a bound, and reads spec.model back: stored as sent (nothing
// defaulted into it, gradientCheckpointing false kept), and the same through the Go
// types.
func TestModelSettingsAccepted(t *testing.T) {
	ns := namespace(t)
	for name, worker := range map[string]string{
		"cuda-settings":     "worker: cuda\n    pretrained: Qwen2.5-VL-3B-Instruct",
		"external-settings": "worker: external\n    endpoint: worker.ml.svc:50051",
	} {
		t.Run(name, func(t *testing.T) {
			typed := createStoredAsSent(t, ns, name, fmt.Appendf(nil, modelSettings, name, worker))
			m := typed.Spec.Model
			if m.LoRA == nil || m.LoRA.Rank != 16 || m.LoRA.Alpha != 32 || m.LoRA.Dropout != "0.05" || len(m.LoRA.TargetModules) != 3 ||
				m.GradientCheckpointing == nil || *m.GradientCheckpointing || m.DType != trainingv1alpha1.DTypeFloat16 ||
				m.AttnImplementation != trainingv1alpha1.AttnFlashAttention2 || m.MaxNewTokens != 32768 || m.MaxPromptTokens != 1 {
				t.Errorf("spec.model through the Go types: %+v (lora %+v)", m, m.LoRA)
			}
		})
	}
}

// createStoredAsSent creates the job of manifest (named name) in ns, checks that the
// API server stored its spec.model as sent, nothing defaulted into it, and returns
// the stored job through the Go types.
func createStoredAsSent(t *testing.T, ns, name string, manifest []byte) *trainingv1alpha1.ESPOJob {
	t.Helper()
	sent := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &sent.Object); err != nil {
		t.Fatal(err)
	}
	sent.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), sent.DeepCopy(), strict); err != nil {
		t.Fatalf("refused: %v", err)
	}
	raw := getRaw(t, ns, name)
	want, _ := json.Marshal(sent.Object["spec"].(map[string]any)["model"]) // numbers as JSON: YAML and the server decode them differently
	got, _ := json.Marshal(raw.Object["spec"].(map[string]any)["model"])
	if string(got) != string(want) {
		t.Errorf("stored spec.model\n  %s\ndiffers from the one sent\n  %s", got, want)
	}
	typed := &trainingv1alpha1.ESPOJob{}
	if err := env.Scheme.Convert(raw, typed, nil); err != nil {
		t.Fatal(err)
	}
	return typed
}

// rolloutSettings sets every setting of the vllm engine at a bound: the whole GPU,
// maxModelLen exactly maxPromptTokens + the worker's default 256 answer tokens (no
// maxNewTokens), the largest CPU KV cache, enforceEager false; and %s, the sampler
// correction.
const rolloutSettings = `
apiVersion: training.espo.dev/v1alpha1
kind: ESPOJob
metadata:
  name: %s
spec:
  datasets:
    sources:
    - name: s
      synthetic: {}
  model:
    worker: cuda
    pretrained: Qwen2.5-VL-3B-Instruct
    maxPromptTokens: 4096
    rollout:
      engine: vllm
      gpuMemoryUtilization: "1"
      maxModelLen: 4352
      enforceEager: false
      cpuKVCacheGiB: 1024
  algorithm:
    %s
`

// TestRolloutSettingsAccepted creates vllm jobs with every rollout setting at a
// bound and the sampler correction's cap at "0" (off), "1" and unset, and reads
// spec.model.rollout and the cap back: stored as sent, nothing defaulted into them
// (the cap's default follows the engine: AlgorithmSpec.SamplerCorrectionCap). A job
// that names the rollout section with nothing in it gets engine huggingface, as Go's
// Default writes it.
func TestRolloutSettingsAccepted(t *testing.T) {
	ns := namespace(t)
	for name, tc := range map[string]struct{ algorithm, cap string }{
		"vllm-cap-off":    {`samplerCorrection: {cap: "0"}`, "0"},
		"vllm-cap-one":    {`samplerCorrection: {cap: "1"}`, "1"},
		"vllm-cap-unset":  {`samplerCorrection: {}`, "2"},
		"vllm-no-section": {`epochs: 6`, "2"},
	} {
		t.Run(name, func(t *testing.T) {
			typed := createStoredAsSent(t, ns, name, fmt.Appendf(nil, rolloutSettings, name, tc.algorithm))
			r := typed.Spec.Model.Rollout
			if r == nil || r.Engine != trainingv1alpha1.RolloutVLLM || r.GPUMemoryUtilization != "1" || r.MaxModelLen != 4352 ||
				r.EnforceEager == nil || *r.EnforceEager || r.CPUKVCacheGiB != 1024 {
				t.Errorf("spec.model.rollout through the Go types: %+v", r)
			}
			if got := typed.Spec.Algorithm.SamplerCorrectionCap(typed.Spec.Model.Engine()); string(got) != tc.cap {
				t.Errorf("the sampler correction's cap is %q, want %q", got, tc.cap)
			}
		})
	}
	t.Run("empty-rollout", func(t *testing.T) {
		u := readManifest(t, filepath.Join(env.RepoRoot, "config", "samples", "training_v1alpha1_espojob_minimal.yaml"))
		u.SetNamespace(ns)
		u.SetName("empty-rollout")
		if err := unstructured.SetNestedMap(u.Object, map[string]any{"worker": "cuda", "pretrained": "m", "rollout": map[string]any{}},
			"spec", "model"); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(context.Background(), u, strict); err != nil {
			t.Fatalf("refused: %v", err)
		}
		raw := getRaw(t, ns, "empty-rollout")
		if got, _ := lookup(raw.Object["spec"], "model.rollout"); fmt.Sprint(got) != "map[engine:huggingface]" {
			t.Errorf("stored spec.model.rollout %v, want engine huggingface defaulted", got)
		}
		goDefaulted := trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", Rollout: &trainingv1alpha1.RolloutSpec{}}
		goDefaulted.Default()
		if goDefaulted.Rollout.Engine != trainingv1alpha1.RolloutHuggingFace || goDefaulted.Engine() != trainingv1alpha1.RolloutHuggingFace {
			t.Errorf("Go defaults the engine to %q", goDefaulted.Rollout.Engine)
		}
	})
}

// TestExportSettingsAccepted creates jobs that export the best checkpoint, merged, of
// a recorded run (a validation share) and of an environment run (validation episodes
// by default), and one that exports the final full model: each stored with its
// export as sent.
func TestExportSettingsAccepted(t *testing.T) {
	ns := namespace(t)
	recorded := builders.MakeESPOJob("export-recorded", ns).CUDA("m").LoRA(8).Checkpoint("ckpt", "run", 5).
		Export("models", "run-1", true, trainingv1alpha1.MetricIntentAccuracy).Obj()
	environment := builders.MakeESPOJob("export-environment", ns).CUDA("m").LoRA(8).Checkpoint("ckpt", "run", 5).
		Export("models", "env/run-1", false, trainingv1alpha1.MetricStepSuccessRate).Obj()
	environment.Spec.Datasets = trainingv1alpha1.Datasets{Environment: &trainingv1alpha1.EnvironmentSource{
		Simulated: &trainingv1alpha1.SimulatedEnvironment{}}}
	environment.Spec.Default()
	full := builders.MakeESPOJob("export-full", ns).CUDA("m").Export("models", "full", false, "").Obj()
	for _, job := range []*trainingv1alpha1.ESPOJob{recorded, environment, full} {
		t.Run(job.Name, func(t *testing.T) {
			sent := *job.Spec.Export
			if err := env.Client.Create(context.Background(), job, strict); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if *job.Spec.Export != sent {
				t.Errorf("stored spec.export %+v, sent %+v", *job.Spec.Export, sent)
			}
		})
	}
}
