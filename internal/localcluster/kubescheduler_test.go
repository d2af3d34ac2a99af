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

package localcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/espo-dev/espo-operator/internal/controlplane"
)

// gangHoldPeriod is how long half a gang must stay unbound.
const gangHoldPeriod = 3 * time.Second

// TestServeWithKubeSchedulerPlacesGangsWhole: "espo local serve --scheduler=kube" runs
// a real kube-scheduler (built by hack/setup-envtest.sh like test/gang's) against an
// API server that serves PodGroups, and no built-in scheduler: the pods of a gang of
// two are bound to the process node only once both exist, and run; kube-scheduler is
// recorded with the control plane for "down", and it stops with serve.
func TestServeWithKubeSchedulerPlacesGangsWhole(t *testing.T) {
	g := NewWithT(t)
	state := t.TempDir()
	l := &Local{StateDir: state, Scheduler: SchedulerKube, Memory: "4Gi", CPU: "2", Clock: clock.RealClock{}, Out: io.Discard,
		Assets: func(string) (string, error) { return controlplane.AssetsWithKubeScheduler(repoRoot) }}
	ctx, cancel := context.WithCancel(context.Background())
	var served error
	done := make(chan struct{})
	go func() { served = l.Serve(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done // its control plane and kube-scheduler stopped
		if t.Failed() {
			t.Logf("kube-scheduler's log:\n%s", tailFile(filepath.Join(state, "kube-scheduler.log"), 40))
		}
	})
	g.Eventually(func() error {
		select {
		case <-done:
			return StopTrying("serve ended before it was ready").Wrap(served)
		default:
		}
		_, err := os.Stat(l.path(fileReady))
		return err
	}, clusterStartTimeout, pollEvery).Should(Succeed())

	scheduler := listedProc(g, l.path(fileControlPlanePIDs), "kube-scheduler")
	g.Expect(scheduler).NotTo(BeNil(), "kube-scheduler is not in %s", fileControlPlanePIDs)
	cfg, err := clientcmd.BuildConfigFromFlags("", l.path(fileKubeconfig))
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(cfg)
	resources, err := cs.Discovery().ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resources.APIResources).To(ContainElement(HaveField("Name", "podgroups")))

	// A gang of two: kube-scheduler holds the first pod until the second exists (the
	// built-in scheduler, which knows no gangs, would bind it at once), then binds both.
	ns := metav1.NamespaceDefault
	_, err = cs.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "pair"},
		Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	member := func(name string) *corev1.Pod {
		pod := shPod(ns, name, "sleep 600")
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pair")}
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return pod
	}
	get := func(name string) func() (*corev1.Pod, error) {
		return func() (*corev1.Pod, error) { return cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}) }
	}
	member("first")
	g.Consistently(get("first"), gangHoldPeriod, pollEvery).Should(HaveField("Spec.NodeName", ""), "half a gang was bound")
	member("second")
	for _, name := range []string{"first", "second"} {
		g.Eventually(get(name), time.Minute, pollEvery).
			Should(And(HaveField("Spec.NodeName", DefaultNodeName), HaveField("Status.Phase", corev1.PodRunning)), "pod %s", name)
	}

	cancel()
	g.Eventually(done, stopTimeout).Should(BeClosed())
	g.Expect(served).To(Succeed())
	g.Expect(scheduler.same()).To(BeFalse(), "kube-scheduler (pid %d) still runs after serve stopped", scheduler.pid)
}

// listedProc is the process of the command comm in a file of writeProcs; nil: none.
func listedProc(g Gomega, path, comm string) *proc {
	b, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(string(b)) {
		if p, ok := parseProc(line); ok && p.comm == comm {
			return &p
		}
	}
	return nil
}
