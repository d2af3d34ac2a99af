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
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/test/testenv"
)

// The scale benchmark's load and its correctness bounds (the timed figures are
// reported, not asserted).
const (
	scaleJobs     = 500
	scaleReplicas = 2
	// scaleTimeout bounds each wait of the benchmark: for every pod, every job
	// Running, the steady-state reconciles.
	scaleTimeout = 2 * time.Minute
	// maxWritesPerJob bounds the manager's API writes per job until it runs: four
	// companions of its own, a pod per replica, two status writes (Created,
	// Running), and a share of the namespace's trainer identity (three writes for
	// all the jobs, less than one per job).
	maxWritesPerJob = 4 + scaleReplicas + 2 + 1
	// scaleCreators is how many goroutines create the jobs.
	scaleCreators = 32
	// soloJobs is how many jobs, one after the other, measure the first pod's
	// latency of a controller with nothing else to do.
	soloJobs = 5
)

// BenchmarkScale runs "espo manager" as a process of its own against the test
// control plane, creates 500 two-replica jobs at once and reports: the seconds until
// all 1,000 pods exist (all-pods-s) and from the first create until the burst's first
// pod is seen (first-pod-of-burst-s), the median and the largest time from a job's
// Create returning until a watch sees its first pod (first-pod-median-s,
// first-pod-max-s) and that of the first job created (first-pod-first-job-s); before
// the 500, the median of soloJobs jobs created one at a time (first-pod-idle-s); the
// manager's API writes and reads per job until every job runs (writes/job,
// reads/job, from the API server's request counts less the benchmark's own) and the
// CPU time the manager used meanwhile (manager-cpu-s), and the
// manager's peak resident memory (peak-rss-MiB, VmHWM), of which the binary's pages
// are most of what it holds idle (idle-rss-MiB) and the controller's own memory is
// the anonymous part (peak-anon-MiB, RssAnon sampled). It then touches every running
// job and checks that the reconciles this causes write nothing, and that writes/job
// stays within maxWritesPerJob. Run it alone:
//
//	go test ./controllers/ -bench Scale -benchtime=1x -run '^$'
func BenchmarkScale(b *testing.B) {
	bin := buildEspo(b)
	var sum scaleFigures
	b.ResetTimer()
	for range b.N {
		sum.add(runScale(b, bin))
	}
	b.StopTimer()
	n := float64(b.N)
	sum.reportShared(b, "manager-cpu-s")
	b.ReportMetric(sum.firstPodFirstJob/n, "first-pod-first-job-s")
	b.ReportMetric(sum.firstPodIdle/n, "first-pod-idle-s")
	b.ReportMetric(sum.writesPerJob/n, "writes/job")
	b.ReportMetric(sum.readsPerJob/n, "reads/job")
	b.ReportMetric(sum.idleRSS/n, "idle-rss-MiB")
}

// scaleFigures are the figures of one run of the scale benchmark.
type scaleFigures struct {
	allPods, firstPodMedian, firstPodMax, firstPodFirstJob float64 // seconds
	firstPodOfBurst, firstPodIdle                          float64 // seconds
	writesPerJob, readsPerJob                              float64
	peakRSS, idleRSS, peakAnon                             float64 // MiB
	cpu                                                    float64 // seconds
}

// reportShared reports, as averages over b.N runs of which s is the sum, the figures
// that both scale benchmarks measure: the times to the pods, the controller's memory,
// and its CPU time under the metric cpuMetric.
func (s *scaleFigures) reportShared(b *testing.B, cpuMetric string) {
	n := float64(b.N)
	b.ReportMetric(s.allPods/n, "all-pods-s")
	b.ReportMetric(s.firstPodOfBurst/n, "first-pod-of-burst-s")
	b.ReportMetric(s.firstPodMedian/n, "first-pod-median-s")
	b.ReportMetric(s.firstPodMax/n, "first-pod-max-s")
	b.ReportMetric(s.peakRSS/n, "peak-rss-MiB")
	b.ReportMetric(s.peakAnon/n, "peak-anon-MiB")
	b.ReportMetric(s.cpu/n, cpuMetric)
}

func (s *scaleFigures) add(o scaleFigures) {
	s.allPods += o.allPods
	s.firstPodMedian += o.firstPodMedian
	s.firstPodMax += o.firstPodMax
	s.firstPodFirstJob += o.firstPodFirstJob
	s.firstPodOfBurst += o.firstPodOfBurst
	s.firstPodIdle += o.firstPodIdle
	s.writesPerJob += o.writesPerJob
	s.readsPerJob += o.readsPerJob
	s.peakRSS += o.peakRSS
	s.idleRSS += o.idleRSS
	s.peakAnon += o.peakAnon
	s.cpu += o.cpu
}

// runScale runs the scale scenario once in a namespace of its own, against a
// manager process of its own.
func runScale(b *testing.B, bin string) scaleFigures {
	g := NewWithT(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(b)
	var testWrites atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.WrapTransport = countWrites(&testWrites)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	mgr := startManagerProcess(b, bin)
	idleRSS := mgr.peakRSS(g)
	idleFirstPod := soloFirstPodLatency(ctx, b, g, c)
	before := apiServerRequests(g)
	cpuBefore := mgr.cpuSeconds(g)
	pods := watchFirstPods(ctx, g, c, ns, scaleJobs*scaleReplicas)

	created := make([]time.Time, scaleJobs)
	profiled := startProfiles(b, mgr)
	start := time.Now()
	workqueue.ParallelizeUntil(ctx, scaleCreators, scaleJobs, func(i int) {
		job := builders.MakeESPOJob(scaleJobName(i), ns).Replicas(scaleReplicas).Obj()
		g.Expect(c.Create(ctx, job)).To(Succeed())
		created[i] = time.Now()
	})
	select {
	case <-pods.all:
	case <-time.After(scaleTimeout):
		b.Fatalf("%d of %d pods exist after %v", pods.count(), scaleJobs*scaleReplicas, scaleTimeout)
	}
	allPods := pods.allAt.Sub(start)
	latencies := pods.firstPodLatencies(created)
	profiled()

	runAllPods(ctx, g, c, ns)
	g.Eventually(func() int { return jobsRunning(g, c, ns) }, scaleTimeout, 200*time.Millisecond).Should(Equal(scaleJobs))
	toRunning := apiServerRequests(g).sub(before)
	cpu := mgr.cpuSeconds(g) - cpuBefore
	managerWrites := toRunning.writes() - float64(testWrites.Load())
	managerReads := toRunning.gets()

	// Steady state: a reconcile of every running job (its metadata touched) writes nothing.
	done := mgr.reconciles(g)
	ownBefore := testWrites.Load()
	touchJobs(ctx, g, c, ns)
	g.Eventually(func() float64 { return mgr.reconciles(g) }, scaleTimeout, 200*time.Millisecond).
		Should(BeNumerically(">=", done+scaleJobs))
	steadyWrites := apiServerRequests(g).sub(before).sub(toRunning).writes() - float64(testWrites.Load()-ownBefore)
	peak := mgr.peakRSS(g)
	mgr.stop(b)

	f := scaleFigures{
		allPods:          allPods.Seconds(),
		firstPodMedian:   latencies[len(latencies)/2].Seconds(),
		firstPodMax:      latencies[len(latencies)-1].Seconds(),
		firstPodFirstJob: pods.firstPodLatency(created, 0).Seconds(),
		firstPodOfBurst:  pods.firstSeen().Sub(start).Seconds(),
		firstPodIdle:     idleFirstPod.Seconds(),
		writesPerJob:     managerWrites / scaleJobs,
		readsPerJob:      managerReads / scaleJobs,
		peakRSS:          peak,
		idleRSS:          idleRSS,
		peakAnon:         mgr.peakAnon(),
		cpu:              cpu,
	}
	b.Logf("%d jobs x %d replicas: all pods after %.2f s; the burst's first pod %.3f s after its first create; "+
		"first pod after %.3f s (median), %.3f s (max), %.3f s (first job), %.3f s (a job alone); "+
		"%.1f writes and %.1f reads per job and %.1f s of the manager's CPU until Running; peak RSS %.0f MiB (idle %.0f MiB, anonymous at most %.0f MiB)",
		scaleJobs, scaleReplicas, f.allPods, f.firstPodOfBurst, f.firstPodMedian, f.firstPodMax, f.firstPodFirstJob, f.firstPodIdle, f.writesPerJob, f.readsPerJob, f.cpu, f.peakRSS, f.idleRSS, f.peakAnon)
	b.Logf("API requests until every job ran (the benchmark's own %d writes included): %s", testWrites.Load(), toRunning)
	g.Expect(f.writesPerJob).To(BeNumerically("<=", maxWritesPerJob), "API writes per job")
	g.Expect(steadyWrites).To(BeZero(), "the manager's writes in %d steady-state reconciles", scaleJobs)
	return f
}

func scaleJobName(i int) string { return fmt.Sprintf("scale-%03d", i) }

// soloFirstPodLatency creates soloJobs jobs one after the other, each in a namespace
// of its own once the previous one has its pods, and returns the median time from a
// job's Create returning until its first pod is seen.
func soloFirstPodLatency(ctx context.Context, b *testing.B, g Gomega, c client.WithWatch) time.Duration {
	latencies := make([]time.Duration, soloJobs)
	for i := range latencies {
		ns := newNamespace(b)
		pods := watchFirstPods(ctx, g, c, ns, scaleReplicas)
		created := []time.Time{{}}
		g.Expect(c.Create(ctx, builders.MakeESPOJob(scaleJobName(0), ns).Replicas(scaleReplicas).Obj())).To(Succeed())
		created[0] = time.Now()
		select {
		case <-pods.all:
		case <-time.After(scaleTimeout):
			b.Fatalf("a job alone has %d of %d pods after %v", pods.count(), scaleReplicas, scaleTimeout)
		}
		latencies[i] = pods.firstPodLatency(created, 0)
	}
	slices.Sort(latencies)
	return latencies[len(latencies)/2]
}

// podWatch records, from a watch of a namespace's pods, when the first pod of each
// job was seen and when the last of the wanted number of pods was.
type podWatch struct {
	// jobLabel is the pod label that names the pod's job.
	jobLabel string
	mu       sync.Mutex
	first    map[string]time.Time // by job name
	seen     map[string]bool      // pod names
	want     int
	// all is closed when want pods were seen, at allAt.
	all   chan struct{}
	allAt time.Time
}

// watchFirstPods starts watching the pods of namespace ns until want of them were
// seen or ctx ends. The watch resumes where the API server ends it (it ends a watch
// whose reader falls behind, and the benchmark's reader does on a loaded machine).
func watchFirstPods(ctx context.Context, g Gomega, c client.WithWatch, ns string, want int) *podWatch {
	return watchFirstPodsBy(ctx, g, c, ns, want, controllers.LabelJobName)
}

// watchFirstPodsBy is watchFirstPods for pods whose label jobLabel names their job.
func watchFirstPodsBy(ctx context.Context, g Gomega, c client.WithWatch, ns string, want int, jobLabel string) *podWatch {
	w, err := testenv.WatchFromNow(ctx, c, &corev1.PodList{}, ns)
	g.Expect(err).NotTo(HaveOccurred())
	pw := &podWatch{jobLabel: jobLabel, first: map[string]time.Time{}, seen: map[string]bool{}, want: want, all: make(chan struct{})}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added && pw.saw(p, time.Now()) {
				return
			}
		}
	}()
	return pw
}

// saw records that p was seen at t and reports whether every wanted pod was seen.
func (pw *podWatch) saw(p *corev1.Pod, t time.Time) bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	job := p.Labels[pw.jobLabel]
	if _, ok := pw.first[job]; !ok {
		pw.first[job] = t
	}
	pw.seen[p.Name] = true
	if len(pw.seen) < pw.want {
		return false
	}
	pw.allAt = t
	close(pw.all)
	return true
}

func (pw *podWatch) count() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return len(pw.seen)
}

// firstPodLatency is the time from created[i], when job i's Create returned, until
// its first pod was seen.
func (pw *podWatch) firstPodLatency(created []time.Time, i int) time.Duration {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.first[scaleJobName(i)].Sub(created[i])
}

// firstSeen is when the first pod of any job was seen.
func (pw *podWatch) firstSeen() time.Time {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var first time.Time
	for _, t := range pw.first {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// firstPodLatencies are the first pod latencies of every job, shortest first.
func (pw *podWatch) firstPodLatencies(created []time.Time) []time.Duration {
	d := make([]time.Duration, len(created))
	for i := range created {
		d[i] = pw.firstPodLatency(created, i)
	}
	slices.Sort(d)
	return d
}

// runAllPods makes every pod of namespace ns run, as kubelet would report it.
func runAllPods(ctx context.Context, g Gomega, c client.Client, ns string) {
	var l corev1.PodList
	g.Expect(c.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
	workqueue.ParallelizeUntil(ctx, scaleCreators, len(l.Items), func(i int) {
		p := &l.Items[i]
		p.Status = running(p)
		g.Expect(c.Status().Update(ctx, p)).To(Succeed())
	})
}

// jobsRunning is the number of jobs in namespace ns whose phase is Running.
func jobsRunning(g Gomega, c client.Client, ns string) int {
	var jobs trainingv1alpha1.ESPOJobList
	g.Expect(c.List(context.Background(), &jobs, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, j := range jobs.Items {
		if j.Status.Phase == trainingv1alpha1.PhaseRunning {
			n++
		}
	}
	return n
}

// touchJobs annotates every job of namespace ns, which makes the controller
// reconcile each once.
func touchJobs(ctx context.Context, g Gomega, c client.Client, ns string) {
	var jobs trainingv1alpha1.ESPOJobList
	g.Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	workqueue.ParallelizeUntil(ctx, scaleCreators, len(jobs.Items), func(i int) {
		j := &jobs.Items[i]
		patch := client.MergeFrom(j.DeepCopy())
		j.Annotations = map[string]string{"example.com/touch": "1"}
		g.Expect(c.Patch(ctx, j, patch)).To(Succeed())
	})
}
