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

package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestModelSummary(t *testing.T) {
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		want string
	}{
		"the default cpu policy":         {makeJob().Obj(), "cpu policy (features)"},
		"the cpu policy, tokens":         {withCPU(makeJob().Obj(), trainingv1alpha1.CPUTokens), "cpu policy (tokens)"},
		"a model id: its last element":   {makeJob().CUDA("Qwen/Qwen2.5-VL-3B-Instruct").Obj(), "Qwen2.5-VL-3B-Instruct"},
		"LoRA: its rank":                 {makeJob().CUDA("Qwen2.5-VL-3B-Instruct").LoRA(16).Obj(), "Qwen2.5-VL-3B-Instruct (LoRA r=16)"},
		"an absolute path with a slash":  {makeJob().CUDA("/opt/models/qwen-7b/").LoRA(8).Obj(), "qwen-7b (LoRA r=8)"},
		"an initial checkpoint's folder": {makeJob().Worker(trainingv1alpha1.WorkerCUDA).InitialCheckpoint("ckpts", "run-1/step-000000000600").Obj(), "checkpoint step-000000000600"},
		"an initial checkpoint at the claim's root": {
			makeJob().Worker(trainingv1alpha1.WorkerCUDA).InitialCheckpoint("ckpts", "").LoRA(4).Obj(), "checkpoint ckpts (LoRA r=4)"},
		"an external worker: its endpoint":    {makeJob().External("worker.ml.svc:50051").LoRA(32).Obj(), "external worker at worker.ml.svc:50051 (LoRA r=32)"},
		"an external worker naming its model": {withPretrained(makeJob().External("worker.ml.svc:50051").Obj(), "llama"), "llama"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := modelSummary(&tc.job.Spec.Model); got != tc.want {
				t.Errorf("modelSummary = %q, want %q", got, tc.want)
			}
		})
	}

	long := makeJob().CUDA(strings.Repeat("é", 700)).LoRA(16).Obj() // 1,400 bytes
	if got := modelSummary(&long.Spec.Model); len(got) > trainingv1alpha1.MaxConditionMessageLength || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("a long name gives %d bytes (valid UTF-8: %v), want it cut to at most %d, ending in ...", len(got), utf8.ValidString(got), trainingv1alpha1.MaxConditionMessageLength)
	}
}

// TestSummarizeSetsTheModel: every status the controller computes names the model,
// whatever the pods do.
func TestSummarizeSetsTheModel(t *testing.T) {
	u := newStatusUpdate(makeJob().CUDA("Qwen2.5-VL-3B-Instruct").LoRA(16).Obj(), now)
	summarize(u)
	if got, want := u.status().Model, "Qwen2.5-VL-3B-Instruct (LoRA r=16)"; got != want {
		t.Errorf("status.model = %q, want %q", got, want)
	}
}

// withPretrained sets job's spec.model.pretrained, whatever its worker.
func withPretrained(job *trainingv1alpha1.ESPOJob, pretrained string) *trainingv1alpha1.ESPOJob {
	job.Spec.Model.Pretrained = pretrained
	return job
}

// withCPU gives job's cpu policy the architecture arch.
func withCPU(job *trainingv1alpha1.ESPOJob, arch trainingv1alpha1.CPUArchitecture) *trainingv1alpha1.ESPOJob {
	job.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{Architecture: arch}
	return job
}
