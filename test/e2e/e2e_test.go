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
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/test/mlflowtest"
	"github.com/espo-dev/espo-operator/test/testenv"
	"github.com/espo-dev/espo-operator/trainer"
)

// The README's sample: kubectl apply, kubectl wait, and kubectl get espojobs shows the
// accuracies of the trainer's final report.
func TestSampleJobSucceedsWithTheReportsAccuracies(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-sample")
	name := apply(g, ns, filepath.Join("config", "samples", "training_v1alpha1_espojob_minimal.yaml"))
	job := waitForSucceeded(t, ns, name)

	pods := jobPods(g, ns, name)
	g.Expect(pods).To(HaveLen(1))
	report := completedReport(g, &pods[0])

	rows := columns(mustKubectl(g, "get", "espojobs", "-n", ns))
	g.Expect(rows).To(HaveLen(1))
	g.Expect(rows[0]).To(HaveKeyWithValue("PHASE", "Succeeded"))
	for column, value := range map[string]float64{
		"GUI-ACC":    report.Test.GUITypeAccuracy,
		"INTENT-ACC": report.Test.IntentAccuracy,
		"REC-ACC":    report.Test.RecommendationAccuracy,
	} {
		g.Expect(rows[0][column]).NotTo(BeEmpty(), column)
		g.Expect(rows[0][column]).To(Equal(string(trainingv1alpha1.NewMetric(value))), "%s is the report's test accuracy", column)
	}
	g.Expect(job.Status.Training.Evaluation).To(Equal(report.Status.Evaluation))
	g.Expect(job.Status.Restarts).To(BeZero())

	// what reproduces the run, as kubectl shows it
	var prov trainingv1alpha1.RunProvenance
	g.Expect(json.Unmarshal([]byte(mustKubectl(g, "get", "espojob", name, "-n", ns, "-o", "jsonpath={.status.training.provenance}")),
		&prov)).To(Succeed())
	for part, digest := range map[string]string{"datasets": prov.Datasets, "model": prov.Model, "algorithm": prov.Algorithm, "rewards": prov.Rewards} {
		g.Expect(digest).To(MatchRegexp(`^[0-9a-f]{64}$`), "the %s digest", part)
	}
	g.Expect(prov.Seed).To(Equal(job.Spec.Algorithm.Seed))
	g.Expect(prov.TrainerVersion).To(MatchRegexp(`^\S+ \(commit \S+\)$`))
	g.Expect(prov.OperatorVersion).To(Equal(prov.TrainerVersion), "one binary runs the operator and the trainer here")
	g.Expect(prov.TrainerImage).To(Equal(pods[0].Spec.Containers[0].Image))
	g.Expect(prov.WorkerImage).NotTo(BeEmpty())
}

// The environment sample: a job whose policy lives through the simulated app runs to
// Succeeded through the operator and its trainer pod, with the test episodes of its
// held-out channel lived through and their accuracies in kubectl's columns.
func TestEnvironmentSampleLivesThroughTheSimulatedApp(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-environment")
	name := apply(g, ns, filepath.Join("config", "samples", "training_v1alpha1_espojob_environment.yaml"))
	job := waitForSucceeded(t, ns, name)

	pods := jobPods(g, ns, name)
	g.Expect(pods).To(HaveLen(1))
	report := completedReport(g, &pods[0])
	g.Expect(report.Test.Episodes).To(Equal(20), "the sample's test episodes, lived through")
	g.Expect(report.Test.Report.ByChannel).To(HaveLen(1))
	g.Expect(report.Test.Report.ByChannel).To(HaveKey("medicine"), "the held-out evaluation channel only")
	g.Expect(job.Status.Training.IntentMatch).To(Equal("slots"))
	rows := columns(mustKubectl(g, "get", "espojobs", "-n", ns))
	g.Expect(rows).To(HaveLen(1))
	g.Expect(rows[0]["REC-ACC"]).To(Equal(string(trainingv1alpha1.NewMetric(report.Test.RecommendationAccuracy))))
}

// completedReport reads the final report in the output folder of a job's trainer pod
// and expects it Completed, with a test evaluation.
func completedReport(g Gomega, pod *corev1.Pod) trainer.Report {
	b, err := os.ReadFile(filepath.Join(podDir(pod), "volumes", "output", "report.json"))
	g.Expect(err).NotTo(HaveOccurred(), "the trainer's report in its output folder")
	var report trainer.Report
	g.Expect(json.Unmarshal(b, &report)).To(Succeed())
	g.Expect(report.Outcome).To(Equal(trainingv1alpha1.OutcomeCompleted))
	g.Expect(report.Test).NotTo(BeNil())
	return report
}

// The API server rejects an invalid job, and kubectl says which field is wrong.
func TestInvalidManifestIsRejectedWithTheFieldsMessage(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "e2e-invalid")
	_, err := kubectl("apply", "-n", ns, "-f", testdata("invalid-group-size.yaml"))
	g := NewWithT(t)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.algorithm.groupSize in body should be greater than or equal to 2"))
	_, err = kubectl("get", "espojob", "e2e-invalid", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("NotFound")))
}

// A manager killed mid-training and started again picks the job up: the pod keeps
// running (the same one, not a duplicate), no restart is counted, the job finishes.
func TestManagerRestartMidTrainingKeepsTheGang(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-manager-restart")
	name := apply(g, ns, testdata("job-small.yaml"))
	waitForTraining(t, ns, name)
	before := runningPods(t, ns, name, 1)

	manager.kill()
	step := training(getJob(g, ns, name)).Step
	g.Eventually(func(g Gomega) int64 { return training(getJob(g, ns, name)).Step }).
		WithTimeout(trainingStarts).WithPolling(poll).Should(BeNumerically(">", step), "the trainer goes on without the manager")
	g.Expect(manager.start()).To(Succeed())

	waitForSucceeded(t, ns, name)
	after := jobPods(g, ns, name)
	g.Expect(after).To(HaveLen(1))
	g.Expect(after[0].UID).To(Equal(before[0].UID), "the pod the first manager created ran the job")
	g.Expect(getJob(g, ns, name).Status.Restarts).To(BeZero())
}

// A trainer killed after a checkpoint: the gang restarts and the new trainer resumes
// from the checkpoint, not from step 0.
func TestKilledTrainerResumesFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-trainer-kill")
	name, pod, checkpoint := checkpointedJob(t, ns)

	pid := containerPID(&pod, controllers.ContainerTrainer)
	g.Expect(pid).To(BeNumerically(">", 0))
	g.Expect(syscall.Kill(-pid, syscall.SIGKILL)).To(Succeed())

	g.Eventually(func(g Gomega) {
		job := getJob(g, ns, name)
		g.Expect(job.Status.Restarts).To(Equal(int32(1)))
		g.Expect(training(job).Step).To(BeNumerically(">=", checkpoint), "status.training.step never goes back before the checkpoint")
	}).WithTimeout(podsChange).WithPolling(poll).Should(Succeed())
	finishesResumed(t, &pod, checkpoint, 1)
}

// Suspending a job deletes its pods and stops its processes, the trainer checkpointing
// the step it stopped at; resuming recreates them and training continues from there.
func TestSuspendAndResumeContinueFromTheCheckpoint(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-suspend")
	name, pod, checkpoint := checkpointedJob(t, ns)
	pid := containerPID(&pod, controllers.ContainerTrainer)

	setSuspend(g, ns, name, true)
	g.Eventually(func(g Gomega) {
		g.Expect(jobPods(g, ns, name)).To(BeEmpty())
		g.Expect(getJob(g, ns, name).Status.Phase).To(Equal(trainingv1alpha1.PhaseSuspended))
	}).WithTimeout(podsChange).WithPolling(poll).Should(Succeed())
	g.Expect(alive(pid)).To(BeFalse(), "the trainer process stopped")
	stopped := training(getJob(g, ns, name))
	g.Expect(stopped.Message).To(ContainSubstring("stopped on SIGTERM after step"))
	g.Expect(stopped.LastCheckpoint.Step).To(Equal(stopped.Step), "the trainer checkpointed the step it stopped at")
	checkpoint = max(checkpoint, stopped.LastCheckpoint.Step)

	setSuspend(g, ns, name, false)
	finishesResumed(t, &pod, checkpoint, 0)
}

// kubectl delete espojob removes every child (pods, ConfigMap, Service, trainer
// identity) and stops every process.
func TestDeleteRemovesEveryChildAndProcess(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-delete")
	name := apply(g, ns, testdata("job-two-replicas.yaml"))
	pods := runningPods(t, ns, name, 2)
	var pids []int
	for i := range pods {
		for _, c := range pods[i].Spec.Containers {
			pids = append(pids, containerPID(&pods[i], c.Name))
		}
	}
	g.Expect(pids).To(HaveLen(2))
	g.Expect(pids).NotTo(ContainElement(0))

	mustKubectl(g, "delete", "espojob", name, "-n", ns, "--timeout=60s")
	selector := controllers.LabelJobName + "=" + name
	g.Eventually(func(g Gomega) string {
		return mustKubectl(g, "get", "pods,configmaps,services,serviceaccounts,roles,rolebindings",
			"-n", ns, "-l", selector, "-o", "name")
	}).WithTimeout(podsChange).WithPolling(poll).Should(BeEmpty())
	g.Eventually(func() []int {
		var running []int
		for _, pid := range pids {
			if alive(pid) {
				running = append(running, pid)
			}
		}
		return running
	}).WithTimeout(podsChange).WithPolling(poll).Should(BeEmpty())
}

// With two replicas rank 0 drives its own CPU worker and the worker of rank 1, which
// it reaches at rank 1's pod address (a loopback address of its own).
func TestTwoReplicasTrainOverThePodNetwork(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-two-replicas")
	name := apply(g, ns, testdata("job-two-replicas.yaml"))
	pods := runningPods(t, ns, name, 2)
	ips := map[string]string{}
	for _, p := range pods {
		ip := net.ParseIP(p.Status.PodIP)
		g.Expect(ip).NotTo(BeNil(), "pod %s has an address", p.Name)
		g.Expect(ip.IsLoopback()).To(BeTrue())
		ips[p.Name] = p.Status.PodIP
	}
	trainerPod, workerPod := name+"-trainer-0", name+"-trainer-1"
	g.Expect(ips[trainerPod]).NotTo(Equal(ips[workerPod]))
	var ready []map[string]any
	g.Eventually(func(g Gomega) {
		ready = logLines(g, ns, trainerPod, controllers.ContainerTrainer, "workers ready")
		g.Expect(ready).To(HaveLen(1))
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	g.Expect(ready[0]).To(HaveKeyWithValue("workers", BeNumerically("==", 2)), "its own worker and rank 1's")
	// The worker's pod is deleted once the job succeeds: read its log while it trains.
	workerLog := mustKubectl(g, "logs", "-n", ns, workerPod, "-c", controllers.ContainerWorker)
	g.Expect(workerLog).To(ContainSubstring("espo worker: serving on " + ips[workerPod] + ":50051"))

	// A stranger that reaches the worker's port, without the job's token or with
	// another one, is refused; the trainer, which has it, trains.
	token := workerToken(g, ns, name)
	for _, bearer := range []string{"", strings.Repeat("0", len(token))} {
		g.Expect(status.Code(callWorker(net.JoinHostPort(ips[workerPod], "50051"), bearer))).
			To(Equal(codes.Unauthenticated), "a call with the token %q", bearer)
	}
	logs := workerLog + mustKubectl(g, "logs", "-n", ns, trainerPod, "-c", controllers.ContainerTrainer)

	job := waitForSucceeded(t, ns, name)
	g.Expect(job.Status.Restarts).To(BeZero())
	logs += testenv.TailFile(manager.log, 1<<20)
	for what, text := range map[string]string{
		"the pods' and the manager's logs": logs,
		"the job":                          mustKubectl(g, "get", "espojob", name, "-n", ns, "-o", "yaml"),
		"the events":                       mustKubectl(g, "get", "events", "-n", ns, "-o", "yaml"),
		"the ConfigMaps":                   mustKubectl(g, "get", "configmaps", "-n", ns, "-o", "yaml"),
	} {
		g.Expect(text).NotTo(ContainSubstring(token), "the worker token is in %s", what)
	}
}

// Services with credentials from Secrets: the trainer, a process of the local node,
// reaches an intent embedding service of this test with the API key, and a real
// MLflow server (behind a proxy that wants the token) with the token, that the
// kubelet took from the Secrets, and the job succeeds. MLflow holds the job's run,
// FINISHED, with every step's loss once; the status names the run and its
// TrackingDegraded condition is False; kubectl get -o wide shows the last step's
// tokens per second and kubectl describe where its time went.
func TestServicesWithCredentialsFromSecrets(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	const apiKey = "e2e-key-5f3a"
	var requests, texts, unauthorized atomic.Int64
	hash := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+apiKey {
			unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var resp struct {
			Data []item `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float64, hash.Dim())
			hash.Embed(v, text)
			resp.Data = append(resp.Data, item{i, v})
		}
		requests.Add(1)
		texts.Add(int64(len(req.Input)))
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)

	const token = "e2e-mlflow-token-9c1d"
	mlflowServer := mlflowtest.Shared(t)
	target, err := url.Parse(mlflowServer.URI())
	g.Expect(err).NotTo(HaveOccurred())
	forward := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int64
	tracker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			refused.Add(1)
			http.Error(w, `{"error_code": "UNAUTHENTICATED", "message": "no token"}`, http.StatusUnauthorized)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(tracker.Close)

	ns := newNamespace(t, "e2e-embedder")
	mustKubectl(g, "create", "secret", "generic", "embeddings", "-n", ns, "--from-literal=api-key="+apiKey)
	mustKubectl(g, "create", "secret", "generic", "mlflow-credentials", "-n", ns, "--from-literal=token="+token)
	job := builders.MakeESPOJob("e2e-embedder", ns).
		Embedder(srv.URL+"/v1/embeddings").EmbedderAPIKey("embeddings", "api-key").
		MLflow(tracker.URL, ns, "mlflow-credentials").Obj()
	job.Spec.Algorithm.Epochs = 1
	// The generated users carry preferences, which auto would judge slot by slot.
	job.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchEmbedding
	manifest, err := yaml.Marshal(job)
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "job.yaml")
	g.Expect(os.WriteFile(path, manifest, 0o600)).To(Succeed())
	name := apply(g, ns, path)

	done := waitForSucceeded(t, ns, name)
	g.Expect(done.Status.Restarts).To(BeZero())
	g.Expect(unauthorized.Load()).To(BeZero(), "every request carried the Secret's key")
	g.Expect(requests.Load()).To(BeNumerically(">", 1), "the requirements, then the batches' intents")
	g.Expect(texts.Load()).To(BeNumerically(">", 0))
	out := mustKubectl(g, "get", "configmap", name+"-config", "-n", ns, "-o", "yaml")
	g.Expect(out).NotTo(ContainSubstring(apiKey), "the key stays in its Secret")
	g.Expect(out).NotTo(ContainSubstring(token), "the token stays in its Secret")

	g.Expect(refused.Load()).To(BeZero(), "every request to MLflow carried the Secret's token")
	run, ok := mlflowServer.FindRun(t, ns, string(done.UID), "train/loss")
	g.Expect(ok).To(BeTrue(), "MLflow has the job's run")
	g.Expect(run.Status).To(Equal("FINISHED"))
	var steps []int64
	for _, m := range run.History["train/loss"] {
		steps = append(steps, m.Step)
	}
	want := make([]int64, done.Status.Training.Step)
	for i := range want {
		want[i] = int64(i + 1)
	}
	g.Expect(steps).To(Equal(want), "every step's loss once")
	tr := done.Status.Training.Tracking
	g.Expect(tr).NotTo(BeNil())
	g.Expect(tr.MLflowRunID).To(Equal(run.ID))
	g.Expect(tr.Degraded).To(BeEmpty())
	cond := meta.FindStatusCondition(done.Status.Conditions, trainingv1alpha1.ConditionTrackingDegraded)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))

	last := done.Status.Training.LastStep
	g.Expect(last).NotTo(BeNil())
	g.Expect(last.Step).To(Equal(done.Status.Training.Step))
	g.Expect(last.Phases).NotTo(BeEmpty())
	rows := columns(mustKubectl(g, "get", "espojobs", "-n", ns, "-o", "wide"))
	g.Expect(rows).To(HaveLen(1))
	g.Expect(rows[0]).To(HaveKeyWithValue("TOKENS/S", string(last.TokensPerSecond)))
	g.Expect(mustKubectl(g, "describe", "espojob", name, "-n", ns)).To(ContainSubstring("Dominant:"))
}

// Suspending a two-pod gang mid-training: both pods get SIGTERM at once; the trainer
// finishes its step with rank 1's worker, which serves until released, checkpoints
// that step and says so; the resumed gang continues from it and succeeds.
func TestSuspendingAGangCheckpointsTheStepInFlight(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-gang-drain")
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	name := apply(g, ns, testdata("job-two-replicas-checkpoint.yaml"))
	runningPods(t, ns, name, 2)
	waitForTraining(t, ns, name)

	setSuspend(g, ns, name, true)
	g.Eventually(func(g Gomega) {
		g.Expect(jobPods(g, ns, name)).To(BeEmpty())
		g.Expect(getJob(g, ns, name).Status.Phase).To(Equal(trainingv1alpha1.PhaseSuspended))
	}).WithTimeout(podsChange).WithPolling(poll).Should(Succeed())
	stopped := training(getJob(g, ns, name))
	g.Expect(stopped.Message).To(ContainSubstring("stopped on SIGTERM after step"))
	g.Expect(stopped.Message).NotTo(ContainSubstring("interrupted"), "rank 1's worker served the step in flight")
	g.Expect(stopped.Outcome).To(BeEmpty())
	g.Expect(stopped.LastCheckpoint).NotTo(BeNil())
	g.Expect(stopped.LastCheckpoint.Step).To(Equal(stopped.Step), "the trainer checkpointed the step it stopped at")

	setSuspend(g, ns, name, false)
	job := waitForSucceeded(t, ns, name)
	g.Expect(job.Status.Restarts).To(BeZero())
	g.Expect(resumedAtStep(g, ns, name)).To(Equal(stopped.Step))
}

// The user: a job trained to the end with checkpoints, deleted, and created
// again under the same name with another algorithm (epochs 1) on the same checkpoint
// path. The new job refuses the old job's checkpoint: it trains nothing and fails at
// once, without a restart, with a condition that names the path, the checkpoint and
// what differs.
func TestARecreatedJobRefusesTheOldJobsCheckpoints(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-recreate")
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	name := apply(g, ns, testdata("job-recreated.yaml"))
	old := waitForSucceeded(t, ns, name)
	written := training(old).LastCheckpoint
	g.Expect(written).NotTo(BeNil())
	mustKubectl(g, "delete", "espojob", name, "-n", ns, "--timeout=60s")

	raw, err := os.ReadFile(filepath.Join(repoRoot, testdata("job-recreated.yaml")))
	g.Expect(err).NotTo(HaveOccurred())
	changed := strings.Replace(string(raw), "epochs: 2", "epochs: 1", 1)
	g.Expect(changed).NotTo(Equal(string(raw)))
	path := filepath.Join(t.TempDir(), "job.yaml")
	g.Expect(os.WriteFile(path, []byte(changed), 0o600)).To(Succeed())
	g.Expect(apply(g, ns, path)).To(Equal(name))

	var failed *metav1.Condition
	g.Eventually(func(g Gomega) {
		recreated := getJob(g, ns, name)
		g.Expect(recreated.UID).NotTo(Equal(old.UID))
		g.Expect(recreated.Status.Phase).To(Equal(trainingv1alpha1.PhaseFailed))
		failed = meta.FindStatusCondition(recreated.Status.Conditions, trainingv1alpha1.ConditionFailed)
		g.Expect(recreated.Status.Restarts).To(BeZero(), "a new pod would refuse the same checkpoint")
		g.Expect(training(recreated).Step).To(BeZero(), "the recreated job trains nothing")
	}).WithTimeout(jobTimeout).WithPolling(poll).Should(Succeed())
	g.Expect(failed).NotTo(BeNil())
	g.Expect(failed.Reason).To(Equal(trainingv1alpha1.ReasonCheckpointMismatch))
	for _, says := range []string{
		`spec.checkpoint (claim e2e-checkpoints, path "recreated")`,
		// The trainer names the folder it mounts, /checkpoints/<path> (on the process
		// node under the pod's root).
		"/checkpoints/recreated/" + filepath.Base(written.Path) + " belongs to another run",
		fmt.Sprintf("job %s/%s uid %s", ns, name, old.UID),
		"the spec differs in algorithm. ",
		"spec.model.initialCheckpoint",
	} {
		g.Expect(failed.Message).To(ContainSubstring(says))
	}
	mustKubectl(g, "wait", "-n", ns, "--for=condition=Failed", "espojob/"+name, "--timeout=30s")
}

// Kueue (in the test process, the manager with --kueue) admits a low-priority job of
// a queue with quota for one pod; a high-priority job preempts it mid-training: the
// job is suspended and its trainer checkpoints the step in flight; the urgent job
// runs and succeeds; the preempted job is admitted again and resumes from that step.
func TestKueuePreemptionCheckpointsAndResumes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-kueue")
	apply(g, ns, testdata("kueue-queue.yaml"))
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	name := apply(g, ns, testdata("job-queued-checkpoint.yaml"))
	pod := runningPods(t, ns, name, 1)[0]
	waitForTraining(t, ns, name)

	urgent := apply(g, ns, testdata("job-queued-urgent.yaml"))
	g.Eventually(func(g Gomega) {
		g.Expect(jobPods(g, ns, name)).To(BeEmpty())
		g.Expect(getJob(g, ns, name).Status.Phase).To(Equal(trainingv1alpha1.PhaseSuspended))
	}).WithTimeout(podsChange).WithPolling(poll).Should(Succeed())
	stopped := training(getJob(g, ns, name))
	g.Expect(stopped.Message).To(ContainSubstring("stopped on SIGTERM after step"))
	g.Expect(stopped.LastCheckpoint).NotTo(BeNil())
	g.Expect(stopped.LastCheckpoint.Step).To(Equal(stopped.Step), "the trainer checkpointed the step it stopped at")

	waitForSucceeded(t, ns, urgent)
	finishesResumed(t, &pod, stopped.Step, 0)
	t.Logf("preempted after step %d, resumed at step %d: %d steps lost", stopped.Step, resumedAtStep(g, ns, name), stopped.Step-resumedAtStep(g, ns, name))
}
