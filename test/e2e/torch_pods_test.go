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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// Two trainer pods of two PyTorch workers each (the tiny model, on CPU): the four
// workers form one gloo group across the pods over the pod network (the rendezvous
// at pod 0's address from the hosts file, each pod's workers on its own address),
// and the job ends with the weights one pod of four workers ends with.
func TestTorchWorkersFormOneGroupAcrossPods(t *testing.T) {
	python := pyenv.Require(t)
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-torch-pods")
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	code := workerCodeOutsidePodMounts(t)
	one := trainTorchJob(t, ns, code, "torch-1x4", 1, 4)
	two := trainTorchJob(t, ns, code, "torch-2x2", 2, 2)
	script := `
import sys, torch
a, b = (torch.load(f)["params"] for f in sys.argv[1:3])
print(max(float((x - y).abs().max()) for x, y in zip(a, b)) if len(a) == len(b) else "inf",
      max(float(x.abs().max()) for x in a))`
	out, err := exec.Command(python, "-c", script, one, two).Output()
	g.Expect(err).NotTo(HaveOccurred(), "comparing the states: %s", out)
	var diff, scale float64
	_, err = fmt.Sscan(string(out), &diff, &scale)
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	t.Logf("largest parameter difference between one pod of four and two pods of two: %g (largest weight %g)", diff, scale)
	g.Expect(diff).To(BeNumerically("<=", 1e-5*scale), "float32 all-reduce's rounding at most")
}

// workerCodeOutsidePodMounts copies the espo_worker package into a new folder of the
// user's cache folder and returns that folder, for PYTHONPATH. The process node
// rewrites absolute paths under a pod's mount paths into the pod's own folder, and
// every trainer pod mounts /tmp: a checkout under /tmp (as CI's may be) would not be
// found under its own path.
func workerCodeOutsidePodMounts(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cache, "espo-operator"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(cache, "espo-operator"), "e2e-worker-code-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	src := filepath.Join(repoRoot, "trainer", "worker", "torch", "espo_worker")
	if err := os.CopyFS(filepath.Join(dir, "espo_worker"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// trainTorchJob runs job-torch-pods.yaml as name with replicas pods of perPod workers,
// their Python code on pythonPath, to Succeeded, checks that the pods' workers served
// on their pods' addresses, and returns the worker state of its last checkpoint.
func trainTorchJob(t *testing.T, ns, pythonPath, name string, replicas, perPod int32) string {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, testdata("job-torch-pods.yaml")))
	g.Expect(err).NotTo(HaveOccurred())
	job := &trainingv1alpha1.ESPOJob{}
	g.Expect(yaml.UnmarshalStrict(raw, job)).To(Succeed())
	job.Name = name
	job.Spec.Model.Command = []string{pyenv.Require(t), "-m", "espo_worker"}
	job.Spec.Trainer.Replicas, job.Spec.Trainer.WorkersPerReplica = replicas, perPod
	job.Spec.Trainer.Env = []corev1.EnvVar{
		{Name: "PYTHONPATH", Value: pythonPath},
		{Name: "PYTHONDONTWRITEBYTECODE", Value: "1"},
		{Name: "OMP_NUM_THREADS", Value: "1"},
		{Name: "ESPO_WORKER_DEVICE", Value: "cpu"},
		{Name: "ESPO_WORKER_MAX_NEW_TOKENS", Value: "24"},
		{Name: "ESPO_WORKER_MAX_PROMPT_TOKENS", Value: "96"},
		// every pod shares the machine's ports: the rendezvous port of this job alone
		{Name: "MASTER_PORT", Value: strconv.Itoa(workertest.RendezvousPort(t))},
	}
	job.Spec.Checkpoint.PersistentVolumeClaim.Path = name
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
	done := waitForSucceeded(t, ns, name)
	cp := training(done).LastCheckpoint
	g.Expect(cp).NotTo(BeNil())
	// cp.Path is where the trainer saw it, under its pod's mount of the claim
	return filepath.Join(localcluster.ClaimDir(nodeState, ns, "e2e-checkpoints"), name, filepath.Base(cp.Path), "worker.state")
}

// podRank is a trainer pod's rank, the number its name ends with.
func podRank(p corev1.Pod) int32 {
	var r int32
	_, _ = fmt.Sscanf(p.Name[len(p.Name)-1:], "%d", &r)
	return r
}
