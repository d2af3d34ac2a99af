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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/localcluster"
	"github.com/espo-dev/espo-operator/test/pyenv"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
)

// The PyTorch worker trains a tiny random Qwen2.5-VL (a real Hugging Face
// vision-language architecture, written by save_pretrained and loaded from local files
// only) on CPU through the operator: SFT, then ESPO, to Succeeded with the per-stage
// accuracies in status. Two trainer pods of two workers each form one gloo group
// across the pods over the pod network (the rendezvous at pod 0's address from the
// hosts file, each pod's workers on its own address); their rank 0 trainer is killed
// after a checkpoint, and the gang resumes from it. The job ends with the weights one
// pod of four workers ends with, uninterrupted.
func TestTorchWorkersTrainAVLMAcrossPodsAndResume(t *testing.T) {
	python := pyenv.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-torch-pods")
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	code := workerCodeOutsidePodMounts(t)
	model := randomModelOutsidePodMounts(t, "qwen2_5_vl")
	one := trainTorchJob(t, ns, code, model, "torch-1x4", 1, 4, nil)
	two := trainTorchJob(t, ns, code, model, "torch-2x2", 2, 2, killTrainerAfterACheckpoint)
	// the largest difference between the two states' weights, the largest weight, and
	// how far ESPO moved the first from its reference (the policy after SFT)
	script := `
import sys, torch
a, b = (torch.load(f) for f in sys.argv[1:3])
pa, pb = a["params"], b["params"]
print(max(float((x - y).abs().max()) for x, y in zip(pa, pb)) if len(pa) == len(pb) else "inf",
      max(float(x.abs().max()) for x in pa), max(float((x - r).abs().max()) for x, r in zip(pa, a["reference"])))`
	out, err := exec.Command(python, "-c", script, one, two).Output()
	g.Expect(err).NotTo(HaveOccurred(), "comparing the states: %s", out)
	var diff, scale, moved float64
	_, err = fmt.Sscan(string(out), &diff, &scale, &moved)
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	t.Logf("largest parameter difference between one pod of four and two pods of two: %g (largest weight %g; ESPO moved "+
		"the weights by up to %g from its reference)", diff, scale, moved)
	g.Expect(moved).To(BeNumerically(">", 1e-4*scale), "ESPO's steps changed the weights: the comparison can tell")
	g.Expect(diff).To(BeNumerically("<=", 1e-5*scale), "float32 all-reduce's rounding at most")
}

// killTrainerAfterACheckpoint kills the rank 0 trainer of the running job of pods
// once it has checkpointed, waits for the gang's restart and for the new trainer to
// say it resumes from that checkpoint's step or a later one.
func killTrainerAfterACheckpoint(t *testing.T, pods []corev1.Pod) {
	g := NewWithT(t)
	ns, name := pods[0].Namespace, pods[0].Labels[controllers.LabelJobName]
	checkpoint := waitForCheckpoint(t, ns, name)
	pod := pods[0]
	for _, p := range pods {
		if podRank(p) == 0 {
			pod = p
		}
	}
	pid := containerPID(&pod, controllers.ContainerTrainer)
	g.Expect(pid).To(BeNumerically(">", 0))
	g.Expect(syscall.Kill(-pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getJob(g, ns, name).Status.Restarts).To(Equal(int32(1)))
		g.Expect(resumedAtStep(g, ns, name)).To(BeNumerically(">=", checkpoint))
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	t.Logf("%s: the trainer killed after the checkpoint of step %d resumed", name, checkpoint)
}

// outsidePodMounts makes a new folder of the user's cache folder, removed at the end
// of the test. The process node rewrites absolute paths under a pod's mount paths into
// the pod's own folder, and every trainer pod mounts /tmp: a checkout (or a model)
// under /tmp (as CI's may be) would not be found under its own path.
func outsidePodMounts(t *testing.T, prefix string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cache, "espo-operator"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(cache, "espo-operator"), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// workerCodeOutsidePodMounts copies the espo_worker package into a folder outside the
// pods' mounts (outsidePodMounts) and returns that folder, for PYTHONPATH.
func workerCodeOutsidePodMounts(t *testing.T) string {
	t.Helper()
	dir := outsidePodMounts(t, "e2e-worker-code-")
	for _, pkg := range []string{"espo_worker", "espo_engine"} { // the worker, and its side of the rollout engine
		src := filepath.Join(repoRoot, "trainer", "worker", "torch", pkg)
		if err := os.CopyFS(filepath.Join(dir, pkg), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// randomModelOutsidePodMounts writes a tiny random Hugging Face model of arch
// (trainer/worker/torch/tests/random_models.py) into a folder outside the pods'
// mounts and returns the folder.
func randomModelOutsidePodMounts(t *testing.T, arch string) string {
	t.Helper()
	dir := filepath.Join(outsidePodMounts(t, "e2e-model-"), arch)
	cmd := exec.Command(pyenv.Require(t), "-m", "tests.random_models", dir, "--arch", arch)
	cmd.Dir = filepath.Join(repoRoot, "trainer", "worker", "torch")
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python -m tests.random_models: %v\n%s", err, out)
	}
	return dir
}

// trainTorchJob runs job-torch-pods.yaml as name with the Hugging Face model in the
// folder model, replicas pods of perPod workers, their Python code on pythonPath, to
// Succeeded, checks that the pods' workers served on their pods' addresses, that the
// status holds the evaluation's per-stage accuracies, and returns the worker state of
// its last checkpoint. meanwhile, when not nil, runs once the pods have started.
func trainTorchJob(t *testing.T, ns, pythonPath, model, name string, replicas, perPod int32, meanwhile func(*testing.T, []corev1.Pod)) string {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, testdata("job-torch-pods.yaml")))
	g.Expect(err).NotTo(HaveOccurred())
	job := &trainingv1alpha1.ESPOJob{}
	g.Expect(yaml.UnmarshalStrict(raw, job)).To(Succeed())
	job.Name = name
	job.Spec.Model.Command = []string{pyenv.Require(t), "-m", "espo_worker"}
	job.Spec.Model.Pretrained = model
	job.Spec.Trainer.Replicas, job.Spec.Trainer.WorkersPerReplica = replicas, perPod
	job.Spec.Trainer.Env = []corev1.EnvVar{
		{Name: "PYTHONPATH", Value: pythonPath},
		{Name: "PYTHONDONTWRITEBYTECODE", Value: "1"},
		{Name: "OMP_NUM_THREADS", Value: "1"},
		{Name: "ESPO_WORKER_DEVICE", Value: "cpu"},
		// every pod shares the machine's ports: the rendezvous port of this job alone
		{Name: "MASTER_PORT", Value: strconv.Itoa(workertest.RendezvousPort(t))},
	}
	job.Spec.Checkpoint.PersistentVolumeClaim.Path = name
	job.Spec.Export.PersistentVolumeClaim.Path = filepath.Join("exports", name)
	doc, err := yaml.Marshal(job)
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), name+".yaml")
	g.Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
	mustKubectl(g, "create", "-n", ns, "-f", path)

	pods := runningPods(t, ns, name, int(replicas))
	for _, p := range pods {
		g.Eventually(func(g Gomega) {
			log := mustKubectl(g, "logs", "-n", ns, p.Name, "-c", controllers.ContainerWorker)
			for k := range perPod {
				g.Expect(log).To(ContainSubstring("serving on %s:%d (rank %d of %d, cpu)",
					p.Status.PodIP, 50051+k, podRank(p)*perPod+k, replicas*perPod))
			}
		}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	}
	if meanwhile != nil {
		meanwhile(t, pods)
	}
	done := waitForSucceeded(t, ns, name)
	ev := training(done).Evaluation
	g.Expect(ev).NotTo(BeNil(), "the status holds the last evaluation")
	for stage, acc := range map[string]trainingv1alpha1.Decimal{"GUI": ev.GUITypeAccuracy, "intent": ev.IntentAccuracy,
		"recommendation": ev.RecommendationAccuracy} {
		g.Expect(acc).NotTo(BeEmpty(), "the %s accuracy in status", stage)
	}
	t.Logf("%s: %s, %s evaluation: GUI %s, intent %s, recommendation %s", name, done.Status.Phase, ev.Split,
		ev.GUITypeAccuracy, ev.IntentAccuracy, ev.RecommendationAccuracy)
	config, err := os.ReadFile(filepath.Join(model, "config.json"))
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(config)
	g.Expect(training(done).Provenance).To(HaveField("ModelConfig", hex.EncodeToString(sum[:])),
		"the provenance names the model folder's config.json, as the workers read it")
	cp := training(done).LastCheckpoint
	g.Expect(cp).NotTo(BeNil())
	// cp.Path is where the trainer saw it, under its pod's mount of the claim
	claim := localcluster.ClaimDir(nodeState, ns, "e2e-checkpoints")
	state := filepath.Join(claim, name, filepath.Base(cp.Path), "worker.state")
	checkExport(t, training(done), claim, job.Spec.Export.PersistentVolumeClaim.Path, state)
	return state
}

// checkExport checks the Hugging Face folder a job exported to path in its claim's
// folder (spec.export) against its status and its last checkpoint's worker state:
// status.training.export names it, of the last step, a whole model; its manifest
// verifies; transformers loads it from local files only; and its weights are, to the
// bit, the checkpoint's.
func checkExport(t *testing.T, tr *trainingv1alpha1.TrainingStatus, claim, path, state string) {
	g := NewWithT(t)
	g.Expect(tr.Export).NotTo(BeNil(), "status.training.export")
	g.Expect(*tr.Export).To(And(HaveField("Path", path), HaveField("Kind", trainingv1alpha1.ExportFull), HaveField("Step", tr.Step)))
	folder := filepath.Join(claim, path)
	script := `
import sys, torch, transformers
from espo_worker import export
export.verify(sys.argv[1])
m = transformers.AutoModelForImageTextToText.from_pretrained(sys.argv[1], local_files_only=True, dtype=torch.float32)
st = torch.load(sys.argv[2])
ps = list(m.parameters())
print(len(ps) == len(st["params"]) and max(float((p - q).abs().max()) for p, q in zip(ps, st["params"])))`
	cmd := exec.Command(pyenv.Require(t), "-c", script, folder, state)
	cmd.Dir = filepath.Join(repoRoot, "trainer", "worker", "torch")
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "loading the export: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	g.Expect(lines[len(lines)-1]).To(Equal("0.0"), "the exported weights are the last checkpoint's: %s", out)
}

// podRank is a trainer pod's rank, the number its name ends with.
func podRank(p corev1.Pod) int32 {
	var r int32
	_, _ = fmt.Sscanf(p.Name[len(p.Name)-1:], "%d", &r)
	return r
}
