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
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// TestTrainerEndsAtOnceOnTheTorchWorkersRefusals: the torch worker process refuses
// for good a Hugging Face hub id where a folder on the claim belongs, LoRA targets
// the model does not have and an attention implementation whose package is not
// installed (flash_attention_2: flash_attn is in no image the tests run in); the Go
// trainer reads each refusal's reason (espo_worker.refusal, worker.RefusalError: the
// two sides agree on the contract) and ends the run at its first Configure with the
// reason's outcome and a message that names the spec field and what the worker
// found, not the worker's option or a traceback.
func TestTrainerEndsAtOnceOnTheTorchWorkersRefusals(t *testing.T) {
	model := randomModel(t, "qwen3")
	w := startWorker(t, t.TempDir()) // one process for the three: a refused Configure leaves it as it was
	for _, c := range []struct {
		name    string
		spec    func(m *trainingv1alpha1.ModelSpec)
		outcome trainingv1alpha1.TrainingOutcome
		reason  string
		want    []string
	}{
		{"a hub id on the claim", func(m *trainingv1alpha1.ModelSpec) {
			m.Pretrained, m.Weights = "Qwen/Qwen2.5-0.5B-Instruct", &trainingv1alpha1.VolumePath{ClaimName: "models"}
		}, trainingv1alpha1.OutcomeModelIncomplete, worker.ReasonModelNotAFolder, []string{
			"spec.model.pretrained: no folder /models/Qwen/Qwen2.5-0.5B-Instruct in the worker's pod",
			`"Qwen/Qwen2.5-0.5B-Instruct" looks like a Hugging Face hub id, and the worker does not fetch models from the hub`,
			"put the model's files on the claim",
		}},
		{"LoRA targets the model lacks", func(m *trainingv1alpha1.ModelSpec) {
			m.Pretrained, m.LoRA = model, &trainingv1alpha1.LoRASpec{Rank: 2, TargetModules: []string{"c_attn", "wq"}}
		}, trainingv1alpha1.OutcomeConfigInvalid, worker.ReasonLoRATargetModulesNotFound, []string{
			"spec.model.lora.targetModules: the model has no module named c_attn, wq that LoRA can adapt",
			"the names of those it has are down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj:",
		}},
		{"flash attention without flash_attn", func(m *trainingv1alpha1.ModelSpec) {
			m.Pretrained, m.AttnImplementation = model, trainingv1alpha1.AttnFlashAttention2
		}, trainingv1alpha1.OutcomeConfigInvalid, worker.ReasonAttnImplementationUnavailable, []string{
			"spec.model.attnImplementation: flash_attention_2 needs the Python package flash_attn, which the worker's image does not have: set it to sdpa or eager",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := smallRun(t)
			c.spec(&run.Spec.Model)
			rec := &statusRecorder{}
			settings, err := trainer.Resolve(run)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Reporter: rec, Log: logr.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Run(context.Background())
			if got := trainer.PermanentOutcome(err); got != c.outcome {
				t.Fatalf("Run: %v (outcome %q), want %s", err, got, c.outcome)
			}
			var r *worker.RefusalError
			if !errors.As(err, &r) || r.Reason != c.reason {
				t.Errorf("Run: %v, want a refusal of reason %s", err, c.reason)
			}
			last := rec.reports[len(rec.reports)-1]
			t.Logf("reported: %s: %s", last.Outcome, last.Message)
			if last.Outcome != c.outcome {
				t.Errorf("reported outcome %q, want %s", last.Outcome, c.outcome)
			}
			for _, want := range c.want {
				if !strings.Contains(last.Message, want) {
					t.Errorf("message %q does not contain %q", last.Message, want)
				}
			}
			for _, not := range []string{"lora_targets", "attn_implementation", "Traceback", "Error:"} {
				if strings.Contains(last.Message, not) {
					t.Errorf("message %q names %q: the worker's words, not the spec's", last.Message, not)
				}
			}
		})
	}
}
