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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// Scale test figures and targets.
const (
	scaleJobs     = 500
	scaleReplicas = 2
	// scalePodsTimeout is the target: every pod exists within it.
	scalePodsTimeout = 30 * time.Second
	// scaleRunningTimeout bounds the wait for every job to be Running.
	scaleRunningTimeout = 2 * time.Minute
	// maxWritesPerJob is the target number of API writes per job to reach Running.
	maxWritesPerJob = 10
)

// TestScale creates 500 two-replica jobs at once and measures the time until all
// 1,000 pods exist, the controller's API writes per job until every job runs, and its
// memory; then it reconciles every running job once more and checks that this
// writes nothing. It runs only with ESPO_SCALE_TEST=1.
func TestScale(t *testing.T) {
	if os.Getenv("ESPO_SCALE_TEST") != "1" {
		t.Skip("set ESPO_SCALE_TEST=1 to run the scale test")
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	var writes atomic.Int64
	writeLog = &sync.Map{}
	t.Cleanup(func() {
		writeLog.Range(func(k, v any) bool { t.Logf("%s: %d", k, v.(*atomic.Int64).Load()); return true })
	})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	env.StartManager(t, operatorConfig(t, &writes), ns, func(_ *ctrl.Options, o *controllers.Options) {
		o.PodEventBatchPeriod = controllers.DefaultPodEventBatchPeriod // as the manager runs
	})

	start := time.Now()
	workqueue.ParallelizeUntil(ctx, 32, scaleJobs, func(i int) {
		job := builders.MakeESPOJob(fmt.Sprintf("scale-%03d", i), ns).Replicas(scaleReplicas).Obj()
		g.Expect(c.Create(ctx, job)).To(Succeed())
	})
	created := time.Since(start)
	countPods := func() int {
		var l corev1.PodList
		g.Expect(c.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
		return len(l.Items)
	}
	g.Eventually(countPods, time.Until(start.Add(scalePodsTimeout)), 100*time.Millisecond).Should(Equal(scaleJobs * scaleReplicas))
	allPods := time.Since(start)
	writesToPods := writes.Load()
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)

	var l corev1.PodList
	g.Expect(c.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
	workqueue.ParallelizeUntil(ctx, 32, len(l.Items), func(i int) {
		p := &l.Items[i]
		p.Status = running(p)
		g.Expect(c.Status().Update(ctx, p)).To(Succeed())
	})
	g.Eventually(func() int {
		var jobs trainingv1alpha1.ESPOJobList
		g.Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		n := 0
		for _, j := range jobs.Items {
			if j.Status.Phase == trainingv1alpha1.PhaseRunning {
				n++
			}
		}
		return n
	}, scaleRunningTimeout, 200*time.Millisecond).Should(Equal(scaleJobs))
	allRunning := time.Since(start)
	writesToRunning := writes.Load()

	// Steady state: a reconcile of every job (its metadata touched) writes nothing.
	var jobs trainingv1alpha1.ESPOJobList
	g.Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	done := reconciles(g)
	workqueue.ParallelizeUntil(ctx, 32, len(jobs.Items), func(i int) {
		j := &jobs.Items[i]
		patch := client.MergeFrom(j.DeepCopy())
		j.Annotations = map[string]string{"example.com/touch": "1"}
		g.Expect(c.Patch(ctx, j, patch)).To(Succeed())
	})
	g.Eventually(func() float64 { return reconciles(g) }, scaleRunningTimeout, 200*time.Millisecond).
		Should(BeNumerically(">=", done+scaleJobs))
	steadyWrites := writes.Load() - writesToRunning

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perJob := float64(writesToRunning) / scaleJobs
	t.Logf("%d jobs x %d replicas: jobs created in %v; all %d pods exist after %v; all jobs Running after %v",
		scaleJobs, scaleReplicas, created.Round(time.Millisecond), scaleJobs*scaleReplicas,
		allPods.Round(time.Millisecond), allRunning.Round(time.Millisecond))
	t.Logf("controller API writes (events excluded): %.1f per job until all pods exist, %.1f per job until Running, "+
		"%d in %d steady-state reconciles", float64(writesToPods)/scaleJobs, perJob, steadyWrites, scaleJobs)
	t.Logf("test process heap (controller, its cache and the test client): %.0f MiB before, %.0f MiB when the pods existed, "+
		"%.0f MiB live after GC with every job Running; %.0f MiB from the OS",
		mib(before.HeapAlloc), mib(peak.HeapAlloc), mib(after.HeapAlloc), mib(after.Sys))
	g.Expect(allPods).To(BeNumerically("<=", scalePodsTimeout))
	g.Expect(perJob).To(BeNumerically("<=", maxWritesPerJob))
	g.Expect(steadyWrites).To(BeZero(), "writes of steady-state reconciles")
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
