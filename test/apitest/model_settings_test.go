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
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
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
			sent := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(fmt.Appendf(nil, modelSettings, name, worker), &sent.Object); err != nil {
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
			var typed trainingv1alpha1.ESPOJob
			if err := env.Scheme.Convert(raw, &typed, nil); err != nil {
				t.Fatal(err)
			}
			m := typed.Spec.Model
			if m.LoRA == nil || m.LoRA.Rank != 16 || m.LoRA.Alpha != 32 || m.LoRA.Dropout != "0.05" || len(m.LoRA.TargetModules) != 3 ||
				m.GradientCheckpointing == nil || *m.GradientCheckpointing || m.DType != trainingv1alpha1.DTypeFloat16 ||
				m.AttnImplementation != trainingv1alpha1.AttnFlashAttention2 || m.MaxNewTokens != 32768 || m.MaxPromptTokens != 1 {
				t.Errorf("spec.model through the Go types: %+v (lora %+v)", m, m.LoRA)
			}
		})
	}
}
