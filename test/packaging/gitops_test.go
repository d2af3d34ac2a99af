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

package packaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/trainer/kubereporter"
)

// Timeouts of the GitOps test.
const (
	stepTimeout = 20 * time.Second
	poll        = 50 * time.Millisecond
	// gitopsManager is the field manager of the "GitOps tool" applying the job.
	gitopsManager = "argocd-controller"
)

// TestGitOpsNoDrift runs a job through suspend, resume, a pod failure and a restart to
// success, with the real controller running as the service account that config/default
// installs (its RBAC applied for real, leader election on), and the job applied the
// way Argo CD and Flux apply it: server-side apply under their own field manager. It
// checks that after every status change the stored spec is exactly what the last
// apply stored (defaults included) and that the controller owns no spec field, so a
// GitOps tool sees no drift; that the Argo CD health check follows every phase; and
// that `kubectl wait` works for the condition and for the phase.
func TestGitOpsNoDrift(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "gitops"
	ensureNamespace(t, ns, nil)
	startOperator(t, ns)

	sample := readSample(t, "training_v1alpha1_espojob_minimal.yaml")
	sample.SetNamespace(ns)
	key := client.ObjectKey{Namespace: ns, Name: sample.GetName()}

	// The applied spec, as the API server stored it with its defaults.
	var applied trainingv1alpha1.ESPOJobSpec
	apply := func(suspend bool) {
		t.Helper()
		u := sample.DeepCopy()
		g.Expect(unstructured.SetNestedField(u.Object, suspend, "spec", "runPolicy", "suspend")).To(Succeed())
		g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(gitopsManager))).To(Succeed())
		applied = *getJob(g, key).Spec.DeepCopy()
	}
	// noDrift checks the stored spec against the applied one, and who owns spec fields.
	noDrift := func() {
		t.Helper()
		job := getJob(g, key)
		if !equality.Semantic.DeepEqual(job.Spec, applied) {
			t.Errorf("the spec changed after the apply (-applied +stored):\n%s", diff.Diff(applied, job.Spec))
		}
		for _, mf := range job.ManagedFields {
			if mf.Manager != gitopsManager && mf.Subresource == "" {
				t.Errorf("field manager %s (%s) owns fields of the object itself, not only of its status: %s", mf.Manager, mf.Operation, mf.FieldsV1.GetRawString())
			}
		}
		checkHealth(t, job)
	}
	waitPhase := func(p trainingv1alpha1.JobPhase) *trainingv1alpha1.ESPOJob {
		t.Helper()
		g.Eventually(func() trainingv1alpha1.JobPhase { return getJob(g, key).Status.Phase }, stepTimeout, poll).Should(Equal(p))
		noDrift()
		return getJob(g, key)
	}

	// Synced suspended: no pods.
	apply(true)
	waitPhase(trainingv1alpha1.PhaseSuspended)

	// The next sync resumes it.
	apply(false)
	waitPhase(trainingv1alpha1.PhasePending)
	p0 := trainerPod(g, key, 0)
	setPodStatus(g, p0, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}})
	waitPhase(trainingv1alpha1.PhaseRunning)

	// The trainer reports progress the way it does in a pod.
	reporter := &kubereporter.Reporter{Client: env.Client, Job: trainingv1alpha1.JobRef{Namespace: ns, Name: key.Name}}
	g.Expect(reporter.Report(ctx, &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 1, Step: 10, TotalSteps: 40})).To(Succeed())
	g.Eventually(func() int64 { return getJob(g, key).Status.Training.Step }, stepTimeout, poll).Should(Equal(int64(10)))
	noDrift()

	// The pod fails: the gang restarts, and the next attempt's pod runs.
	setPodStatus(g, p0, exited(1, "worker lost"))
	g.Eventually(func() int32 { return getJob(g, key).Status.Restarts }, stepTimeout, poll).Should(Equal(int32(1)))
	checkHealth(t, getJob(g, key))
	noDrift()
	g.Eventually(func() string {
		return trainerPod(g, key, 0).Labels[controllers.LabelRestartAttempt]
	}, stepTimeout, poll).Should(Equal("1"))
	p0 = trainerPod(g, key, 0)
	setPodStatus(g, p0, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}})
	waitPhase(trainingv1alpha1.PhaseRunning)

	// kubectl wait, started before the job finishes, returns once it has.
	kubeconfig := writeKubeconfig(t, env.Config)
	waitCondition := startKubectl(t, kubeconfig, "wait", "-n", ns, "--for=condition=Succeeded", "espojob/"+key.Name, "--timeout=60s")

	g.Expect(reporter.Report(ctx, &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageEval, Epoch: 6, Step: 40, TotalSteps: 40,
		Outcome: trainingv1alpha1.OutcomeCompleted, Message: "trained 6 epochs"})).To(Succeed())
	setPodStatus(g, p0, exited(0, ""))
	waitPhase(trainingv1alpha1.PhaseSucceeded)
	job := getJob(g, key)
	if job.Generation != 2 {
		t.Errorf("generation %d after two applies: something else changed the spec", job.Generation)
	}
	owners := map[string]string{}
	for _, mf := range job.ManagedFields {
		owners[mf.Manager] = mf.Subresource
	}
	if owners[controllers.FieldManager] != "status" || owners[trainingv1alpha1.TrainerFieldManager] != "status" {
		t.Errorf("field managers %v: want the controller and the trainer on the status subresource", owners)
	}

	if out, err := waitCondition(); err != nil {
		t.Errorf("kubectl wait --for=condition=Succeeded: %v\n%s", err, out)
	}
	out, err := startKubectl(t, kubeconfig, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Succeeded", "espojob/"+key.Name, "--timeout=30s")()
	if err != nil {
		t.Errorf("kubectl wait --for=jsonpath={.status.phase}=Succeeded: %v\n%s", err, out)
	}
}

// startOperator applies the ServiceAccount and RBAC of config/default for real and
// runs the ESPOJob controller in this process as that service account, with leader
// election in the operator's namespace, watching namespace ns. It returns what stops
// the controller (the test's end does too) and the operator's ServiceAccount.
func startOperator(t *testing.T, ns string) (stop func(), operator client.ObjectKey) {
	t.Helper()
	var sa *unstructured.Unstructured
	var identity []*unstructured.Unstructured
	for _, o := range kustomize(t, repoPath("config", "default")) {
		switch o.GetKind() {
		case "Namespace":
			ensureNamespace(t, o.GetName(), o.GetLabels())
		case "ServiceAccount":
			sa = o
			identity = append(identity, o)
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			identity = append(identity, o)
		}
	}
	for _, o := range identity {
		err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner("packaging-test"), client.ForceOwnership)
		if err != nil {
			t.Fatalf("applying %s: %v", describe(o), err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", sa.GetNamespace(), sa.GetName())}

	stop = env.StartManager(t, cfg, ns, func(o *ctrl.Options, _ *controllers.Options) {
		controllers.ElectLeader(o, sa.GetNamespace())
	})
	return stop, client.ObjectKeyFromObject(sa)
}

// readSample reads a sample of config/samples.
func readSample(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(repoPath("config", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, raw)[0]
}

// getJob reads a job as the API server has it.
func getJob(g Gomega, key client.ObjectKey) *trainingv1alpha1.ESPOJob {
	job := &trainingv1alpha1.ESPOJob{}
	g.Expect(env.Client.Get(context.Background(), key, job)).To(Succeed())
	return job
}

// trainerPod waits for the job's pod of a rank and returns it.
func trainerPod(g Gomega, key client.ObjectKey, rank int) *corev1.Pod {
	p := &corev1.Pod{}
	name := client.ObjectKey{Namespace: key.Namespace, Name: fmt.Sprintf("%s-trainer-%d", key.Name, rank)}
	g.Eventually(func() error {
		if err := env.Client.Get(context.Background(), name, p); err != nil {
			return err
		}
		if p.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s is being deleted", name)
		}
		return nil
	}, stepTimeout, poll).Should(Succeed())
	return p
}

// setPodStatus sets a pod's status, as kubelet would.
func setPodStatus(g Gomega, p *corev1.Pod, st corev1.PodStatus) {
	g.Eventually(func() error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status = st
		for _, c := range cur.Spec.Containers {
			if st.ContainerStatuses == nil && st.Phase == corev1.PodRunning {
				cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}})
			}
		}
		return env.Client.Status().Update(context.Background(), cur)
	}, stepTimeout, poll).Should(Succeed())
}

// exited is the status of a pod whose trainer container exited with code.
func exited(code int32, message string) corev1.PodStatus {
	phase := corev1.PodFailed
	if code == 0 {
		phase = corev1.PodSucceeded
	}
	return corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name:  controllers.ContainerTrainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message}},
	}}}
}

// writeKubeconfig writes a kubeconfig for cfg (the test API server's administrator).
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startKubectl starts kubectl with a kubeconfig and returns a function that waits for
// it and returns its output.
func startKubectl(t *testing.T, kubeconfig string, args ...string) func() ([]byte, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() ([]byte, error) {
		err := cmd.Wait()
		return out.Bytes(), err
	}
}

// lockedBuffer is an output buffer safe for a process's stdout and stderr together.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write appends p.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Bytes returns what was written.
func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}
