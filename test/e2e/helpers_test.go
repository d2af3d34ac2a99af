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
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/test/testenv"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Timeouts of the suite's waits, generous for a loaded 2-core CI machine.
const (
	kubectlTimeout = time.Minute     // one kubectl command
	jobTimeout     = 6 * time.Minute // a job from apply to its end
	trainingStarts = 3 * time.Minute // a job from apply (or a restart) to its first step or checkpoint
	podsChange     = 2 * time.Minute // pods to go or come back, a process to exit
	nsDefaults     = time.Minute     // a new namespace to get its default service account and root CA
	poll           = 250 * time.Millisecond
)

// kubectl runs kubectl in the repository's root against the suite's cluster and
// returns its standard output; the error holds its standard error.
func kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = repoRoot, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// mustKubectl runs kubectl and fails the test when it fails.
func mustKubectl(g Gomega, args ...string) string {
	out, err := kubectl(args...)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return out
}

// newNamespace creates a namespace for one test and waits until it has its default
// service account and root CA ConfigMap, which the control plane makes
// asynchronously, as a cluster's controller manager does. When the test ends its
// jobs are deleted (stopping their processes), after a dump of what went on if it
// failed.
func newNamespace(t testing.TB, name string) string {
	t.Helper()
	g := NewWithT(t)
	mustKubectl(g, "create", "namespace", name)
	g.Eventually(func() error {
		_, err := kubectl("get", "-n", name, "serviceaccount/"+controlplane.DefaultServiceAccount, "configmap/"+controlplane.RootCAConfigMap)
		return err
	}, nsDefaults, poll).Should(Succeed())
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, name)
		}
		_, _ = kubectl("delete", "espojobs", "--all", "-n", name, "--wait=false")
	})
	return name
}

// dumpNamespace logs the namespace's jobs, pods and events and its pods' logs.
func dumpNamespace(t testing.TB, ns string) {
	for _, args := range [][]string{
		{"get", "espojobs", "-o", "yaml"},
		{"get", "pods", "-o", "wide"},
		{"get", "events", "--sort-by=.lastTimestamp"},
	} {
		out, err := kubectl(append(args, "-n", ns)...)
		t.Logf("kubectl %s -n %s:\n%s%v", strings.Join(args, " "), ns, out, err)
	}
	logs, _ := filepath.Glob(filepath.Join(nodeState, "pods", ns, "*", "containers", "*", "*.log"))
	for _, l := range logs {
		t.Logf("%s:\n%s", l, testenv.TailFile(l, 30))
	}
}

// apply applies a manifest (a path relative to the repository's root) in ns and
// returns the name of the object.
func apply(g Gomega, ns, manifest string) string {
	out := mustKubectl(g, "apply", "-n", ns, "-f", manifest, "-o", "jsonpath={.metadata.name}")
	return strings.TrimSpace(out)
}

// testdata is the path of a file of this suite's testdata, relative to the root.
func testdata(name string) string { return filepath.Join("test", "e2e", "testdata", name) }

// getJob reads an ESPOJob from the API server (reader, not kubectl: the suite's
// waits poll every quarter second, and a kubectl process per poll cost more CPU than
// any other part of the suite but the trainers).
func getJob(g Gomega, ns, name string) *trainingv1alpha1.ESPOJob {
	job := &trainingv1alpha1.ESPOJob{}
	g.ExpectWithOffset(1, reader.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
	return job
}

// pollJob reads the job inside an Eventually, and stops it at once when the job
// failed.
func pollJob(g Gomega, ns, name string) *trainingv1alpha1.ESPOJob {
	job := getJob(g, ns, name)
	if job.Status.Phase == trainingv1alpha1.PhaseFailed {
		StopTrying(fmt.Sprintf("job %s/%s failed: %v", ns, name, job.Status.Conditions)).Now()
	}
	return job
}

// training is the job's status.training, never nil.
func training(job *trainingv1alpha1.ESPOJob) *trainingv1alpha1.TrainingStatus {
	if job.Status.Training == nil {
		return &trainingv1alpha1.TrainingStatus{}
	}
	return job.Status.Training
}

// waitForSucceeded waits for the job to finish, stops at once when it failed, and
// then checks with kubectl wait that its Succeeded condition is true.
func waitForSucceeded(t *testing.T, ns, name string) *trainingv1alpha1.ESPOJob {
	t.Helper()
	g := NewWithT(t)
	var job *trainingv1alpha1.ESPOJob
	g.Eventually(func(g Gomega) {
		job = pollJob(g, ns, name)
		g.Expect(job.Status.Phase).To(Equal(trainingv1alpha1.PhaseSucceeded))
	}).WithTimeout(jobTimeout).WithPolling(poll).Should(Succeed())
	mustKubectl(g, "wait", "-n", ns, "--for=condition=Succeeded", "espojob/"+name, "--timeout=30s")
	return job
}

// waitForCheckpoint waits until the job reports a checkpoint and returns its step.
func waitForCheckpoint(t *testing.T, ns, name string) int64 {
	t.Helper()
	var step int64
	NewWithT(t).Eventually(func(g Gomega) {
		cp := training(pollJob(g, ns, name)).LastCheckpoint
		g.Expect(cp).NotTo(BeNil())
		step = cp.Step
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	return step
}

// waitForTraining waits until the job's trainer reports a step.
func waitForTraining(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) int64 {
		return training(pollJob(g, ns, name)).Step
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(BeNumerically(">", 0))
}

// jobPods lists the job's pods (from reader).
func jobPods(g Gomega, ns, name string) []corev1.Pod {
	var list corev1.PodList
	g.ExpectWithOffset(1, reader.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{controllers.LabelJobName: name})).To(Succeed())
	return list.Items
}

// runningPods waits until the job has n pods, all running, and returns them.
func runningPods(t *testing.T, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	NewWithT(t).Eventually(func(g Gomega) {
		pollJob(g, ns, name)
		pods = jobPods(g, ns, name)
		g.Expect(pods).To(HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
		}
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	return pods
}

// podDir is the pod's folder on the process node.
func podDir(p *corev1.Pod) string {
	return filepath.Join(nodeState, "pods", p.Namespace, p.Name+"-"+string(p.UID))
}

// containerPID is the pid of the container's running process; 0 when none runs.
func containerPID(p *corev1.Pod, container string) int {
	return readPID(filepath.Join(podDir(p), "containers", container, "pid"))
}

// alive reports whether a process with this pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// logLines are the JSON log lines (the trainer's format) of a container, from
// kubectl logs, that have the given message.
func logLines(g Gomega, ns, pod, container, msg string) []map[string]any {
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(mustKubectl(g, "logs", "-n", ns, pod, "-c", container)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			lines = append(lines, line)
		}
	}
	return lines
}

// checkpointedJob applies the checkpoint claim and job-checkpoint.yaml in ns and waits
// until the job's trainer runs and has saved a checkpoint. It returns the job's name,
// the trainer's pod and the checkpoint's step.
func checkpointedJob(t *testing.T, ns string) (name string, pod corev1.Pod, checkpoint int64) {
	t.Helper()
	g := NewWithT(t)
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	name = apply(g, ns, testdata("job-checkpoint.yaml"))
	pod = runningPods(t, ns, name, 1)[0]
	return name, pod, waitForCheckpoint(t, ns, name)
}

// finishesResumed waits for a new trainer pod in place of old, then for the job to
// succeed after the given number of restarts, its trainer having resumed at or after
// the checkpoint's step.
func finishesResumed(t *testing.T, old *corev1.Pod, checkpoint int64, restarts int32) {
	t.Helper()
	g := NewWithT(t)
	ns, name := old.Namespace, old.Labels[controllers.LabelJobName]
	waitForReplacement(t, old)
	g.Expect(waitForSucceeded(t, ns, name).Status.Restarts).To(Equal(restarts))
	g.Expect(resumedAtStep(g, ns, name)).To(BeNumerically(">=", checkpoint))
}

// waitForReplacement waits until the one trainer pod of old's job is another pod
// than old that has started: Running, or already Succeeded (on a loaded machine the
// few steps left after a resume can end between two polls).
func waitForReplacement(t *testing.T, old *corev1.Pod) {
	t.Helper()
	ns, name := old.Namespace, old.Labels[controllers.LabelJobName]
	NewWithT(t).Eventually(func(g Gomega) {
		pollJob(g, ns, name)
		pods := jobPods(g, ns, name)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].UID).NotTo(Equal(old.UID), "pod %s is still the old one", pods[0].Name)
		g.Expect(pods[0].Status.Phase).To(BeElementOf(corev1.PodRunning, corev1.PodSucceeded), "pod %s", pods[0].Name)
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
}

// resumedAtStep is the step the trainer of the job's rank 0 pod says it resumed at,
// from its log; it fails when the trainer did not resume.
func resumedAtStep(g Gomega, ns, name string) int64 {
	lines := logLines(g, ns, name+"-trainer-0", controllers.ContainerTrainer, "resuming from checkpoint")
	g.ExpectWithOffset(1, lines).To(HaveLen(1), "the trainer's log says once that it resumes from a checkpoint")
	step, ok := lines[0]["step"].(float64)
	g.ExpectWithOffset(1, ok).To(BeTrue(), "the resume line has a step: %v", lines[0])
	return int64(step)
}

// setSuspend patches spec.runPolicy.suspend with kubectl.
func setSuspend(g Gomega, ns, name string, suspend bool) {
	mustKubectl(g, "patch", "espojob", name, "-n", ns, "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"runPolicy":{"suspend":%t}}}`, suspend))
}

// columns parses a kubectl table into one map per row, column header -> cell (empty
// cells included, cut at the headers' positions).
func columns(table string) []map[string]string {
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) < 2 {
		return nil
	}
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for k, start := range starts {
			end := len(header)
			if k+1 < len(starts) {
				end = starts[k+1]
			}
			if k+1 == len(starts) {
				end = max(end, len(line))
			}
			row[strings.TrimSpace(header[start:min(end, len(header))])] = strings.TrimSpace(line[min(start, len(line)):min(end, len(line))])
		}
		rows = append(rows, row)
	}
	return rows
}

// workerToken is the worker token of the job's Secret, as the API server has it.
func workerToken(g Gomega, ns, job string) string {
	encoded := mustKubectl(g, "get", "secret", job+"-worker-token", "-n", ns, "-o", "jsonpath={.data.token}")
	token, err := base64.StdEncoding.DecodeString(encoded)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, token).To(HaveLen(64))
	return string(token)
}

// callWorker calls the worker protocol's Info at addr as a stranger would, with
// bearer as its token ("" sends none), and returns the call's error.
func callWorker(addr, bearer string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if bearer != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
	}
	_, err = workerpb.NewWorkerClient(conn).Info(ctx, &workerpb.InfoRequest{})
	return err
}

// createEdited creates the job of the testdata manifest file, named name and changed
// by edit, in namespace ns.
func createEdited(t *testing.T, ns, file, name string, edit func(*trainingv1alpha1.ESPOJob)) {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, testdata(file)))
	g.Expect(err).NotTo(HaveOccurred())
	job := &trainingv1alpha1.ESPOJob{}
	g.Expect(yaml.UnmarshalStrict(raw, job)).To(Succeed())
	job.Name = name
	edit(job)
	doc, err := yaml.Marshal(job)
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), name+".yaml")
	g.Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
	mustKubectl(g, "create", "-n", ns, "-f", path)
}
