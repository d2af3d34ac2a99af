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

package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("ESPO_TEST_LOG") == "1" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	}
	testenv.Main(m, &env)
}

// Named timeouts of the integration tests.
const (
	// reconcileTimeout bounds what one or a few reconciles must achieve.
	reconcileTimeout = 20 * time.Second
	// quietPeriod is how long a settled job must stay unchanged (no hot loop).
	quietPeriod = 2 * time.Second
	poll        = 50 * time.Millisecond
)

// operatorUser is the user the controller runs as in these tests: it holds only the
// ClusterRole generated from the RBAC markers (config/rbac/role.yaml), so every test
// also checks that the markers grant enough.
const operatorUser = "espo-operator-under-test"

var installRBAC sync.Once

// operatorConfig returns a rest.Config that impersonates operatorUser, bound to the
// generated ClusterRole, and counts the write requests it sends into writes.
func operatorConfig(t testing.TB, writes *atomic.Int64) *rest.Config {
	t.Helper()
	installRBAC.Do(func() {
		if err := env.BindOperatorRole(operatorUser); err != nil {
			t.Fatal(err)
		}
	})
	cfg := env.ImpersonatedConfig(operatorUser)
	cfg.QPS, cfg.Burst = 400, 800
	if writes != nil {
		cfg.WrapTransport = countWrites(writes)
	}
	return cfg
}

// manager is a controller manager running in the test process.
type manager struct {
	stop func()
}

// startManager runs the ESPOJob controller, watching namespace ns only, until the
// test ends or Stop is called.
func startManager(t *testing.T, ns string, writes *atomic.Int64) *manager {
	t.Helper()
	return &manager{stop: env.StartManager(t, operatorConfig(t, writes), ns, nil)}
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "espo-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// setup gives a test a namespace and a controller watching it.
func setup(t *testing.T) (context.Context, Gomega, string) {
	ns := newNamespace(t)
	startManager(t, ns, nil)
	return context.Background(), NewWithT(t), ns
}

// getJob reads the job as the API server has it now.
func getJob(g Gomega, job *trainingv1alpha1.ESPOJob) *trainingv1alpha1.ESPOJob {
	got := &trainingv1alpha1.ESPOJob{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(job), got)).To(Succeed())
	return got
}

// phase is a function for Eventually: the job's phase now.
func phase(g Gomega, job *trainingv1alpha1.ESPOJob) func() trainingv1alpha1.JobPhase {
	return func() trainingv1alpha1.JobPhase { return getJob(g, job).Status.Phase }
}

// pods returns the job's trainer pods, by rank, that are not being deleted.
func pods(g Gomega, job *trainingv1alpha1.ESPOJob) []corev1.Pod {
	var list corev1.PodList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace),
		client.MatchingLabels{controllers.LabelJobName: job.Name})).To(Succeed())
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// podsOfAttempt is a function for Eventually: how many of the job's pods belong to
// restart attempt a.
func podsOfAttempt(g Gomega, job *trainingv1alpha1.ESPOJob, a int) func() int {
	return func() int {
		n := 0
		for _, p := range pods(g, job) {
			if p.Labels[controllers.LabelRestartAttempt] == fmt.Sprint(a) {
				n++
			}
		}
		return n
	}
}

// setPodStatus sets a pod's status through the status subresource, as kubelet would.
func setPodStatus(g Gomega, p *corev1.Pod, st corev1.PodStatus) {
	g.Eventually(func() error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status = st
		return env.Client.Status().Update(context.Background(), cur)
	}, reconcileTimeout, poll).Should(Succeed())
}

// running is the status of a pod whose containers run.
func running(p *corev1.Pod) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	return st
}

// exited is the status of a pod whose first container exited with code (the others
// killed), and that is Succeeded when code is 0, else Failed.
func exited(p *corev1.Pod, code int32, message string) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodFailed}
	if code == 0 {
		st.Phase = corev1.PodSucceeded
	}
	for i, c := range p.Spec.Containers {
		term := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}
		if i == 0 {
			term = &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: message}
			if code == 0 {
				term.Reason = "Completed"
			}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: term},
		})
	}
	return st
}

// runAll makes every pod of the job run, once the controller created them all and
// their companions (the job is Created), as kubelet starts a pod only once the
// ConfigMap and Secret it mounts exist.
func runAll(g Gomega, job *trainingv1alpha1.ESPOJob) {
	n := int(job.Spec.Trainer.Replicas)
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(n))
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).Should(HaveField("Status", metav1.ConditionTrue))
	for _, p := range pods(g, job) {
		setPodStatus(g, &p, running(&p))
	}
}

// pod returns the job's pod of a rank.
func pod(g Gomega, job *trainingv1alpha1.ESPOJob, rank int) *corev1.Pod {
	p := &corev1.Pod{}
	name := fmt.Sprintf("%s-trainer-%d", job.Name, rank)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: job.Namespace, Name: name}, p)).To(Succeed())
	return p
}

// reportOutcome writes status.training as the trainer does: server-side apply under
// the field manager espo-trainer, as the job's own trainer service account.
func reportOutcome(g Gomega, job *trainingv1alpha1.ESPOJob, training *trainingv1alpha1.TrainingStatus) {
	g.Expect(applyTraining(trainerClient(g, job), job, training)).To(Succeed())
}

// applyTraining applies status.training of job with c, as the trainer's reporter does.
func applyTraining(c client.Client, job *trainingv1alpha1.ESPOJob, training *trainingv1alpha1.TrainingStatus) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(training)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(trainingv1alpha1.GroupVersion.String())
	u.SetKind("ESPOJob")
	u.SetNamespace(job.Namespace)
	u.SetName(job.Name)
	if err := unstructured.SetNestedMap(u.Object, raw, "status", "training"); err != nil {
		return err
	}
	return c.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(trainingv1alpha1.TrainerFieldManager), client.ForceOwnership)
}

// trainerClient is a client that authenticates as the trainer identity with the
// token of the job's rank-0 pod.
func trainerClient(g Gomega, job *trainingv1alpha1.ESPOJob) client.Client {
	c, err := trainerPodClient(job.Namespace, job.Name+"-trainer-0")
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// trainerPodClient is a client that acts as the trainer identity of namespace with a
// token bound to the pod podName, as the API server authenticates a pod's projected
// token: the pod's name in the user's extra (podNameExtra), which the admission
// policy reads; an empty podName is a token bound to no pod.
func trainerPodClient(namespace, podName string) (client.Client, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + controllers.TrainerIdentityName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	if podName != "" {
		cfg.Impersonate.Extra = map[string][]string{podNameExtra: {podName}}
	}
	return client.New(cfg, client.Options{Scheme: env.Scheme})
}

// podNameExtra is the key of the user's extra in which the API server names the pod
// a service-account token is bound to.
const podNameExtra = "authentication.kubernetes.io/pod-name"

// countWrites wraps a transport to count the requests that are not reads and, when
// writeLog is set, to log them by method and kind, and the failed ones by path.
func countWrites(n *atomic.Int64) func(rt http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/events") {
				n.Add(1)
				if writeLog != nil {
					parts := strings.Split(req.URL.Path, "/")
					kind := parts[len(parts)-2]
					if parts[len(parts)-1] == "status" {
						kind = parts[len(parts)-3] + "/status"
					}
					if req.Method == http.MethodPost {
						kind = parts[len(parts)-1]
					}
					v, _ := writeLog.LoadOrStore(req.Method+" "+kind, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
			}
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode >= 400 && req.Method != http.MethodGet && writeLog != nil {
				v, _ := writeLog.LoadOrStore(fmt.Sprintf("%s %s %d", req.Method, req.URL.Path, resp.StatusCode), new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			return resp, err
		})
	}
}

var writeLog *sync.Map

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
