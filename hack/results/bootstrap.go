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
	"slices"
)

// tally is the successes (num) over the trials (den) of one metric on one test
// episode; for operation F1, num is the sum of the F1 of the GUI steps.
type tally struct{ num, den float64 }

// scores holds an arm's tallies of every metric: scores[seed][episode][metric], the
// seeds in the order of -seeds and the test episodes in their order, the same for
// every arm (so that arms can be paired).
type scores [][][]tally

// ratio returns num/den, NaN when den is 0.
func ratio(num, den float64) float64 {
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// seedValue returns metric m of seed s, pooled over its episodes: sum num / sum den.
func (sc scores) seedValue(s, m int) float64 {
	var num, den float64
	for _, ep := range sc[s] {
		num += ep[m].num
		den += ep[m].den
	}
	return ratio(num, den)
}

// seedValues returns metric m of every seed.
func (sc scores) seedValues(m int) []float64 {
	out := make([]float64, len(sc))
	for s := range sc {
		out[s] = sc.seedValue(s, m)
	}
	return out
}

// interval is a difference of two arms and its bootstrap percentile interval.
type interval struct{ diff, lo, hi float64 }

// excludesZero reports whether the interval lies wholly above or below 0.
func (iv interval) excludesZero() bool { return iv.lo > 0 || iv.hi < 0 }

// pairedBootstrap returns the difference of metric m between arms a and b, pooled
// over every seed and test episode,
//
//	diff = sum num_a / sum den - sum num_b / sum den,
//
// with its 95% percentile interval over resamples drawn in two levels: the seeds
// with replacement, then, within each seed drawn, its test episodes with
// replacement. Both arms are read on the same draws (paired), so the interval holds
// the variation of training seeds and of test users, not the spread that the two
// arms share. The draws come from a PCG stream seeded with rngSeed.
func pairedBootstrap(a, b scores, m, resamples int, rngSeed uint64) interval {
	diffOf := func(pick func(yield func(s, e int))) float64 {
		var na, nb, da, db float64
		pick(func(s, e int) {
			ta, tb := a[s][e][m], b[s][e][m]
			na, da = na+ta.num, da+ta.den
			nb, db = nb+tb.num, db+tb.den
		})
		return ratio(na, da) - ratio(nb, db)
	}
	all := func(yield func(s, e int)) {
		for s := range a {
			for e := range a[s] {
				yield(s, e)
			}
		}
	}
	iv := interval{diff: diffOf(all)}
	if math.IsNaN(iv.diff) || resamples < 1 {
		iv.lo, iv.hi = math.NaN(), math.NaN()
		return iv
	}
	rng := rand.New(rand.NewPCG(rngSeed, uint64(m)))
	draws := make([]float64, 0, resamples)
	for range resamples {
		d := diffOf(func(yield func(s, e int)) {
			for range a {
				s := rng.IntN(len(a))
				for range a[s] {
					yield(s, rng.IntN(len(a[s])))
				}
			}
		})
		if !math.IsNaN(d) {
			draws = append(draws, d)
		}
	}
	slices.Sort(draws)
	iv.lo, iv.hi = percentile(draws, 0.025), percentile(draws, 0.975)
	return iv
}

// percentile returns the q-quantile of sorted xs by linear interpolation between
// closest ranks, NaN for no values.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

// meanStd returns the mean and the unbiased standard deviation of the values of xs
// that are not NaN (NaN, NaN for none; std 0 for one).
func meanStd(xs []float64) (mean, std float64) {
	var n float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			mean += x
			n++
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	mean /= n
	if n < 2 {
		return mean, 0
	}
	for _, x := range xs {
		if !math.IsNaN(x) {
			std += (x - mean) * (x - mean)
		}
	}
	return mean, math.Sqrt(std / (n - 1))
}
