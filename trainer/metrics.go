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

package trainer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/espo-dev/espo-operator/trainer/plan"
)

// Metrics are the trainer's Prometheus metrics, espo_trainer_*. A nil *Metrics
// records nothing.
type Metrics struct {
	step         prometheus.Gauge
	totalSteps   prometheus.Gauge
	reward       *prometheus.GaugeVec
	cout         prometheus.Gauge
	kl           prometheus.Gauge
	clipFraction prometheus.Gauge
	gradNorm     prometheus.Gauge
	// samplerMismatch and samplerTruncated are the sampler statistics of the latest
	// step whose answers an engine other than the policy sampled.
	samplerMismatch  prometheus.Gauge
	samplerTruncated prometheus.Gauge
	stepSeconds      *prometheus.HistogramVec
	// phaseSeconds is each step's time by phase (status.training.lastStep.phases);
	// tokensPerSecond the latest step's answer tokens trained per second.
	phaseSeconds    *prometheus.HistogramVec
	tokensPerSecond prometheus.Gauge
	accuracy        *prometheus.GaugeVec
}

// NewMetrics creates the trainer's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		step:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_step", Help: "Optimizer steps taken."}),
		totalSteps: prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_total_steps", Help: "Optimizer steps of the whole run."}),
		reward: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "espo_trainer_step_reward",
			Help: "Mean step reward R_step over the candidates of the latest step."}, []string{"stage"}),
		cout:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_cout_reward", Help: "Mean R_COUT over the episodes of the latest ESPO step."}),
		kl:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_kl", Help: "KL to the reference policy at the latest step."}),
		clipFraction: prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_clip_fraction", Help: "Fraction of clipped tokens at the latest step."}),
		gradNorm:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_grad_norm", Help: "Gradient norm before clipping at the latest step."}),
		samplerMismatch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_sampler_logprob_mismatch",
			Help: "Mean over the tokens of the latest step of |logp_policy - logp_sampler|, between the trainer's policy and the engine that sampled the answers (spec.model.rollout.engine vllm)."}),
		samplerTruncated: prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_sampler_truncated_fraction",
			Help: "Fraction of the tokens of the latest step whose importance weight between the policy and the sampling engine was truncated at spec.algorithm.samplerCorrection.cap."}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "espo_trainer_step_seconds",
			Help: "Wall time of one optimizer step.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, []string{"stage"}),
		phaseSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "espo_trainer_phase_seconds",
			Help:    "Wall time of one phase of an optimizer step: sampling, environment, reference, rewards, backward, optimizer, weightSync or checkpoint.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"stage", "phase"}),
		tokensPerSecond: prometheus.NewGauge(prometheus.GaugeOpts{Name: "espo_trainer_tokens_per_second",
			Help: "Answer tokens trained on per second of wall time at the latest step."}),
		accuracy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "espo_trainer_accuracy",
			Help: "Metrics of the latest evaluation, by split and metric."}, []string{"split", "metric"}),
	}
	reg.MustRegister(m.step, m.totalSteps, m.reward, m.cout, m.kl, m.clipFraction, m.gradNorm, m.samplerMismatch, m.samplerTruncated,
		m.stepSeconds, m.phaseSeconds, m.tokensPerSecond, m.accuracy)
	return m
}

func (m *Metrics) observeStep(k plan.Kind, step int64, s batchStats, took time.Duration) {
	if m == nil {
		return
	}
	m.step.Set(float64(step))
	m.stepSeconds.WithLabelValues(string(k)).Observe(took.Seconds())
	for p, d := range s.times {
		m.phaseSeconds.WithLabelValues(string(k), string(p)).Observe(d.Seconds())
	}
	if took > 0 {
		m.tokensPerSecond.Set(float64(s.tokens) / took.Seconds())
	}
	m.gradNorm.Set(s.gradNorm)
	if k == plan.SFT {
		return
	}
	m.reward.WithLabelValues(string(k)).Set(s.meanReward())
	m.cout.Set(s.cout)
	m.kl.Set(s.kl)
	m.clipFraction.Set(s.clipFraction)
	if s.sampler != nil {
		m.samplerMismatch.Set(s.sampler.mismatch)
		m.samplerTruncated.Set(s.sampler.truncated)
	}
}

func (m *Metrics) observeTotal(total int64) {
	if m != nil {
		m.totalSteps.Set(float64(total))
	}
}

// observeEval records the metrics of an evaluation of split, by their API names.
func (m *Metrics) observeEval(split string, named map[string]float64) {
	if m == nil {
		return
	}
	for name, v := range named {
		m.accuracy.WithLabelValues(split, name).Set(v)
	}
}
