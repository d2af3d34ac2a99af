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
	"fmt"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// phaseTimes holds the wall time of each phase of one training step, on the
// trainer's clock.
type phaseTimes map[trainingv1alpha1.StepPhase]time.Duration

// timed runs f and adds its wall time on clk to phase p of times.
func timed(clk clock.PassiveClock, times phaseTimes, p trainingv1alpha1.StepPhase, f func() error) error {
	start := clk.Now()
	err := f()
	times[p] += clk.Since(start)
	return err
}

// timedPolicy is the Policy the experience source samples with: the gang, the wall
// time of its Generate calls added up, and of that the time its workers spent
// copying weights into their sampling engines, so that a step's sampling, weight
// sync and environment calls are told apart.
type timedPolicy struct {
	gang  *worker.Gang
	clock clock.PassiveClock
	// spent is the time Generate took since the last take, synced the gang's weight
	// sync in those calls.
	spent, synced time.Duration
}

func (p *timedPolicy) Generate(ctx context.Context, reqs []worker.Rollouts) ([][]worker.Sample, error) {
	start, before := p.clock.Now(), p.gang.WeightSyncTime()
	defer func() {
		p.spent += p.clock.Since(start)
		p.synced += p.gang.WeightSyncTime() - before
	}()
	return p.gang.Generate(ctx, reqs)
}

// take returns the time Generate took and the weight sync in it since the last
// take, and starts again.
func (p *timedPolicy) take() (generate, synced time.Duration) {
	generate, synced = p.spent, p.synced
	p.spent, p.synced = 0, 0
	return generate, synced
}

// sampled adds to times the wall time took of a call to the source that sampled
// (or, for SFT, prepared) a batch, and takes the policy's time: the weight sync of
// the policy's Generate calls is weightSync, the rest of them sampling; the rest of
// took, in a batch lived through an environment (lived), is the environment's
// Reset and Step calls, and otherwise sampling too (the source's bookkeeping).
func (p *timedPolicy) sampled(times phaseTimes, took time.Duration, lived bool) {
	generate, synced := p.take()
	synced = min(synced, generate)
	times[trainingv1alpha1.PhaseWeightSync] += synced
	if !lived {
		times[trainingv1alpha1.PhaseSampling] += max(took-synced, 0)
		return
	}
	times[trainingv1alpha1.PhaseSampling] += generate - synced
	times[trainingv1alpha1.PhaseEnvironment] += max(took-generate, 0)
}

// stepTimes returns the status of step's times: its wall time took, the phases
// that took any time, the dominant phase with its share, and the tokens trained on
// per second.
func stepTimes(step int64, took time.Duration, times phaseTimes, tokens int64) *trainingv1alpha1.StepTimes {
	st := &trainingv1alpha1.StepTimes{Step: step, Seconds: seconds(took), Tokens: tokens}
	var dominant trainingv1alpha1.StepPhase
	for _, p := range trainingv1alpha1.StepPhases {
		d := times[p]
		if d <= 0 {
			continue
		}
		st.Phases = append(st.Phases, trainingv1alpha1.PhaseTime{Phase: p, Seconds: seconds(d)})
		if dominant == "" || d > times[dominant] {
			dominant = p
		}
	}
	if took > 0 {
		if dominant != "" {
			st.Dominant = fmt.Sprintf("%s %.0f%%", dominant, 100*times[dominant].Seconds()/took.Seconds())
		}
		st.TokensPerSecond = fixed(float64(tokens)/took.Seconds(), 1)
	}
	return st
}

// seconds returns d in seconds with millisecond precision, as status shows it.
func seconds(d time.Duration) trainingv1alpha1.Decimal { return fixed(d.Seconds(), 3) }

// fixed writes v with digits digits after the point, never with an exponent.
func fixed(v float64, digits int) trainingv1alpha1.Decimal {
	return trainingv1alpha1.Decimal(strconv.FormatFloat(v, 'f', digits, 64))
}
