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

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/internal/localcluster"
	"github.com/espo-dev/espo-operator/test/pyenv"
)

// TestNewcomerVLMJob runs the newcomer's Hugging Face job (hack/local-vlm, what
// make run-local-vlm runs) as the script fills it in: a tiny random Qwen2.5-VL trained
// with LoRA on the CPU through the operator ends Succeeded, status.training.export
// names the best checkpoint's adapter with its merged model, and the README's lines
// load the folder with transformers and peft from local files only. The job runs with
// the model's own generate: with vLLM's CPU engine it takes over six minutes on two
// busy cores (about two on an idle machine, which is how the script's engine choice
// was run); here the API server checks that choice (hack/local-vlm/rollout-vllm.yaml)
// without running it, and TestTrainerSamplesWithVLLM runs the engine under the trainer.
func TestNewcomerVLMJob(t *testing.T) {
	g := NewWithT(t)
	python := pyenv.Require(t)
	ns := newNamespace(t, "e2e-local-vlm")
	model := randomModelOutsidePodMounts(t, "qwen2_5_vl")
	code := workerCodeOutsidePodMounts(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, "hack", "local-vlm", "job.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	vllm, err := os.ReadFile(filepath.Join(repoRoot, "hack", "local-vlm", "rollout-vllm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	// One torch thread in the worker, as the other e2e tests' workers have: the
	// trainer, the API server and the other packages' tests share the two cores, and
	// a second thread spins at every barrier. (The newcomer's own run keeps torch's
	// default.)
	const device = "- {name: ESPO_WORKER_DEVICE, value: cpu}\n"
	render := func(rollout, engine string) string {
		job := strings.NewReplacer("${MODEL}", model, "${PYTHON}", python, "${PYTHONPATH}", code,
			"${ROLLOUT}", rollout, "${ENGINE_PYTHON}", engine,
			device, device+"    - {name: OMP_NUM_THREADS, value: \"1\"}\n").Replace(string(raw))
		g.Expect(job).To(ContainSubstring("OMP_NUM_THREADS"), "the job's trainer.env, where the worker's thread count is added")
		path := filepath.Join(t.TempDir(), "job.yaml")
		g.Expect(os.WriteFile(path, []byte(job), 0o600)).To(Succeed())
		return path
	}
	mustKubectl(g, "create", "--dry-run=server", "-n", ns, "-f", render(strings.TrimSpace(string(vllm)), "/engine/bin/python"))
	apply(g, ns, filepath.Join("hack", "local-vlm", "claims.yaml"))
	mustKubectl(g, "create", "-n", ns, "-f", render("{engine: huggingface}", ""))

	done := training(waitForSucceeded(t, ns, "local-vlm"))
	ex := done.Export
	g.Expect(ex).NotTo(BeNil(), "status.training.export")
	g.Expect(*ex).To(And(HaveField("Path", "local-vlm"), HaveField("Kind", trainingv1alpha1.ExportLoRA), HaveField("Merged", true),
		HaveField("Metric", trainingv1alpha1.MetricRecommendationAccuracy)))
	folder := filepath.Join(localcluster.ClaimDir(nodeState, ns, "local-vlm-models"), "local-vlm")
	load := exec.Command(python, "-", model, folder)
	load.Stdin = strings.NewReader(`import sys
from transformers import AutoModelForImageTextToText; from peft import PeftModel
base = AutoModelForImageTextToText.from_pretrained(sys.argv[1], local_files_only=True)
model = PeftModel.from_pretrained(base, sys.argv[2], local_files_only=True)
merged = AutoModelForImageTextToText.from_pretrained(sys.argv[2] + "/merged", local_files_only=True)
print("loaded", type(model.get_base_model()).__name__, type(merged).__name__)`)
	out, err := load.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "loading the export: %s", out)
	g.Expect(string(out)).To(ContainSubstring("loaded Qwen2_5_VLForConditionalGeneration Qwen2_5_VLForConditionalGeneration"))
}
