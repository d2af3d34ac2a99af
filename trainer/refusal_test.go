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
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// refusingPolicy refuses every Configure with its refusal.
type refusingPolicy struct {
	worker.Policy
	refusal *worker.RefusalError
}

func (p refusingPolicy) Configure(uint64, map[string]string) error { return p.refusal }

// TestAWorkersRefusalEndsTheRunAtOnce: a worker's permanent refusal with a reason
// ends the run at once with the outcome its reason maps to, and the report's message
// names the spec field and what the worker found, paths as the pod sees them (a
// local mode's pod root taken off).
func TestAWorkersRefusalEndsTheRunAtOnce(t *testing.T) {
	const podRoot = "/tmp/espo-local/pod-0/root"
	for name, c := range map[string]struct {
		refusal *worker.RefusalError
		outcome trainingv1alpha1.TrainingOutcome
		want    string
	}{
		"a hub id on the claim": {&worker.RefusalError{Reason: worker.ReasonModelNotAFolder, Metadata: map[string]string{
			"model": podRoot + "/models/Qwen/Qwen2.5-0.5B-Instruct", "folder": podRoot + "/models/Qwen/Qwen2.5-0.5B-Instruct"}},
			trainingv1alpha1.OutcomeModelIncomplete,
			`worker 0 (in process): spec.model.pretrained: no folder /models/Qwen/Qwen2.5-0.5B-Instruct in the worker's pod (spec.model.weights' claim is mounted at /models): ` +
				`"Qwen/Qwen2.5-0.5B-Instruct" looks like a Hugging Face hub id, and the worker does not fetch models from the hub: ` +
				`put the model's files on the claim (huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir <claim>/Qwen2.5-0.5B-Instruct) ` +
				`and set pretrained to their folder on it (Qwen2.5-0.5B-Instruct)`},
		"LoRA targets the model lacks": {&worker.RefusalError{Reason: worker.ReasonLoRATargetModulesNotFound, Metadata: map[string]string{
			"missing": "wq", "available": "k_proj,q_proj"}},
			trainingv1alpha1.OutcomeConfigInvalid,
			`worker 0 (in process): spec.model.lora.targetModules: the model has no module named wq that LoRA can adapt (a linear layer); ` +
				`the names of those it has are k_proj, q_proj: list some of these, or leave targetModules unset to adapt every linear layer`},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			tr, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{
				Workers:  worker.NewGang(worker.NewLocal(refusingPolicy{Policy: cpu.New(0), refusal: c.refusal})),
				Reporter: rec, Log: logr.Discard(), PodRoot: podRoot})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Run(context.Background())
			if got := PermanentOutcome(err); got != c.outcome {
				t.Fatalf("Run: %v, outcome %q; want %s", err, got, c.outcome)
			}
			last := rec.reports[len(rec.reports)-1]
			if last.Outcome != c.outcome || last.Message != c.want {
				t.Errorf("last report: outcome %q, message\n %s\nwant %s,\n %s", last.Outcome, last.Message, c.outcome, c.want)
			}
		})
	}
}
