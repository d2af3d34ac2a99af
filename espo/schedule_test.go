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

package espo

import (
	"math"
	"testing"
)

// TestScheduledRate holds ScheduledRate to values computed by hand from its formulas
// (transformers' schedules) for lr = 0.1, W = 4 warm-up steps and T = 14 steps: the
// warm-up from 0, its boundary, the middle and the last step.
func TestScheduledRate(t *testing.T) {
	const lr, tol = 0.1, 1e-14
	for _, tc := range []struct {
		sched        Schedule
		s, warm, tot int64
		want         float64
	}{
		// the warm-up: lr * s / W for s < W, whatever the schedule
		{ScheduleConstant, 0, 4, 14, 0},
		{ScheduleLinear, 1, 4, 14, 0.025},
		{ScheduleCosine, 3, 4, 14, 0.075},
		// the boundary s = W: the full rate under every schedule
		{ScheduleConstant, 4, 4, 14, 0.1},
		{ScheduleLinear, 4, 4, 14, 0.1}, // (14 - 4) / 10
		{ScheduleCosine, 4, 4, 14, 0.1}, // (1 + cos 0) / 2
		// the middle
		{ScheduleConstant, 9, 4, 14, 0.1},
		{ScheduleLinear, 9, 4, 14, 0.05},                                  // (14 - 9) / 10
		{ScheduleCosine, 9, 4, 14, 0.05},                                  // (1 + cos(pi/2)) / 2
		{ScheduleCosine, 6, 4, 14, 0.1 * (1 + math.Sqrt(5)/4 + 0.25) / 2}, // cos(pi/5) = (1 + sqrt 5) / 4
		// the last step, s = T - 1
		{ScheduleConstant, 13, 4, 14, 0.1},
		{ScheduleLinear, 13, 4, 14, 0.01},                                          // 1 / 10
		{ScheduleCosine, 13, 4, 14, 0.1 * (1 - math.Sqrt((5+math.Sqrt(5))/8)) / 2}, // cos(9 pi / 10) = -sqrt((5 + sqrt 5) / 8)
		// no warm-up: step 0 has the full rate
		{ScheduleConstant, 0, 0, 14, 0.1},
		{ScheduleLinear, 0, 0, 10, 0.1},
		{ScheduleLinear, 9, 0, 10, 0.01},
		{ScheduleCosine, 0, 0, 10, 0.1},
		// a warm-up as long as the run, or longer: it only warms up
		{ScheduleLinear, 13, 14, 14, 0.1 * 13.0 / 14},
		{ScheduleCosine, 13, 20, 14, 0.1 * 13.0 / 20},
		// past the end (never trained): 0 for the decaying schedules, never below
		{ScheduleLinear, 20, 4, 14, 0},
		{ScheduleCosine, 14, 4, 14, 0},
		// an unknown schedule is constant
		{"", 9, 4, 14, 0.1},
	} {
		got := ScheduledRate(lr, tc.sched, tc.s, tc.warm, tc.tot)
		if math.Abs(got-tc.want) > tol || got < 0 {
			t.Errorf("ScheduledRate(%g, %q, s=%d, W=%d, T=%d) = %.17g, want %.17g", lr, tc.sched, tc.s, tc.warm, tc.tot, got, tc.want)
		}
	}
}

// TestScheduledRateNeverRisesAfterTheWarmup: under linear and cosine the rate falls
// step by step after the warm-up, and stays in [0, lr] everywhere.
func TestScheduledRateNeverRisesAfterTheWarmup(t *testing.T) {
	for _, sched := range []Schedule{ScheduleLinear, ScheduleCosine} {
		for _, warm := range []int64{0, 1, 7, 50, 60} {
			const total = 50
			prev := math.Inf(1)
			for s := range int64(total) {
				r := ScheduledRate(2e-5, sched, s, warm, total)
				if r < 0 || r > 2e-5 {
					t.Fatalf("%s, W=%d: step %d has rate %g outside [0, lr]", sched, warm, s, r)
				}
				if s >= warm && r > prev {
					t.Fatalf("%s, W=%d: step %d's rate %g rose from %g", sched, warm, s, r, prev)
				}
				if s >= warm {
					prev = r
				}
			}
		}
	}
}
