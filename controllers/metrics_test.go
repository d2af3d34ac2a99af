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

package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

func TestRecordMetrics(t *testing.T) {
	base := makeJob().Created(now.Add(-10 * time.Second))
	created := cond(trainingv1alpha1.ConditionCreated, true, trainingv1alpha1.ReasonChildrenCreated, "")
	running := cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "")
	cases := map[string]struct {
		old, new                            *trainingv1alpha1.ESPOJob
		created, succeeded, failed, restart float64
		disrupted                           float64
		createdSamples, runningSamples      uint64
	}{
		"children created": {old: base.Clone().Obj(), new: base.Clone().Condition(created).Obj(), created: 1, createdSamples: 1},
		"running for the first time": {
			old: base.Clone().Condition(created).Obj(), new: base.Clone().Condition(created).Condition(running).Obj(), runningSamples: 1,
		},
		"running again after a restart is not observed": {
			old: base.Clone().Condition(created).Restarts(1).Obj(),
			new: base.Clone().Condition(created).Condition(running).Restarts(1).Obj(),
		},
		"a restart": {old: base.Clone().Obj(), new: base.Clone().Restarts(1).Obj(), restart: 1},
		"a restart after a disruption": {
			old: base.Clone().Restarts(1).Obj(), new: base.Clone().Restarts(2).Disruptions(1).Obj(), restart: 1, disrupted: 1,
		},
		"succeeded": {old: base.Clone().Obj(), new: base.Clone().Condition(cond(trainingv1alpha1.ConditionSucceeded, true, "Completed", "")).Obj(), succeeded: 1},
		"failed":    {old: base.Clone().Obj(), new: base.Clone().Condition(cond(trainingv1alpha1.ConditionFailed, true, "DeadlineExceeded", "")).Obj(), failed: 1},
		"nothing new": {
			old: base.Clone().Condition(created).Condition(running).Obj(), new: base.Clone().Condition(created).Condition(running).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobsCreated.Reset()
			jobsSucceeded.Reset()
			jobsFailed.Reset()
			jobsRestarted.Reset()
			jobsDisrupted.Reset()
			createdBefore, runningBefore := histogramCount(t, podsCreatedSeconds), histogramCount(t, runningSeconds)
			recordMetrics(tc.old, tc.new, now)
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"created", testutil.ToFloat64(jobsCreated.WithLabelValues("ns")), tc.created},
				{"succeeded", testutil.ToFloat64(jobsSucceeded.WithLabelValues("ns")), tc.succeeded},
				{"failed", testutil.ToFloat64(jobsFailed.WithLabelValues("ns")), tc.failed},
				{"restarted", testutil.ToFloat64(jobsRestarted.WithLabelValues("ns")), tc.restart},
				{"disrupted", testutil.ToFloat64(jobsDisrupted.WithLabelValues("ns")), tc.disrupted},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if got := histogramCount(t, podsCreatedSeconds) - createdBefore; got != tc.createdSamples {
				t.Errorf("pods-created samples = %d, want %d", got, tc.createdSamples)
			}
			if got := histogramCount(t, runningSeconds) - runningBefore; got != tc.runningSamples {
				t.Errorf("running samples = %d, want %d", got, tc.runningSamples)
			}
		})
	}
}

// phaseJobs are four jobs in two namespaces, for the espo_jobs gauge, and the gauge
// they give.
var (
	phaseJobs = []client.Object{
		builders.MakeESPOJob("a", "ns1").Phase(trainingv1alpha1.PhaseRunning).Obj(),
		builders.MakeESPOJob("b", "ns1").Phase(trainingv1alpha1.PhaseRunning).Obj(),
		builders.MakeESPOJob("c", "ns1").Obj(), // no status yet: Pending
		builders.MakeESPOJob("d", "ns2").Phase(trainingv1alpha1.PhaseFailed).Obj(),
	}
	phaseGauge = `
# HELP espo_jobs ESPOJobs by namespace and phase, as the controller's cache holds them.
# TYPE espo_jobs gauge
espo_jobs{namespace="ns1",phase="Pending"} 1
espo_jobs{namespace="ns1",phase="Running"} 2
espo_jobs{namespace="ns2",phase="Failed"} 1
`
)

func TestPhaseGaugeCountsTheCachedJobs(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(phaseJobs...).Build()
	if err := testutil.CollectAndCompare(phaseCollector{reader: reader}, strings.NewReader(phaseGauge)); err != nil {
		t.Error(err)
	}
}

// TestPhaseGaugeIsRegisteredWhileTheManagerRuns runs the runnable that SetupWithManager
// adds against a registry of its own: the gauge is served while it runs, a second
// one is refused meanwhile, and the registry is free again once it stopped.
func TestPhaseGaugeIsRegisteredWhileTheManagerRuns(t *testing.T) {
	registry := prometheus.NewPedanticRegistry()
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(phaseJobs...).Build()
	gauge := registeredWhileRunning{registry: registry, collector: phaseCollector{reader: reader}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gauge.Start(ctx) }()

	g := NewWithT(t)
	g.Eventually(func() error {
		return testutil.GatherAndCompare(registry, strings.NewReader(phaseGauge), "espo_jobs")
	}).Should(Succeed())
	second := registeredWhileRunning{registry: registry, collector: phaseCollector{reader: reader}}
	g.Expect(second.Start(context.Background())).To(MatchError(ContainSubstring("registering the espo_jobs gauge")))

	cancel()
	g.Expect(<-done).To(Succeed())
	g.Expect(registry.Register(phaseCollector{reader: reader})).To(Succeed(), "unregistered when stopped")
}

// histogramCount is the number of samples of a histogram.
func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
