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
	"sort"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/test/testenv"
	. "github.com/onsi/gomega"
)

// requestKind is one kind of request the API server counts in apiserver_request_total:
// the verb, the resource (with its subresource, "espojobs/status") and the answer's
// HTTP code; the other labels (scope, version, ...) are summed over.
type requestKind struct {
	verb, resource, code string
}

// write reports whether the request changes something: every verb but the reads
// GET, LIST and WATCH.
func (k requestKind) write() bool {
	switch k.verb {
	case "GET", "LIST", "WATCH":
		return false
	}
	return true
}

// espoJobStatus is the resource of ESPOJob status writes (the trainer's and the
// controller's server-side applies).
const espoJobStatus = "espojobs/status"

// requestCounts are the API server's request counters by kind.
type requestCounts map[requestKind]float64

// total sums the counts of the kinds that keep reports true for.
func (c requestCounts) total(keep func(requestKind) bool) float64 {
	var n float64
	for k, v := range c {
		if keep(k) {
			n += v
		}
	}
	return n
}

// requests are all requests; writes, statusWrites and otherWrites the writes, those of
// ESPOJob status and the rest.
func (c requestCounts) requests() float64 { return c.total(func(requestKind) bool { return true }) }
func (c requestCounts) writes() float64   { return c.total(requestKind.write) }
func (c requestCounts) statusWrites() float64 {
	return c.total(func(k requestKind) bool { return k.write() && k.resource == espoJobStatus })
}
func (c requestCounts) otherWrites() float64 { return c.writes() - c.statusWrites() }

// statusConflicts are the ESPOJob status writes refused with 409 Conflict (a write
// guarded by a resourceVersion that was no longer the job's).
func (c requestCounts) statusConflicts() float64 {
	return c.total(func(k requestKind) bool { return k.write() && k.resource == espoJobStatus && k.code == "409" })
}

// plus is c + d; minus is c - d.
func (c requestCounts) plus(d requestCounts) requestCounts  { return c.combine(d, 1) }
func (c requestCounts) minus(d requestCounts) requestCounts { return c.combine(d, -1) }

func (c requestCounts) combine(d requestCounts, sign float64) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		out[k] += v
	}
	for k, v := range d {
		out[k] += sign * v
	}
	return out
}

// topWrites names the n most frequent kinds of writes, for logs.
func (c requestCounts) topWrites(n int) string {
	var kinds []requestKind
	for k, v := range c {
		if k.write() && v > 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return c[kinds[i]] > c[kinds[j]] })
	var parts []string
	for _, k := range kinds[:min(n, len(kinds))] {
		parts = append(parts, fmt.Sprintf("%s %s %s: %.0f", k.verb, k.resource, k.code, c[k]))
	}
	return strings.Join(parts, ", ")
}

// parseRequestCounts reads apiserver_request_total out of kube-apiserver's /metrics.
func parseRequestCounts(metrics string) (requestCounts, error) {
	counts := requestCounts{}
	err := testenv.EachSample([]byte(metrics), "apiserver_request_total", func(labels map[string]string, v float64) {
		resource := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		counts[requestKind{verb: labels["verb"], resource: resource, code: labels["code"]}] += v
	})
	if err != nil {
		return nil, err
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("no apiserver_request_total in the API server's /metrics")
	}
	return counts, nil
}

// scrapeRequests reads the API server's request counters (kubectl get --raw /metrics,
// as the suite's administrator).
func scrapeRequests() (requestCounts, error) {
	out, err := kubectl("get", "--raw", "/metrics")
	if err != nil {
		return nil, err
	}
	return parseRequestCounts(out)
}

// requestMeter counts the API server's requests from its start on, across restarts of
// the API server, whose counters start again from zero: each restart adds the
// counts up to the last scrape before it (requests between that scrape and the
// stop, a fraction of a second, are not counted).
type requestMeter struct {
	scrape func() (requestCounts, error) // scrapeRequests, in the suite
	before requestCounts                 // the counts of the API server processes that were restarted
	start  requestCounts                 // the counters of the current process when the count began
}

// startRequestMeter begins counting the suite's API server's requests.
func startRequestMeter() (*requestMeter, error) { return startRequestMeterOn(scrapeRequests) }

func startRequestMeterOn(scrape func() (requestCounts, error)) (*requestMeter, error) {
	start, err := scrape()
	return &requestMeter{scrape: scrape, before: requestCounts{}, start: start}, err
}

// restart runs restartAPIServer, keeping the counts of the process it stops.
func (m *requestMeter) restart(restartAPIServer func() error) error {
	last, err := m.scrape()
	if err != nil {
		return err
	}
	m.before, m.start = m.before.plus(last.minus(m.start)), requestCounts{}
	return restartAPIServer()
}

// read is the count of requests since the meter started.
func (m *requestMeter) read() (requestCounts, error) {
	now, err := m.scrape()
	if err != nil {
		return nil, err
	}
	return m.before.plus(now.minus(m.start)), nil
}

// TestParseRequestCountsSumsByVerbResourceAndCode: the counters of /metrics are
// summed over the labels that are not the verb, the resource or the code, a
// subresource joins its resource, reads are not writes.
func TestParseRequestCountsSumsByVerbResourceAndCode(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	counts, err := parseRequestCounts(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="training.espo.dev",resource="espojobs",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="training.espo.dev",resource="espojobs",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 40
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 5
apiserver_request_total_other{verb="POST"} 100
apiserver_request_duration_seconds_count{verb="POST"} 100
`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counts).To(Equal(requestCounts{
		{verb: "APPLY", resource: "espojobs/status", code: "200"}: 7,
		{verb: "APPLY", resource: "espojobs/status", code: "409"}: 2,
		{verb: "POST", resource: "pods", code: "201"}:             3,
		{verb: "LIST", resource: "pods", code: "200"}:             40,
		{verb: "WATCH", resource: "pods", code: "0"}:              5,
	}))
	g.Expect(counts.requests()).To(BeEquivalentTo(57))
	g.Expect(counts.writes()).To(BeEquivalentTo(12))
	g.Expect(counts.statusWrites()).To(BeEquivalentTo(9))
	g.Expect(counts.otherWrites()).To(BeEquivalentTo(3))
	g.Expect(counts.statusConflicts()).To(BeEquivalentTo(2))

	_, err = parseRequestCounts("etcd_request_duration_seconds_count 3\n")
	g.Expect(err).To(MatchError(ContainSubstring("no apiserver_request_total")))
}

// TestRequestMeterCountsAcrossARestart: a meter started at 5 status writes, scraped at
// 9 before a restart and at 4 after it (the new process counts from zero), counted 8.
func TestRequestMeterCountsAcrossARestart(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	status := requestKind{verb: "APPLY", resource: espoJobStatus, code: "200"}
	scrapes := []float64{5, 9, 4}
	scrape := func() (requestCounts, error) {
		n := scrapes[0]
		scrapes = scrapes[1:]
		return requestCounts{status: n}, nil
	}
	m, err := startRequestMeterOn(scrape)
	g.Expect(err).NotTo(HaveOccurred())
	restarted := false
	g.Expect(m.restart(func() error { restarted = true; return nil })).To(Succeed())
	g.Expect(restarted).To(BeTrue())
	counts, err := m.read()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counts.statusWrites()).To(BeEquivalentTo(8))
	g.Expect(scrapes).To(BeEmpty())
}
