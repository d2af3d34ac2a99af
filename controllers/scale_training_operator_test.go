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
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The side-by-side benchmark runs Kubeflow training-operator, built elsewhere, on the
// scale benchmark's control plane and load. Its environment:
//
//	ESPO_TRAINING_OPERATOR_BINARY  the training-operator.v1 binary (v1.9.0 measured)
//	ESPO_TRAINING_OPERATOR_CRDS    the folder of its CRDs (manifests/base/crds of its module)
//	ESPO_TRAINING_OPERATOR_FLAGS   more flags, space-separated (--controller-threads=16, say)
const (
	trainingOperatorNamespace = "kubeflow"
	// trainingOperatorJobLabel names a PyTorchJob's pods' job.
	trainingOperatorJobLabel = "training.kubeflow.org/job-name"
	// trainingOperatorCertSecret is the Secret the operator keeps its webhook
	// certificates in.
	trainingOperatorCertSecret = "training-operator-webhook-cert"
)

// BenchmarkScaleTrainingOperator is BenchmarkScale's load, 500 jobs of two pods (a
// PyTorchJob of one Master and one Worker), for Kubeflow training-operator: it
// reports the seconds until all 1,000 pods exist, the first pod's latencies, and the
// operator's peak and anonymous RSS and CPU time until then. It skips unless
// ESPO_TRAINING_OPERATOR_BINARY is set. Run it alone:
//
//	ESPO_TRAINING_OPERATOR_BINARY=... ESPO_TRAINING_OPERATOR_CRDS=... \
//	  go test ./controllers/ -bench ScaleTrainingOperator -benchtime=1x -run '^$'
func BenchmarkScaleTrainingOperator(b *testing.B) {
	bin := os.Getenv("ESPO_TRAINING_OPERATOR_BINARY")
	if bin == "" {
		b.Skip("set ESPO_TRAINING_OPERATOR_BINARY (and ESPO_TRAINING_OPERATOR_CRDS) to measure training-operator side by side")
	}
	g := NewWithT(b)
	installTrainingOperatorPrerequisites(b, g)
	var sum scaleFigures
	b.ResetTimer()
	for range b.N {
		sum.add(runScaleTrainingOperator(b, g, bin))
	}
	b.StopTimer()
	sum.reportShared(b, "operator-cpu-s")
}

// installTrainingOperatorPrerequisites installs the PyTorchJob CRD and what the
// operator's certificate rotation needs before it starts its controllers: its
// namespace, the Secret it keeps its certificates in, and its validating webhook
// configuration (with no webhooks: the test API server cannot reach the operator's
// Service, and the benchmark measures the controller, not the webhook).
func installTrainingOperatorPrerequisites(b *testing.B, g Gomega) {
	dir := os.Getenv("ESPO_TRAINING_OPERATOR_CRDS")
	if dir == "" {
		b.Fatal("ESPO_TRAINING_OPERATOR_CRDS is not set")
	}
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir + "/kubeflow.org_pytorchjobs.yaml"}})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: trainingOperatorCertSecret, Namespace: trainingOperatorNamespace}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validator.training-operator.kubeflow.org"}},
	} {
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, obj))).To(Succeed())
	}
}

// runScaleTrainingOperator runs the load once against a training-operator process of
// its own, as a cluster administrator, with PyTorchJobs only.
func runScaleTrainingOperator(b *testing.B, g Gomega, bin string) scaleFigures {
	ctx := context.Background()
	ns := newNamespace(b)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	metricsAddr := freeLocalAddr(b)
	args := append([]string{"--kubeconfig", writeKubeconfig(b, b.TempDir(), ""), "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--webhook-server-port", strings.TrimPrefix(freeLocalAddr(b), "127.0.0.1:"),
		"--enable-scheme", "pytorchjob"}, strings.Fields(os.Getenv("ESPO_TRAINING_OPERATOR_FLAGS"))...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MY_POD_NAMESPACE="+trainingOperatorNamespace)
	mountCtx, stopMount := context.WithCancel(ctx)
	defer stopMount()
	go mountCertSecret(mountCtx, c)
	op := startProcess(b, cmd, metricsAddr, "Starting workers\t{\"controller\": \"pytorchjob-controller\"")
	cpuBefore := op.cpuSeconds(g)
	pods := watchFirstPodsBy(ctx, g, c, ns, scaleJobs*scaleReplicas, trainingOperatorJobLabel)

	created := make([]time.Time, scaleJobs)
	start := time.Now()
	workqueue.ParallelizeUntil(ctx, scaleCreators, scaleJobs, func(i int) {
		g.Expect(c.Create(ctx, pytorchJob(scaleJobName(i), ns))).To(Succeed())
		created[i] = time.Now()
	})
	select {
	case <-pods.all:
	case <-time.After(scaleTimeout):
		b.Fatalf("%d of %d pods exist after %v", pods.count(), scaleJobs*scaleReplicas, scaleTimeout)
	}
	latencies := pods.firstPodLatencies(created)
	f := scaleFigures{
		allPods:         pods.allAt.Sub(start).Seconds(),
		firstPodOfBurst: pods.firstSeen().Sub(start).Seconds(),
		firstPodMedian:  latencies[len(latencies)/2].Seconds(),
		firstPodMax:     latencies[len(latencies)-1].Seconds(),
		peakRSS:         op.peakRSS(g),
		peakAnon:        op.peakAnon(),
		cpu:             op.cpuSeconds(g) - cpuBefore,
	}
	b.Logf("training-operator, %d PyTorchJobs x %d pods: all pods after %.2f s; the burst's first pod %.3f s after its first create; "+
		"first pod after %.3f s (median), %.3f s (max); %.1f s of its CPU; peak RSS %.0f MiB (anonymous at most %.0f MiB)",
		scaleJobs, scaleReplicas, f.allPods, f.firstPodOfBurst, f.firstPodMedian, f.firstPodMax, f.cpu, f.peakRSS, f.peakAnon)
	return f
}

// pytorchJob is a PyTorchJob of one Master and one Worker.
func pytorchJob(name, ns string) *unstructured.Unstructured {
	replica := func() map[string]any {
		return map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure", "template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "pytorch", "image": "pytorch:dev"}}}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replica(), "Worker": replica()}},
	}}
}

// trainingOperatorCertDir is where training-operator v1.9.0 waits for its webhook
// certificates: the folder its Deployment mounts their Secret on.
const trainingOperatorCertDir = "/tmp/k8s-webhook-server/serving-certs"

// mountCertSecret does what the kubelet's Secret volume does for the operator's pod:
// once the operator's certificate rotation has written its certificates into their
// Secret, it writes them into trainingOperatorCertDir (the operator starts its
// controllers only when they are there).
func mountCertSecret(ctx context.Context, c client.Client) {
	for ctx.Err() == nil {
		var s corev1.Secret
		key := client.ObjectKey{Namespace: trainingOperatorNamespace, Name: trainingOperatorCertSecret}
		if c.Get(ctx, key, &s) == nil && len(s.Data["tls.crt"]) > 0 {
			if os.MkdirAll(trainingOperatorCertDir, 0o700) == nil {
				for name, data := range s.Data {
					_ = os.WriteFile(trainingOperatorCertDir+"/"+name, data, 0o600)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
