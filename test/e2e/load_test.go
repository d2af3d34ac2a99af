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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// loadJobs is how many jobs BenchmarkLoad runs at once; loadTimeout how long they may
// take, all together, on a loaded 2-core machine.
const (
	loadJobs    = 50
	loadTimeout = 15 * time.Minute
)

// BenchmarkLoad runs 50 copies of job-load.yaml at once on the CPU policy and reports
// what they cost the API server from their creation until all succeeded: writes
// (every verb but GET, LIST and WATCH) per job per minute, split into ESPOJob status
// writes (the trainer's and the controller's) and the rest (pods, events, leases, the
// node's pod status, ...), the status writes refused as conflicts, and the API
// server's requests per second. Run it with
//
//	go test ./test/e2e -run '^$' -bench Load -benchtime=1x
func BenchmarkLoad(b *testing.B) {
	var sum loadRun
	for i := range b.N {
		ns := newNamespace(b, fmt.Sprintf("bench-load-%d", i))
		sum = sum.plus(runLoad(b, ns, loadJobs))
	}
	perJobMinute := func(n float64) float64 { return n / float64(sum.jobs) / sum.wall.Minutes() }
	b.ReportMetric(sum.counts.writes()/float64(sum.jobs), "writes/job")
	b.ReportMetric(perJobMinute(sum.counts.writes()), "writes/job/min")
	b.ReportMetric(perJobMinute(sum.counts.statusWrites()), "status-writes/job/min")
	b.ReportMetric(perJobMinute(sum.counts.otherWrites()), "other-writes/job/min")
	b.ReportMetric(sum.counts.statusConflicts()/float64(sum.jobs), "status-conflicts/job")
	b.ReportMetric(sum.counts.requests()/sum.wall.Seconds(), "requests/s")
	b.ReportMetric(sum.wall.Seconds()/float64(b.N), "s/run")
	b.Logf("%d jobs in %s: %.0f requests, %.0f writes (%s)", sum.jobs, sum.wall.Round(time.Second),
		sum.counts.requests(), sum.counts.writes(), sum.counts.topWrites(8))
}

// loadRun is what one run of jobs cost the API server.
type loadRun struct {
	jobs   int
	wall   time.Duration // from the jobs' creation until all succeeded
	counts requestCounts
}

func (r loadRun) plus(s loadRun) loadRun {
	if r.counts == nil {
		r.counts = requestCounts{}
	}
	return loadRun{jobs: r.jobs + s.jobs, wall: r.wall + s.wall, counts: r.counts.plus(s.counts)}
}

// runLoad creates n copies of job-load.yaml in ns and waits until all succeeded,
// counting the API server's requests meanwhile.
func runLoad(tb testing.TB, ns string, n int) loadRun {
	g := NewWithT(tb)
	meter, err := startRequestMeter()
	g.Expect(err).NotTo(HaveOccurred())
	began := time.Now()
	names := createLoad(tb, ns, n, func(*trainingv1alpha1.ESPOJob) {})
	waitForAllSucceeded(tb, ns, names, loadTimeout)
	wall := time.Since(began)
	counts, err := meter.read()
	g.Expect(err).NotTo(HaveOccurred())
	return loadRun{jobs: n, wall: wall, counts: counts}
}

// createLoad creates n copies of job-load.yaml in ns, named load-0 ... load-<n-1> and
// changed by edit, with one kubectl create, and returns their names.
func createLoad(tb testing.TB, ns string, n int, edit func(*trainingv1alpha1.ESPOJob)) []string {
	tb.Helper()
	g := NewWithT(tb)
	raw, err := os.ReadFile(filepath.Join(repoRoot, testdata("job-load.yaml")))
	g.Expect(err).NotTo(HaveOccurred())
	var names, docs []string
	for i := range n {
		job := &trainingv1alpha1.ESPOJob{}
		g.Expect(yaml.UnmarshalStrict(raw, job)).To(Succeed())
		job.Name = fmt.Sprintf("load-%d", i)
		edit(job)
		doc, err := yaml.Marshal(job)
		g.Expect(err).NotTo(HaveOccurred())
		names, docs = append(names, job.Name), append(docs, string(doc))
	}
	path := filepath.Join(tb.TempDir(), "jobs.yaml")
	g.Expect(os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600)).To(Succeed())
	mustKubectl(g, "create", "-n", ns, "-f", path) // one request a job (apply reads each first)
	return names
}

// listJobs reads the namespace's ESPOJobs by name (from reader).
func listJobs(g Gomega, ns string) map[string]*trainingv1alpha1.ESPOJob {
	var list trainingv1alpha1.ESPOJobList
	g.ExpectWithOffset(1, reader.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	jobs := map[string]*trainingv1alpha1.ESPOJob{}
	for i := range list.Items {
		jobs[list.Items[i].Name] = &list.Items[i]
	}
	return jobs
}

// waitForAll waits until every named job of ns passes check, reading them all with
// one list per poll, and stops at once when one failed.
func waitForAll(tb testing.TB, ns string, names []string, timeout time.Duration, check func(Gomega, *trainingv1alpha1.ESPOJob)) {
	tb.Helper()
	NewWithT(tb).Eventually(func(g Gomega) {
		jobs := listJobs(g, ns)
		for _, name := range names {
			job := jobs[name]
			g.Expect(job).NotTo(BeNil(), "job %s", name)
			if job.Status.Phase == trainingv1alpha1.PhaseFailed {
				StopTrying(fmt.Sprintf("job %s/%s failed: %v", ns, name, job.Status.Conditions)).Now()
			}
			check(g, job)
		}
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
}

// waitForAllSucceeded waits until every named job of ns succeeded.
func waitForAllSucceeded(tb testing.TB, ns string, names []string, timeout time.Duration) {
	tb.Helper()
	waitForAll(tb, ns, names, timeout, func(g Gomega, job *trainingv1alpha1.ESPOJob) {
		g.Expect(job.Status.Phase).To(Equal(trainingv1alpha1.PhaseSucceeded), "job %s", job.Name)
	})
}
