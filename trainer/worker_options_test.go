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
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// TestWorkerOptions: each field of spec.model reaches the workers as the Configure
// option of the name the workers read (trainer/worker/cpu options.go, the fields of
// the PyTorch worker's WorkerConfig), written as they parse it; an unset field sends nothing,
// so the worker's own default (its $ESPO_WORKER_<OPTION>) stays.
func TestWorkerOptions(t *testing.T) {
	off, on := false, true
	cases := map[string]struct {
		model trainingv1alpha1.ModelSpec
		want  map[string]string
	}{
		"nothing set: no option": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA},
			want:  map[string]string{},
		},
		"pretrained under the weights claim": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "Qwen2.5-VL-3B-Instruct",
				Weights: &trainingv1alpha1.VolumePath{ClaimName: "models", Path: "hf"}},
			want: map[string]string{"pretrained": "/models/Qwen2.5-VL-3B-Instruct"},
		},
		"the cpu policy's shape": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCPU,
				CPU: &trainingv1alpha1.CPUPolicySpec{Architecture: trainingv1alpha1.CPUTokens, HiddenSize: 8, FeatureBits: 10, MaxIntentWords: 20}},
			want: map[string]string{"arch": "tokens", "hidden": "8", "hash_bits": "10", "max_intent_words": "20"},
		},
		"every cuda setting": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "/opt/models/qwen",
				DType: trainingv1alpha1.DTypeFloat16,
				LoRA: &trainingv1alpha1.LoRASpec{Rank: 16, Alpha: 32, Dropout: "0.05",
					TargetModules: []string{"q_proj", "v_proj", "model.layers.0.mlp.up_proj"}},
				GradientCheckpointing: &on, AttnImplementation: trainingv1alpha1.AttnFlashAttention2,
				MaxNewTokens: 512, MaxPromptTokens: 4096},
			want: map[string]string{"pretrained": "/opt/models/qwen", "dtype": "float16",
				"lora_r": "16", "lora_alpha": "32", "lora_dropout": "0.05", "lora_targets": "q_proj,v_proj,model.layers.0.mlp.up_proj",
				"gradient_checkpointing": "true", "attn_implementation": "flash_attention_2",
				"max_new_tokens": "512", "max_prompt_tokens": "4096"},
		},
		"LoRA with the rank alone: alpha, dropout and targets stay the worker's": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
				LoRA: &trainingv1alpha1.LoRASpec{Rank: 4}},
			want: map[string]string{"pretrained": "m", "lora_r": "4"},
		},
		"gradient checkpointing turned off is sent, to win over the environment": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", GradientCheckpointing: &off},
			want:  map[string]string{"pretrained": "m", "gradient_checkpointing": "false"},
		},
		"the vllm engine with every setting": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
				Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, GPUMemoryUtilization: "0.25",
					MaxModelLen: 8192, EnforceEager: &on, CPUKVCacheGiB: 8}},
			want: map[string]string{"pretrained": "m", "rollout_engine": "vllm", "vllm_gpu_memory_utilization": "0.25",
				"vllm_max_model_len": "8192", "vllm_enforce_eager": "true", "vllm_cpu_kv_cache_gib": "8"},
		},
		"the vllm engine alone: the engine's settings stay the worker's": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
				Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM}},
			want: map[string]string{"pretrained": "m", "rollout_engine": "vllm"},
		},
		"enforceEager turned off is sent": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
				Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, EnforceEager: &off}},
			want: map[string]string{"pretrained": "m", "rollout_engine": "vllm", "vllm_enforce_eager": "false"},
		},
		"sharded: the one sharding option sent": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", Sharding: trainingv1alpha1.ShardingSharded},
			want:  map[string]string{"pretrained": "m", "sharding": "sharded"},
		},
		"hybrid is sent as it is": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", Sharding: trainingv1alpha1.ShardingHybrid},
			want:  map[string]string{"pretrained": "m", "sharding": "hybrid"},
		},
		"replicated named: no sharding option": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", Sharding: trainingv1alpha1.ShardingReplicated},
			want:  map[string]string{"pretrained": "m"},
		},
		"the huggingface engine named: no rollout option": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
				Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutHuggingFace}},
			want: map[string]string{"pretrained": "m"},
		},
		"an external worker gets the same options": {
			model: trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerExternal, Endpoint: "worker.ml.svc:50051",
				DType: trainingv1alpha1.DTypeBFloat16, AttnImplementation: trainingv1alpha1.AttnSDPA, MaxNewTokens: 64},
			want: map[string]string{"dtype": "bfloat16", "attn_implementation": "sdpa", "max_new_tokens": "64"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, workerOptions(&tc.model)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the PyTorch worker knows every option", func(t *testing.T) {
		known := torchWorkerOptions(t)
		for _, c := range []string{"every cuda setting", "the vllm engine with every setting"} {
			for k := range cases[c].want {
				if !slices.Contains(known, k) {
					t.Errorf("option %q is no field of the PyTorch worker's WorkerConfig %v", k, known)
				}
			}
		}
	})
}

// torchWorkerOptions reads the names of the Configure options the PyTorch worker
// accepts: the fields of WorkerConfig in espo_worker/config.py.
func torchWorkerOptions(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("worker/torch/espo_worker/config.py")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)\nclass WorkerConfig:(.*?)\n    # --`).FindSubmatch(src)
	if body == nil {
		t.Fatal("config.py has no class WorkerConfig whose fields end at a '# --' comment")
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^    ([a-z_0-9]+): [a-z]+ = setting\(`).FindAllSubmatch(body[1], -1) {
		names = append(names, string(m[1]))
	}
	if len(names) < 10 {
		t.Fatalf("read %d fields of WorkerConfig from config.py, want its dozen: %v", len(names), names)
	}
	return names
}

// TestEncoderOptionPlacesTheModelAsPretrainedIs: embedder.worker.model reaches the
// workers as embedder_model, under the models volume when spec.model.weights is set.
func TestEncoderOptionPlacesTheModelAsPretrainedIs(t *testing.T) {
	var s trainingv1alpha1.ESPOJobSpec
	if got := encoderOption(&s); got != "" {
		t.Errorf("without an encoder: %q, want none", got)
	}
	s.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Worker: &trainingv1alpha1.WorkerEmbedderSpec{Model: "all-MiniLM-L6-v2"}}
	if got := encoderOption(&s); got != "all-MiniLM-L6-v2" {
		t.Errorf("without weights: %q, want the model as written", got)
	}
	s.Model.Weights = &trainingv1alpha1.VolumePath{ClaimName: "models"}
	if got := encoderOption(&s); got != "/models/all-MiniLM-L6-v2" {
		t.Errorf("with weights: %q, want it under /models", got)
	}
}
