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
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Each call of a phasedMember moves the fake clock on by its phase's duration.
const (
	generateTakes = 300 * time.Millisecond
	logProbsTakes = 40 * time.Millisecond
	backwardTakes = 20 * time.Millisecond
	stepTakes     = 7 * time.Millisecond
	saveTakes     = 3 * time.Millisecond
)

// phasedMember is a CPU worker whose calls take known times on a fake clock, and
// which counts, since its last Step, the time it spent in each phase of a step.
type phasedMember struct {
	worker.Member
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	// since holds the time of each phase since the last Step (its own included);
	// last the same at the last Step.
	since, last phaseTimes
}

func (m *phasedMember) took(p trainingv1alpha1.StepPhase, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock.Step(d)
	if m.since == nil {
		m.since = phaseTimes{}
	}
	m.since[p] += d
}

func (m *phasedMember) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	m.took(trainingv1alpha1.PhaseSampling, generateTakes)
	return m.Member.Generate(ctx, ps, o)
}

func (m *phasedMember) LogProbs(ctx context.Context, items []worker.Scored, o worker.ScoreOptions) ([]worker.TokenLogProbs, error) {
	m.took(trainingv1alpha1.PhaseReference, logProbsTakes)
	return m.Member.LogProbs(ctx, items, o)
}

func (m *phasedMember) Backward(ctx context.Context, items []worker.Weighted) (worker.Backwarded, error) {
	m.took(trainingv1alpha1.PhaseBackward, backwardTakes)
	return m.Member.Backward(ctx, items)
}

func (m *phasedMember) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	m.took(trainingv1alpha1.PhaseOptimizer, stepTakes)
	m.mu.Lock()
	m.last, m.since = m.since, nil
	m.mu.Unlock()
	return m.Member.Step(ctx, o)
}

func (m *phasedMember) Save(ctx context.Context, path string) error {
	m.took(trainingv1alpha1.PhaseCheckpoint, saveTakes)
	return m.Member.Save(ctx, path)
}

// TestStepTimesSayWhereTheStepWent: the last training step's report gives each
// phase the time its worker calls took (sampling, reference, backward, optimizer,
// and the checkpoint written after it), the step's wall time, the tokens its
// backward pass took and their rate, and names the dominant phase; the trainer's
// histogram has every phase.
func TestStepTimesSayWhereTheStepWent(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.CheckpointDir = t.TempDir()
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 1, Keep: 1}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m := &phasedMember{Member: cpuMembers(1)[0], clock: clock}
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	rep, _ := run(t, c, Options{Workers: worker.NewGang(m), Reporter: rec, Clock: clock, Metrics: NewMetrics(reg)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	last := rec.reports[len(rec.reports)-1].LastStep
	if last == nil || last.Step != rep.Steps {
		t.Fatalf("last report's step times %+v, want those of step %d", last, rep.Steps)
	}
	want := m.last
	want[trainingv1alpha1.PhaseCheckpoint] = saveTakes // written after the step, before its report
	var total time.Duration
	got := map[trainingv1alpha1.StepPhase]trainingv1alpha1.Decimal{}
	for _, p := range last.Phases {
		got[p.Phase] = p.Seconds
	}
	for _, p := range trainingv1alpha1.StepPhases {
		if want[p] == 0 {
			if s, ok := got[p]; ok {
				t.Errorf("phase %s took %s s, want it absent (no time)", p, s)
			}
			continue
		}
		total += want[p]
		if got[p] != seconds(want[p]) {
			t.Errorf("phase %s took %q s, want %q", p, got[p], seconds(want[p]))
		}
	}
	if want[trainingv1alpha1.PhaseReference] == 0 {
		t.Fatal("the ESPO step asked for no reference log-probs: the test does not cover the reference phase")
	}
	if last.Seconds != seconds(total) {
		t.Errorf("step took %s s, want %s (its phases', the clock moving only in them)", last.Seconds, seconds(total))
	}
	if !strings.HasPrefix(last.Dominant, "sampling ") {
		t.Errorf("dominant phase %q, want sampling", last.Dominant)
	}
	if last.Tokens <= 0 || last.TokensPerSecond != fixed(float64(last.Tokens)/total.Seconds(), 1) {
		t.Errorf("%d tokens at %s/s, want the backward pass's tokens over %v", last.Tokens, last.TokensPerSecond, total)
	}
	for _, p := range []string{"sampling", "reference", "backward", "optimizer", "checkpoint"} {
		if !histogramHas(t, reg, "espo", p) {
			t.Errorf("espo_trainer_phase_seconds has no observation of phase %s at stage espo", p)
		}
	}
}

// histogramHas reports whether espo_trainer_phase_seconds in reg has an observation
// with the labels stage and phase.
func histogramHas(t *testing.T, reg *prometheus.Registry, stage, phase string) bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "espo_trainer_phase_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["stage"] == stage && labels["phase"] == phase && m.GetHistogram().GetSampleCount() > 0 {
				return true
			}
		}
	}
	return false
}

// TestSampledTellsTheEnvironmentApart: of the time a source took to give a batch,
// the weight sync the workers reported in the policy's Generate calls is
// weightSync, the rest of those calls sampling, and, in a batch lived through an
// environment, the time outside them the environment's; of recorded episodes, all
// but the weight sync is sampling.
func TestSampledTellsTheEnvironmentApart(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name                              string
		c                                 *Config
		sampling, environment, weightSync time.Duration
	}{
		{"environment", livedConfig(t, trainingv1alpha1.AlgorithmESPO), 700 * ms, 100 * ms, 200 * ms},
		{"recorded", smallConfig(t, trainingv1alpha1.AlgorithmESPO), 800 * ms, 0, 200 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := &timedPolicy{spent: 900 * ms, synced: 200 * ms}
			times := phaseTimes{}
			policy.sampled(times, time.Second, tc.c.Spec.Datasets.Environment != nil)
			got := [3]time.Duration{times[trainingv1alpha1.PhaseSampling], times[trainingv1alpha1.PhaseEnvironment],
				times[trainingv1alpha1.PhaseWeightSync]}
			if want := [3]time.Duration{tc.sampling, tc.environment, tc.weightSync}; got != want {
				t.Errorf("sampling, environment, weight sync %v; want %v", got, want)
			}
			if g, s := policy.take(); g != 0 || s != 0 {
				t.Errorf("the policy's time was not taken: %v, %v left", g, s)
			}
		})
	}
}
