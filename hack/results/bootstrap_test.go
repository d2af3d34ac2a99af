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

package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// coinScores returns the tallies of an arm that gets each of n recommendation
// steps per episode right with probability p, over seeds x episodes.
func coinScores(rng *rand.Rand, seeds, episodes, n int, p float64) scores {
	sc := make(scores, seeds)
	for s := range sc {
		sc[s] = make([][]tally, episodes)
		for e := range sc[s] {
			sc[s][e] = make([]tally, len(metricList))
			for range n {
				sc[s][e][metricRec].den++
				if rng.Float64() < p {
					sc[s][e][metricRec].num++
				}
			}
		}
	}
	return sc
}

func TestPairedBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	same := coinScores(rng, 5, 40, 5, 0.6)
	if iv := pairedBootstrap(same, same, metricRec, 500, 7); iv.diff != 0 || iv.lo != 0 || iv.hi != 0 {
		t.Errorf("an arm against itself: %+v, want exactly 0 [0, 0]", iv)
	}
	right, wrong := coinScores(rng, 5, 40, 5, 1), coinScores(rng, 5, 40, 5, 0)
	if iv := pairedBootstrap(right, wrong, metricRec, 500, 7); iv.diff != 1 || iv.lo != 1 || iv.hi != 1 || !iv.excludesZero() {
		t.Errorf("always right against always wrong: %+v, want 1 [1, 1]", iv)
	}
	better, base := coinScores(rng, 5, 60, 5, 0.75), coinScores(rng, 5, 60, 5, 0.5)
	iv := pairedBootstrap(better, base, metricRec, 2000, 7)
	if !iv.excludesZero() || iv.lo > 0.25 || iv.hi < 0.25 {
		t.Errorf("a 25-point gain over 1,500 steps: %+v, want an interval above 0 that holds 0.25", iv)
	}
	close1, close2 := coinScores(rng, 2, 5, 4, 0.55), coinScores(rng, 2, 5, 4, 0.5)
	if iv := pairedBootstrap(close1, close2, metricRec, 2000, 7); iv.excludesZero() {
		t.Errorf("5 points over 40 steps: %+v, want an interval that holds 0", iv)
	}
	if iv := pairedBootstrap(same, same, metricIntent, 100, 7); !math.IsNaN(iv.diff) || !math.IsNaN(iv.lo) {
		t.Errorf("a metric without trials: %+v, want NaN", iv)
	}
	again := pairedBootstrap(better, base, metricRec, 2000, 7)
	if again != iv {
		t.Errorf("the same seed gave %+v, then %+v", iv, again)
	}
}

func TestPercentileAndMeanStd(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 1: 5, 0.025: 1.1, 0.975: 4.9} {
		if got := percentile(xs, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if m, s := meanStd([]float64{1, math.NaN(), 3}); m != 2 || math.Abs(s-math.Sqrt2) > 1e-12 {
		t.Errorf("meanStd skipping NaN = %v ± %v, want 2 ± sqrt 2", m, s)
	}
	if m, _ := meanStd([]float64{math.NaN()}); !math.IsNaN(m) {
		t.Errorf("meanStd of no values = %v, want NaN", m)
	}
}
