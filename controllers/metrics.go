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
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Operator metrics, served with controller-runtime's own (reconcile counts and
// durations, work queue, client requests) on the manager's metrics endpoint.
var (
	jobsCreated   = jobCounter("espo_jobs_created_total", "ESPOJobs whose children the controller created, by namespace.")
	jobsSucceeded = jobCounter("espo_jobs_succeeded_total", "ESPOJobs that succeeded, by namespace.")
	jobsFailed    = jobCounter("espo_jobs_failed_total", "ESPOJobs that failed, by namespace.")
	jobsRestarted = jobCounter("espo_jobs_restarted_total", "Gang restarts of ESPOJobs' trainer pods, by namespace.")
	jobsDisrupted = jobCounter("espo_jobs_disrupted_total",
		"Gang restarts of ESPOJobs' trainer pods caused by a disrupted pod, not counted against backoffLimit (also in espo_jobs_restarted_total), by namespace.")
	podsCreatedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "espo_job_pods_created_seconds",
		Help:    "Time from an ESPOJob's creation until all its trainer pods were created.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 16), // 50ms .. ~27min
	})
	runningSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "espo_job_running_seconds",
		Help:    "Time from an ESPOJob's creation until all its trainer pods first ran.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 16), // 100ms .. ~55min
	})
	jobsByPhaseDesc = prometheus.NewDesc("espo_jobs",
		"ESPOJobs by namespace and phase, as the controller's cache holds them.", []string{"namespace", "phase"}, nil)
)

// jobCounter is a counter of ESPOJob transitions by namespace.
func jobCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"namespace"})
}

func init() {
	crmetrics.Registry.MustRegister(jobsCreated, jobsSucceeded, jobsFailed, jobsRestarted, jobsDisrupted,
		podsCreatedSeconds, runningSeconds)
}

// phaseCollector is the gauge espo_jobs: it counts the ESPOJobs by namespace and
// phase when scraped, from reader (the manager's cache), so it is right after a
// controller restart and never drifts, unlike a gauge moved on transitions.
type phaseCollector struct {
	reader client.Reader
}

// Describe sends the gauge's description.
func (phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsByPhaseDesc }

// Collect counts the jobs that the reader lists by namespace and phase; it sends
// nothing if the list fails.
func (c phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var jobs trainingv1alpha1.ESPOJobList
	if err := c.reader.List(ctx, &jobs); err != nil {
		return
	}
	type key struct{ ns, phase string }
	counts := map[key]int{}
	for i := range jobs.Items {
		phase := jobs.Items[i].Status.Phase
		if phase == "" {
			phase = trainingv1alpha1.PhasePending
		}
		counts[key{jobs.Items[i].Namespace, string(phase)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsByPhaseDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase)
	}
}

// registeredWhileRunning is a manager runnable that keeps a collector registered
// with a registry while the manager runs, so that the registry never reads the cache
// of a stopped manager, and a manager started after it can register its own.
type registeredWhileRunning struct {
	registry  prometheus.Registerer
	collector prometheus.Collector
}

// Start registers the collector, waits for ctx to end and unregisters it. It fails
// if the registry holds another collector of the same metric (a second manager
// running in the process).
func (r registeredWhileRunning) Start(ctx context.Context) error {
	if err := r.registry.Register(r.collector); err != nil {
		return fmt.Errorf("registering the espo_jobs gauge: %w", err)
	}
	<-ctx.Done()
	r.registry.Unregister(r.collector)
	return nil
}

// NeedLeaderElection is false: every replica serves the gauge from its own cache.
func (registeredWhileRunning) NeedLeaderElection() bool { return false }

// recordMetrics counts the transitions from old to new, a status that was just
// written: jobs created, succeeded, failed, restarted and restarted after a
// disruption, and the times from creation
// to all pods created and to all pods first running.
func recordMetrics(old, new *trainingv1alpha1.ESPOJob, now time.Time) {
	ns := new.Namespace
	was := func(typ string) bool { return meta.IsStatusConditionTrue(old.Status.Conditions, typ) }
	is := func(typ string) bool { return meta.IsStatusConditionTrue(new.Status.Conditions, typ) }
	age := now.Sub(new.CreationTimestamp.Time).Seconds()
	if meta.FindStatusCondition(old.Status.Conditions, trainingv1alpha1.ConditionCreated) == nil && is(trainingv1alpha1.ConditionCreated) {
		jobsCreated.WithLabelValues(ns).Inc()
		podsCreatedSeconds.Observe(age)
	}
	if !was(trainingv1alpha1.ConditionRunning) && is(trainingv1alpha1.ConditionRunning) && new.Status.Restarts == 0 &&
		meta.FindStatusCondition(new.Status.Conditions, trainingv1alpha1.ConditionSuspended) == nil {
		runningSeconds.Observe(age)
	}
	if !was(trainingv1alpha1.ConditionSucceeded) && is(trainingv1alpha1.ConditionSucceeded) {
		jobsSucceeded.WithLabelValues(ns).Inc()
	}
	if !was(trainingv1alpha1.ConditionFailed) && is(trainingv1alpha1.ConditionFailed) {
		jobsFailed.WithLabelValues(ns).Inc()
	}
	if d := new.Status.Restarts - old.Status.Restarts; d > 0 {
		jobsRestarted.WithLabelValues(ns).Add(float64(d))
	}
	if d := new.Status.Disruptions - old.Status.Disruptions; d > 0 {
		jobsDisrupted.WithLabelValues(ns).Add(float64(d))
	}
}
