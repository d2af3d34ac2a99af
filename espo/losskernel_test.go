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
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// kernelInput draws one sequence of n tokens whose log-ratios and reference
// differences fall in every region the kernel treats apart: inside and beyond the
// ratio clamp of 20, inside and beyond the k3 clamp of [-12, 3] and around k = 10,
// infinities and NaNs; and a ratio range [lb, ub] whose ends are hit exactly by
// some tokens' ratios (ties keep the unclipped term).
func kernelInput(rng *rand.Rand, n int) (lp, old, ref []float64, l lossLanes) {
	lp, old, ref = make([]float64, n), make([]float64, n), make([]float64, n)
	rs := []func() float64{
		func() float64 { return rng.NormFloat64() * 0.3 },
		func() float64 { return 19 + 3*rng.Float64() },
		func() float64 { return -22 + 3*rng.Float64() },
		func() float64 { return math.Inf(1) },
		func() float64 { return math.NaN() },
	}
	ds := []func() float64{
		func() float64 { return rng.NormFloat64() },
		func() float64 { return 2 + 2*rng.Float64() },   // k = 10 at d = 2.53
		func() float64 { return -13 + 3*rng.Float64() }, // and at d = -11
		func() float64 { return math.Inf(-1) },
		func() float64 { return math.NaN() },
	}
	weights := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4} // mostly ordinary tokens
	for i := range lp {
		lp[i] = -5 * rng.Float64()
		old[i] = lp[i] - rs[weights[rng.IntN(len(weights))]]()
		ref[i] = lp[i] + ds[weights[rng.IntN(len(weights))]]()
	}
	A := []float64{1.3, -0.7, 0, -2, math.NaN()}[rng.IntN(5)]
	lb, ub := []float64{0, 0.8}[rng.IntN(2)], []float64{1.3, 3, math.Inf(1)}[rng.IntN(3)]
	if n > 0 && rng.IntN(2) == 0 { // a tie at a bound
		i := rng.IntN(n)
		old[i] = lp[i] - rng.NormFloat64()*0.3
		lb = exp20(lp[i] - old[i])
	}
	if n > 0 && rng.IntN(2) == 0 {
		i := rng.IntN(n)
		old[i] = lp[i] - rng.NormFloat64()*0.3
		ub = max(lb, exp20(lp[i]-old[i]))
	}
	l.reset(A, 1/float64(3*max(n, 1)), 0.01/float64(3*max(n, 1)), lb, ub)
	return lp, old, ref, l
}

// same reports whether a and b are the same float64 bits, or both NaN (the
// hardware may carry either operand's NaN payload).
func same(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// TestLossKernelAVX2MatchesGo checks that the AVX2 kernel gives the Go loop's
// weights and lane sums bit for bit, on sequences of every length mod 4 whose
// tokens reach each clamp, tie and NaN.
func TestLossKernelAVX2MatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU or build (purego) has no AVX2 kernel; the Go loop is the only one")
	}
	rng := rand.New(rand.NewPCG(4, 1))
	for trial := range 3000 {
		n := 1 + rng.IntN(41)
		lp, old, ref, l := kernelInput(rng, n)
		want, got := make([]float64, n), make([]float64, n)
		lg, la := l, l
		lossTokensGo(want, lp, old, ref, 3, &lg)
		lossTokens(got, lp, old, ref, 3, &la)
		for i := range want {
			if !same(got[i], want[i]) {
				t.Fatalf("trial %d, token %d of %d (logp %v, old %v, ref %v): weight %v, want %v",
					trial, i, n, lp[i], old[i], ref[i], got[i], want[i])
			}
		}
		for j := range 4 {
			if !same(la.Q[j], lg.Q[j]) || !same(la.R[j], lg.R[j]) || !same(la.K[j], lg.K[j]) ||
				la.Below[j] != lg.Below[j] || la.Above[j] != lg.Above[j] {
				t.Fatalf("trial %d (n %d), lane %d: sums %+v, want %+v", trial, n, j, la, lg)
			}
		}
	}
}

// TestLossTokensEstimators checks the Go loop's KL terms for each estimator on a
// token with d = ref - logp = 0.5: k1 = -d, k2 = d^2/2, k3 = e^d - d - 1, and the
// weight Coef*pg - KB*dKL/dlogp.
func TestLossTokensEstimators(t *testing.T) {
	lp, old, ref := []float64{-1}, []float64{-1}, []float64{-0.5} // rho = 1, unclipped
	for est, want := range map[int][2]float64{
		0: {0, 0},
		1: {-0.5, 1},
		2: {0.125, -0.5},
		3: {math.Exp(0.5) - 1.5, 1 - math.Exp(0.5)},
	} {
		var l lossLanes
		l.reset(2, 0.5, 0.25, 0, math.Inf(1))
		w := make([]float64, 1)
		lossTokens(w, lp, old, ref, est, &l)
		_, _, k, _, _ := l.sums()
		if math.Abs(k-want[0]) > 1e-15 || math.Abs(w[0]-(0.5*2-0.25*want[1])) > 1e-15 {
			t.Errorf("estimator %d: k %v, w %v; want k %v, w %v", est, k, w[0], want[0], 0.5*2-0.25*want[1])
		}
	}
}

// FuzzLossKernelAVX2MatchesGo checks, on any bytes read as the log-probabilities of
// a sequence (three float64 per token: logp, old, ref) and its parameters, that the
// AVX2 kernel and the Go loop agree bit for bit (NaNs up to payload).
func FuzzLossKernelAVX2MatchesGo(f *testing.F) {
	if !useAVX2 {
		f.Skip("this CPU or build (purego) has no AVX2 kernel")
	}
	seed := func(A, lb, ub float64, tokens ...float64) []byte {
		var b []byte
		for _, x := range append([]float64{A, lb, ub}, tokens...) {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	f.Add(seed(1.3, 0, 1.3, -1, -1.1, -0.9, -2, -1.5, -2.2, -0.5, -21, -0.4, -3, -3, 0))
	f.Add(seed(-0.7, 0.8, 3, -1, -1, -1, math.NaN(), -1, -1, -1, 30, -20, -2, math.Inf(1), 5))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v []float64
		for len(data) >= 8 {
			v = append(v, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		if len(v) < 3+12 {
			return
		}
		n := (len(v) - 3) / 3
		var l lossLanes
		l.reset(v[0], 0.25, 0.0025, v[1], v[2])
		lp, old, ref := v[3:3+n], v[3+n:3+2*n], v[3+2*n:3+3*n]
		want, got := make([]float64, n), make([]float64, n)
		lg, la := l, l
		lossTokensGo(want, lp, old, ref, 3, &lg)
		lossTokens(got, lp, old, ref, 3, &la)
		for i := range want {
			if !same(got[i], want[i]) {
				t.Fatalf("token %d (logp %v, old %v, ref %v): weight %v, want %v", i, lp[i], old[i], ref[i], got[i], want[i])
			}
		}
		for j := range 4 {
			if !same(la.Q[j], lg.Q[j]) || !same(la.R[j], lg.R[j]) || !same(la.K[j], lg.K[j]) ||
				la.Below[j] != lg.Below[j] || la.Above[j] != lg.Above[j] {
				t.Fatalf("lane %d: sums %+v, want %+v", j, la, lg)
			}
		}
	})
}
