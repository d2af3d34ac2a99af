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

package losskernel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernelInput draws one sequence of n tokens whose log-ratios and reference
// differences fall in every region the kernel treats apart: inside and beyond the
// ratio clamp of 20, inside and beyond the k3 clamp of [-12, 3] and around k = 10,
// infinities and NaNs; and a ratio range [lb, ub] whose ends are hit exactly by
// some tokens' ratios (ties keep the unclipped term).
func kernelInput(rng *rand.Rand, n int) (lp, old, ref []float64, l Lanes) {
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
	l.Reset(A, 1/float64(3*max(n, 1)), 0.01/float64(3*max(n, 1)), lb, ub)
	return lp, old, ref, l
}

// same reports whether a and b are the same float64 bits, or both NaN (the
// hardware may carry either operand's NaN payload).
func same(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// skipWithoutVector skips a test that compares the vector kernel with the Go loop
// where there is no vector kernel.
func skipWithoutVector(tb testing.TB) {
	tb.Helper()
	if !useVector {
		tb.Skip("this CPU or build (purego) has no vector kernel; the Go loop is the only one")
	}
}

// forceGo makes Tokens run the Go loop alone until the test ends, even where the
// CPU has AVX2.
func forceGo(tb testing.TB) {
	saved := useVector
	useVector = false
	tb.Cleanup(func() { useVector = saved })
}

// vectorVsGo runs the k3 estimator over one sequence through Tokens (with the
// vector kernel where there is one) and through tokensGo, each from the lanes l,
// and describes the first weight or lane sum that differs, or returns "" where
// they agree bit for bit.
func vectorVsGo(lp, old, ref []float64, l Lanes) string {
	n := len(lp)
	want, got := make([]float64, n), make([]float64, n)
	lg, la := l, l
	tokensGo(want, lp, old, ref, nil, 0, K3, &lg)
	Tokens(got, lp, old, ref, K3, &la)
	for i := range want {
		if !same(got[i], want[i]) {
			return fmt.Sprintf("token %d of %d (logp %v, old %v, ref %v): weight %v, want %v",
				i, n, lp[i], old[i], ref[i], got[i], want[i])
		}
	}
	for j := range 4 {
		if !same(la.Q[j], lg.Q[j]) || !same(la.R[j], lg.R[j]) || !same(la.K[j], lg.K[j]) ||
			la.Below[j] != lg.Below[j] || la.Above[j] != lg.Above[j] {
			return fmt.Sprintf("n %d, lane %d: sums %+v, want %+v", n, j, la, lg)
		}
	}
	return ""
}

// TestVectorMatchesGo checks that Tokens with the vector kernel gives the Go
// loop's weights and lane sums bit for bit, on sequences of every length mod 4
// whose tokens reach each clamp, tie and NaN.
func TestVectorMatchesGo(t *testing.T) {
	skipWithoutVector(t)
	rng := rand.New(rand.NewPCG(4, 1))
	for trial := range 3000 {
		n := 1 + rng.IntN(41)
		lp, old, ref, l := kernelInput(rng, n)
		if diff := vectorVsGo(lp, old, ref, l); diff != "" {
			t.Fatalf("trial %d: %s", trial, diff)
		}
	}
}

// TestTokensKnownAnswers checks each estimator's KL sum and weights against the
// formulas computed with math.Exp, on 9 tokens (two blocks of four for the vector
// kernel, one for the Go loop) with rho = 1 and d = ref - logp from -1 to 1, once
// as the package runs and once with the Go loop forced, so that the Go loop is
// checked on a machine with AVX2 too.
func TestTokensKnownAnswers(t *testing.T) {
	const n, A, coef, kb = 9, 2.0, 0.5, 0.25
	lp, old, ref := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range lp {
		lp[i] = -1 - 0.1*float64(i)
		old[i] = lp[i] // rho = 1: unclipped, pg = A
		ref[i] = lp[i] + (-1 + 2*float64(i)/(n-1))
	}
	kl := map[Estimator]func(d float64) (k, dk float64){
		NoKL: func(float64) (float64, float64) { return 0, 0 },
		K1:   func(d float64) (float64, float64) { return -d, 1 },
		K2:   func(d float64) (float64, float64) { return d * d / 2, -d },
		K3:   func(d float64) (float64, float64) { return math.Exp(d) - d - 1, 1 - math.Exp(d) },
	}
	check := func(t *testing.T) {
		for est, f := range kl {
			var l Lanes
			l.Reset(A, coef, kb, 0, math.Inf(1))
			w := make([]float64, n)
			Tokens(w, lp, old, ref, est, &l)
			q, r, k, below, above := l.Sums()
			wantK := 0.0
			for i := range w {
				ki, dk := f(ref[i] - lp[i])
				wantK += ki
				if want := coef*A - kb*dk; math.Abs(w[i]-want) > 1e-15 {
					t.Errorf("estimator %d, token %d: w %v, want %v", est, i, w[i], want)
				}
			}
			if math.Abs(k-wantK) > 1e-14 || q != n || r != 0 || below != 0 || above != 0 {
				t.Errorf("estimator %d: sums q %v r %v k %v below %d above %d; want q %d, r 0, k %v, no clips",
					est, q, r, k, below, above, n, wantK)
			}
		}
	}
	t.Run("as-initialised", check)
	t.Run("go-forced", func(t *testing.T) {
		forceGo(t)
		check(t)
	})
}

// TestTokensReadsOnlyWhatItNeeds checks that Tokens leaves ref unread with NoKL
// (nil is allowed) and writes no weight past len(lp).
func TestTokensReadsOnlyWhatItNeeds(t *testing.T) {
	lp, old := []float64{-1, -2, -3, -4, -5}, []float64{-1, -2, -3, -4, -5}
	w := []float64{7, 7, 7, 7, 7, 7}
	var l Lanes
	l.Reset(1, 1, 0, 0, math.Inf(1))
	Tokens(w, lp, old, nil, NoKL, &l)
	if w[5] != 7 || w[0] != 1 || w[4] != 1 {
		t.Errorf("weights %v, want five 1s and the sixth untouched", w)
	}
}

// TestExp20 checks exp20 against math.Exp over [-20, 20] to within 3 ulp of 1.
func TestExp20(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 400000; i++ {
		x := -20 + 40*float64(i)/400000
		if d := math.Abs(exp20(x)-math.Exp(x)) / math.Exp(x); d > worst {
			worst = d
		}
	}
	if worst > 3*0x1p-52 { // 3 ulp of 1
		t.Errorf("exp20 has a relative error of %v ulp of 1", worst/0x1p-52)
	}
	if !math.IsNaN(exp20(math.NaN())) || exp20(0) != 1 {
		t.Error("exp20 at NaN or 0")
	}
}

// FuzzVectorMatchesGo checks, on any bytes read as the log-probabilities of a
// sequence (three float64 per token: logp, old, ref) and its parameters, that the
// vector kernel and the Go loop agree bit for bit (NaNs up to payload).
func FuzzVectorMatchesGo(f *testing.F) {
	skipWithoutVector(f)
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
		var l Lanes
		l.Reset(v[0], 0.25, 0.0025, v[1], v[2])
		lp, old, ref := v[3:3+n], v[3+n:3+2*n], v[3+2*n:3+3*n]
		if diff := vectorVsGo(lp, old, ref, l); diff != "" {
			t.Fatal(diff)
		}
	})
}

// TestTokensIS checks that TokensIS gives each token the weight of Tokens times its
// truncated importance weight min(ISWeight(old, smp), cap), bit for bit, and the
// lanes the sums of the weighted clipped ratios and KL estimates, on sequences that
// reach every clamp; that a sampler equal to the policy (finite log-probabilities)
// leaves everything as Tokens computes it; and that ISWeight is e^clamp(old - smp, -20, 20) within 3 ulp.
func TestTokensIS(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2))
	equalChecked := 0
	for trial := range 500 {
		n := 1 + rng.IntN(23)
		lp, old, ref, l := kernelInput(rng, n)
		smp := make([]float64, n)
		for i := range smp {
			smp[i] = old[i] - []float64{rng.NormFloat64() * 0.3, 1 + 2*rng.Float64(), 21, -21}[rng.IntN(4)]
		}
		est := Estimator(rng.IntN(4))
		const isCap = 2.0
		want, got := make([]float64, n), make([]float64, n)
		lw, lg := l, l
		Tokens(want, lp, old, ref, est, &lw)
		TokensIS(got, lp, old, ref, smp, isCap, est, &lg)
		for i := range want {
			is := min(ISWeight(old[i], smp[i]), isCap)
			if w := float64(is * want[i]); !same(got[i], w) {
				t.Fatalf("trial %d, token %d: weight %v, want is %v times %v", trial, i, got[i], is, want[i])
			}
		}
		_, rw, _, bw, aw := lw.Sums()
		_, rg, _, bg, ag := lg.Sums()
		if !same(rg, rw) || bg != bw || ag != aw {
			t.Fatalf("trial %d: the log-ratio sum and the counts changed: %v %d %d, want %v %d %d", trial, rg, bg, ag, rw, bw, aw)
		}
		if slices.ContainsFunc(old, func(x float64) bool { return math.IsInf(x, 0) || math.IsNaN(x) }) {
			continue // e^(old - old) is NaN at an infinite old: only finite ones are equal
		}
		equalChecked++
		equal := append([]float64(nil), old...)
		le := l
		TokensIS(got, lp, old, ref, equal, isCap, est, &le)
		lw2 := l
		Tokens(want, lp, old, ref, est, &lw2)
		for i := range want {
			if !same(got[i], want[i]) {
				t.Fatalf("trial %d, token %d: a sampler equal to the policy gives %v, want %v", trial, i, got[i], want[i])
			}
		}
		if qe, re, ke, be, ae := le.Sums(); func() bool {
			q, r, k, b, a := lw2.Sums()
			return !same(qe, q) || !same(re, r) || !same(ke, k) || be != b || ae != a
		}() {
			t.Fatalf("trial %d: a sampler equal to the policy changes the sums", trial)
		}
	}
	if equalChecked < 50 {
		t.Errorf("%d trials with finite log-probabilities, want at least 50", equalChecked)
	}
	for _, d := range []float64{-25, -20, -3, -0.1, 0, 0.1, 3, 20, 25} {
		want := math.Exp(math.Max(-20, math.Min(20, d)))
		if got := ISWeight(d-1, -1); math.Abs(got-want) > 3*0x1p-52*want {
			t.Errorf("ISWeight at log-ratio %v = %v, want %v", d, got, want)
		}
	}
	if !math.IsNaN(ISWeight(math.NaN(), 0)) || ISWeight(-3, -3) != 1 {
		t.Error("ISWeight at NaN or 0")
	}
}
