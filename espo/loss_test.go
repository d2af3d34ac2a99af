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
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// refObjective computes J as verl and EasyR1 write it, with losses to minimise:
//
//	pg1 = -A rho, pg2 = -A clip(rho, 1-eps_low, 1+eps_high), c1 = max(pg1, pg2)
//	pg3 = -A c,   c2 = min(pg3, c1),   loss = c2 if A < 0 else c1
//
// and J = aggregate(-loss - beta KL), KL by the estimator; k3 clamps ref - logp to
// [-20, 20] before the exponential, as EasyR1 does. It also returns the fraction of
// tokens where pg2 > pg1 and where A < 0 and c1 > pg3 (verl's clip fractions), and
// each token's terms of J: the surrogate's in pg, the KL penalty's in kl.
func refObjective(tk Tokens, cfg LossConfig) (j, clipFrac, dualFrac float64, pg, kl []float64) {
	clamp := func(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
	c := cfg.DualClip
	if c == 0 {
		c = math.Inf(1)
	}
	off, n := 0, len(tk.LogP)
	for s, l := range tk.Lens {
		A := tk.Adv[s]
		var coef float64
		switch cfg.Agg {
		case TokenMean:
			coef = 1 / float64(n)
		case SeqMeanTokenMean:
			coef = 1 / float64(l) / float64(len(tk.Lens))
		case SeqMeanTokenSum:
			coef = 1 / float64(len(tk.Lens))
		}
		for t := off; t < off+l; t++ {
			lp := tk.LogP[t]
			rho := math.Exp(clamp(lp-tk.OldLogP[t], -20, 20))
			pg1, pg2 := -A*rho, -A*clamp(rho, 1-cfg.EpsLow, 1+cfg.EpsHigh)
			c1 := math.Max(pg1, pg2)
			loss := c1
			if A < 0 {
				loss = math.Min(-A*c, c1)
			}
			if pg2 > pg1 {
				clipFrac++
			}
			if A < 0 && c1 > -A*c {
				dualFrac++
			}
			var k float64
			switch cfg.KL {
			case KLK1:
				k = lp - tk.RefLogP[t]
			case KLK2:
				k = 0.5 * (lp - tk.RefLogP[t]) * (lp - tk.RefLogP[t])
			case KLK3:
				d := clamp(tk.RefLogP[t]-lp, -20, 20)
				k = clamp(math.Exp(d)-d-1, -10, 10)
			}
			pg = append(pg, -coef*loss)
			kl = append(kl, -coef*cfg.Beta*k)
			j += coef * (-loss - cfg.Beta*k)
		}
		off += l
	}
	return j, clipFrac / float64(n), dualFrac / float64(n), pg, kl
}

// randomTokens returns sequences whose tokens lie in every region of the objective,
// away from its kinks: ratio inside the clip range, above 1 + eps_high, below
// 1 - eps_low, above the dual clip 3, beyond the log-ratio clamp of 20; and
// ref - logp inside and beyond the k3 clamp (e^d - d - 1 = 10 at d = 2.53, -11).
func randomTokens(rng *rand.Rand, seqs int) Tokens {
	regions := [][2]float64{{-0.2, 0.24}, {0.3, 0.95}, {-3, -0.25}, {1.2, 3}, {21, 30}, {-30, -21}}
	var tk Tokens
	for s := range seqs {
		l := rng.IntN(6)
		if s == 0 {
			l = 3
		}
		tk.Lens = append(tk.Lens, l)
		tk.Adv = append(tk.Adv, []float64{1.3, -0.7, 0, 0.2, -2}[rng.IntN(5)])
		for range l {
			lp := -rng.Float64() * 5
			reg := regions[rng.IntN(len(regions))]
			r := reg[0] + rng.Float64()*(reg[1]-reg[0])
			d := []float64{-2 + 4*rng.Float64(), 3 + rng.Float64(), -15 + 2*rng.Float64()}[rng.IntN(3)]
			tk.LogP = append(tk.LogP, lp)
			tk.OldLogP = append(tk.OldLogP, lp-r)
			tk.RefLogP = append(tk.RefLogP, lp+d)
			tk.Entropy = append(tk.Entropy, rng.Float64())
		}
	}
	return tk
}

// TestLossWeightsFiniteDifference checks that each weight is dJ/dlogp_t by central
// differences of refObjective, for every estimator and aggregation, with the dual
// clip on and off, and that J and the clip fractions agree with verl's.
func TestLossWeightsFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tk := randomTokens(rng, 60)
	dst := make([]float64, len(tk.LogP))
	for _, kl := range []KLEstimator{KLK1, KLK2, KLK3} {
		for _, agg := range []Aggregation{TokenMean, SeqMeanTokenMean, SeqMeanTokenSum} {
			for _, dual := range []float64{3, 0} {
				cfg := LossConfig{EpsLow: 0.2, EpsHigh: 0.3, DualClip: dual, Beta: 0.1, KL: kl, Agg: agg}
				st, err := LossWeights(dst, tk, cfg)
				if err != nil {
					t.Fatal(err)
				}
				j, clip, dualFrac, _, _ := refObjective(tk, cfg)
				if math.Abs(st.Objective-j) > 1e-12*math.Max(1, math.Abs(j)) || st.Surrogate-cfg.Beta*st.KL != st.Objective {
					t.Errorf("%s %s dual %v: J = %v (%v - beta %v), want %v", kl, agg, dual, st.Objective, st.Surrogate, st.KL, j)
				}
				if st.ClipFrac != clip || st.DualClipFrac != dualFrac || (dual != 0) != (dualFrac > 0) || clip == 0 {
					t.Errorf("%s %s dual %v: clip fractions %v, %v; want %v, %v", kl, agg, dual, st.ClipFrac, st.DualClipFrac, clip, dualFrac)
				}
				// Only token i's terms of J depend on logp_i; differencing those terms
				// apart avoids the cancellation of the large terms of clamped ratios.
				const step = 1e-6
				for i := range tk.LogP {
					lp := tk.LogP[i]
					tk.LogP[i] = lp + step
					_, _, _, pgp, klp := refObjective(tk, cfg)
					tk.LogP[i] = lp - step
					_, _, _, pgm, klm := refObjective(tk, cfg)
					tk.LogP[i] = lp
					fd := (pgp[i]-pgm[i])/(2*step) + (klp[i]-klm[i])/(2*step)
					if math.Abs(fd-dst[i]) > 1e-9+1e-6*math.Abs(fd) {
						t.Errorf("%s %s dual %v: token %d (r %.3g, d %.3g): weight %v, finite difference %v",
							kl, agg, dual, i, lp-tk.OldLogP[i], tk.RefLogP[i]-lp, dst[i], fd)
					}
				}
			}
		}
	}
}

// TestLossWeightsGolden works tokens out by hand with the defaults (eps_low .2,
// eps_high .3, dual clip 3, beta .01, k3) and token-mean over 4 tokens (a = 1/4).
func TestLossWeightsGolden(t *testing.T) {
	ln := math.Log
	tk := Tokens{
		// t0: rho 1.1, A 2: unclipped, L = 2.2, dL = 2.2; ref = logp: KL 0, dKL 0.
		// t1: rho 1.5, A 2: clipped at 1.3, L = 2.6, dL = 0; d = ln 2: KL = 2 - ln 2 - 1
		//     = .306853, dKL = 1 - 2 = -1.
		// t2: rho 0.5, A -1: clipped at .8, L = -.8, dL = 0; ref = logp.
		// t3: rho 4, A -1: dual clip, L = -3, dL = 0; d = ln .5: KL = .5 + ln 2 - 1
		//     = .193147, dKL = 1 - .5 = .5.
		LogP:    []float64{-1, -1, -2, -2},
		OldLogP: []float64{-1 - ln(1.1), -1 - ln(1.5), -2 - ln(0.5), -2 - ln(4)},
		RefLogP: []float64{-1, -1 + ln(2), -2, -2 + ln(0.5)},
		Lens:    []int{2, 2},
		Adv:     []float64{2, -1},
	}
	cfg := DefaultLossConfig()
	cfg.Agg = TokenMean
	dst := make([]float64, 4)
	st, err := LossWeights(dst, tk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// w = a (dL - beta dKL): t0 2.2/4 = .55; t1 (0 + .01)/4 = .0025; t2 0;
	// t3 (0 - .005)/4 = -.00125.
	want := []float64{.55, .0025, 0, -.00125}
	for i := range want {
		if math.Abs(dst[i]-want[i]) > 1e-12 {
			t.Errorf("weight %d = %v, want %v", i, dst[i], want[i])
		}
	}
	// J = (2.2 + 2.6 - .8 - 3)/4 - .01 (.306853 + .193147)/4 = .25 - .00125 = .24875.
	// Approx KL = mean(old - logp) = -(ln 1.1 + ln 1.5 + ln .5 + ln 4)/4 = -ln(3.3)/4.
	if math.Abs(st.Objective-.24875) > 1e-12 || math.Abs(st.Surrogate-.25) > 1e-12 || math.Abs(st.KL-.125) > 1e-12 ||
		st.ClipFrac != .5 || st.DualClipFrac != .25 || math.Abs(st.ApproxKL+ln(3.3)/4) > 1e-12 || st.Tokens != 4 || st.Entropy != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestLossWeightsContract(t *testing.T) {
	tk := randomTokens(rand.New(rand.NewPCG(5, 6)), 10)
	n := len(tk.LogP)
	dst := make([]float64, n)
	cfg := DefaultLossConfig()
	st, err := LossWeights(dst, tk, cfg)
	if err != nil || math.Abs(st.Entropy-mean(tk.Entropy)) > 1e-15 {
		t.Errorf("entropy %v, %v", st.Entropy, err)
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = LossWeights(dst, tk, cfg) }); n != 0 {
		t.Errorf("LossWeights allocates %v times", n)
	}
	// Beta 0 needs no reference log-probabilities and no entropies.
	noRef := tk
	noRef.RefLogP, noRef.Entropy = nil, nil
	cfg0 := cfg
	cfg0.Beta = 0
	if _, err := LossWeights(dst, noRef, cfg0); err != nil {
		t.Error(err)
	}
	bad := cfg
	bad.KL = "kl"
	if _, err := LossWeights(dst, tk, bad); err == nil {
		t.Error("unknown estimator accepted")
	}
	for name, f := range map[string]func(){
		"dst": func() { _, _ = LossWeights(dst[1:], tk, cfg) },
		"ref": func() { _, _ = LossWeights(dst, noRef, cfg) },
		"lens": func() {
			t2 := tk
			t2.Lens = append([]int{1}, tk.Lens...)
			t2.Adv = append([]float64{1}, tk.Adv...)
			_, _ = LossWeights(dst, t2, cfg)
		},
		"adv":     func() { t2 := tk; t2.Adv = tk.Adv[1:]; _, _ = LossWeights(dst, t2, cfg) },
		"entropy": func() { t2 := tk; t2.Entropy = tk.Entropy[1:]; _, _ = LossWeights(dst, t2, cfg) },
		"negative": func() {
			t2 := tk
			t2.Lens = append([]int{-1, 1}, tk.Lens...)
			t2.Adv = append([]float64{1, 1}, tk.Adv...)
			_, _ = LossWeights(dst, t2, cfg)
		},
	} {
		if !panics(f) {
			t.Errorf("%s: no panic on a length mismatch", name)
		}
	}
	// A NaN log-probability makes its sequence's weights and J NaN.
	nan := Tokens{LogP: []float64{-1, math.NaN(), -1}, OldLogP: []float64{-1, -1, -1}, RefLogP: []float64{-1, -1, -1},
		Lens: []int{2, 1}, Adv: []float64{1, 1}}
	w := make([]float64, 3)
	if st, _ := LossWeights(w, nan, cfg); !math.IsNaN(w[0]) || !math.IsNaN(w[1]) || math.IsNaN(w[2]) || !math.IsNaN(st.Objective) {
		t.Errorf("NaN input: weights %v, J %v", w, st.Objective)
	}
	if st, err := LossWeights(nil, Tokens{}, cfg); err != nil || st != (LossStats{}) {
		t.Errorf("empty batch: %+v, %v", st, err)
	}
}

// samplerTokens returns tk's sampler log-probabilities: logp_old minus a log-ratio
// d = logp_old - logp_sampler from each region the correction treats apart: a small
// mismatch, a weight below 1, a weight above the cap of 2 (truncated), and log-ratios
// beyond the clamp of 20 either way.
func samplerTokens(rng *rand.Rand, tk Tokens) []float64 {
	regions := [][2]float64{{-0.05, 0.05}, {-1.5, -0.2}, {0.2, 0.6}, {0.8, 3}, {21, 25}, {-25, -21}}
	smp := make([]float64, len(tk.OldLogP))
	for i, old := range tk.OldLogP {
		reg := regions[rng.IntN(len(regions))]
		smp[i] = old - (reg[0] + rng.Float64()*(reg[1]-reg[0]))
	}
	return smp
}

// refISWeights computes, with math.Exp, each token's importance weight before and
// after truncation at isCap (0: none).
func refISWeights(tk Tokens, isCap float64) (raw, truncated []float64) {
	for i, old := range tk.OldLogP {
		d := math.Max(-20, math.Min(20, old-tk.SamplerLogP[i]))
		w := math.Exp(d)
		raw = append(raw, w)
		if isCap > 0 {
			w = math.Min(w, isCap)
		}
		truncated = append(truncated, w)
	}
	return raw, truncated
}

// TestLossWeightsImportanceSampling checks, for every estimator and aggregation,
// that with SamplerLogP and ISCap 2 each weight is is_t * dJ/dlogp_t by central
// differences of refObjective's token terms, with is_t = min(e^(old - sampler), 2)
// computed in the test; that J is the is-weighted sum of those terms; that the clip
// statistics are those of the uncorrected objective; and that the mismatch
// statistics are the test's own means.
func TestLossWeightsImportanceSampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tk := randomTokens(rng, 60)
	tk.SamplerLogP = samplerTokens(rng, tk)
	raw, is := refISWeights(tk, 2)
	n := len(tk.LogP)
	var wantMismatch, wantWeight, wantTrunc float64
	for i := range n {
		wantMismatch += math.Abs(tk.OldLogP[i]-tk.SamplerLogP[i]) / float64(n)
		wantWeight += raw[i] / float64(n)
		if raw[i] > 2 {
			wantTrunc++
		}
	}
	wantTrunc /= float64(n)
	if wantTrunc == 0 || wantTrunc == 1 {
		t.Fatalf("truncated fraction %v: the tokens do not reach both sides of the cap", wantTrunc)
	}
	dst, plain := make([]float64, n), make([]float64, n)
	for _, kl := range []KLEstimator{KLK1, KLK2, KLK3} {
		for _, agg := range []Aggregation{TokenMean, SeqMeanTokenMean, SeqMeanTokenSum} {
			cfg := LossConfig{EpsLow: 0.2, EpsHigh: 0.3, DualClip: 3, Beta: 0.1, KL: kl, Agg: agg, ISCap: 2}
			st, err := LossWeights(dst, tk, cfg)
			if err != nil {
				t.Fatal(err)
			}
			noIS := tk
			noIS.SamplerLogP = nil
			pst, err := LossWeights(plain, noIS, cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, pg, klt := refObjective(tk, cfg)
			j := 0.0
			for i := range n {
				j += is[i] * (pg[i] + klt[i])
			}
			if math.Abs(st.Objective-j) > 1e-12*math.Max(1, math.Abs(j)) || st.Surrogate-cfg.Beta*st.KL != st.Objective {
				t.Errorf("%s %s: J = %v (%v - beta %v), want %v", kl, agg, st.Objective, st.Surrogate, st.KL, j)
			}
			if st.ClipFrac != pst.ClipFrac || st.DualClipFrac != pst.DualClipFrac || st.ApproxKL != pst.ApproxKL || st.Tokens != n {
				t.Errorf("%s %s: clip statistics %+v, want the uncorrected %+v", kl, agg, st, pst)
			}
			if math.Abs(st.SamplerMismatch-wantMismatch) > 1e-12 || math.Abs(st.ISWeight-wantWeight) > 1e-12*wantWeight || st.ISTruncFrac != wantTrunc {
				t.Errorf("%s %s: mismatch %v, weight %v, truncated %v; want %v, %v, %v",
					kl, agg, st.SamplerMismatch, st.ISWeight, st.ISTruncFrac, wantMismatch, wantWeight, wantTrunc)
			}
			const step = 1e-6
			for i := range tk.LogP {
				lp := tk.LogP[i]
				tk.LogP[i] = lp + step
				_, _, _, pgp, klp := refObjective(tk, cfg)
				tk.LogP[i] = lp - step
				_, _, _, pgm, klm := refObjective(tk, cfg)
				tk.LogP[i] = lp
				fd := is[i] * ((pgp[i]-pgm[i])/(2*step) + (klp[i]-klm[i])/(2*step))
				if math.Abs(fd-dst[i]) > 1e-9+1e-6*math.Abs(fd) {
					t.Errorf("%s %s: token %d (is %v): weight %v, finite difference %v", kl, agg, i, is[i], dst[i], fd)
				}
				if math.Abs(dst[i]-is[i]*plain[i]) > 1e-14*math.Abs(plain[i]) {
					t.Errorf("%s %s: token %d: weight %v, want is %v times the uncorrected %v", kl, agg, i, dst[i], is[i], plain[i])
				}
			}
		}
	}
}

// TestLossWeightsImportanceSamplingGolden works two tokens out by hand: token-mean,
// no KL, A = 1 and rho = 1, so each uncorrected weight is 1/2; logp_old -
// logp_sampler is ln 1.5 and ln 3, so with the cap 2 the weights are 1.5 and 2 (the
// second truncated).
func TestLossWeightsImportanceSamplingGolden(t *testing.T) {
	ln := math.Log
	tk := Tokens{LogP: []float64{-1, -2}, OldLogP: []float64{-1, -2}, SamplerLogP: []float64{-1 - ln(1.5), -2 - ln(3)},
		Lens: []int{2}, Adv: []float64{1}}
	cfg := LossConfig{EpsLow: 0.2, EpsHigh: 0.3, KL: KLK3, Agg: TokenMean, ISCap: 2}
	dst := make([]float64, 2)
	st, err := LossWeights(dst, tk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// w = is * a * A: .75 and 1. J = (1.5 + 2)/2 = 1.75. Mismatch (ln 1.5 + ln 3)/2,
	// weight (1.5 + 3)/2 = 2.25, half the tokens truncated.
	if math.Abs(dst[0]-0.75) > 1e-15 || math.Abs(dst[1]-1) > 1e-15 {
		t.Errorf("weights %v, want [0.75 1]", dst)
	}
	if math.Abs(st.Objective-1.75) > 1e-15 || math.Abs(st.SamplerMismatch-(ln(1.5)+ln(3))/2) > 1e-15 ||
		math.Abs(st.ISWeight-2.25) > 1e-15 || st.ISTruncFrac != 0.5 {
		t.Errorf("stats %+v", st)
	}
}

// TestLossWeightsImportanceSamplingLeavesWeights: ISCap 0 with SamplerLogP, and
// SamplerLogP equal to OldLogP with any cap, give exactly the weights and J of no
// SamplerLogP; ISCap 0 still reports the mismatch, and truncates nothing.
func TestLossWeightsImportanceSamplingLeavesWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tk := randomTokens(rng, 40)
	n := len(tk.LogP)
	want, got := make([]float64, n), make([]float64, n)
	cfg := DefaultLossConfig()
	wst, err := LossWeights(want, tk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, st LossStats) {
		t.Helper()
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s: token %d: weight %v, want %v exactly", name, i, got[i], want[i])
			}
		}
		if st.Objective != wst.Objective || st.Surrogate != wst.Surrogate || st.KL != wst.KL || st.ClipFrac != wst.ClipFrac {
			t.Errorf("%s: stats %+v, want %+v", name, st, wst)
		}
	}

	off := tk
	off.SamplerLogP = samplerTokens(rng, tk)
	st, err := LossWeights(got, off, cfg)
	if err != nil {
		t.Fatal(err)
	}
	same("cap 0", st)
	if st.SamplerMismatch <= 0.1 || st.ISWeight <= 0 || st.ISTruncFrac != 0 {
		t.Errorf("cap 0: mismatch %v, weight %v, truncated %v; want the mismatch reported and nothing truncated",
			st.SamplerMismatch, st.ISWeight, st.ISTruncFrac)
	}

	equal := tk
	equal.SamplerLogP = append([]float64(nil), tk.OldLogP...)
	for _, isCap := range []float64{1, 2, 5} {
		c := cfg
		c.ISCap = isCap
		st, err := LossWeights(got, equal, c)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("equal log-probs, cap %v", isCap), st)
		if st.SamplerMismatch != 0 || st.ISWeight != 1 || st.ISTruncFrac != 0 {
			t.Errorf("equal log-probs: mismatch %v, weight %v, truncated %v; want 0, 1, 0", st.SamplerMismatch, st.ISWeight, st.ISTruncFrac)
		}
	}
}

// TestLossWeightsImportanceSamplingContract: a SamplerLogP of another length and a
// bad cap are errors, not panics; a NaN sampler log-probability makes its token's
// weight and J NaN when the correction is on; nothing is allocated.
func TestLossWeightsImportanceSamplingContract(t *testing.T) {
	tk := randomTokens(rand.New(rand.NewPCG(11, 12)), 10)
	n := len(tk.LogP)
	dst := make([]float64, n)
	cfg := DefaultLossConfig()
	cfg.ISCap = 2
	for _, smp := range [][]float64{make([]float64, n-1), make([]float64, n+1), {}} {
		t2 := tk
		t2.SamplerLogP = smp
		if _, err := LossWeights(dst, t2, cfg); err == nil || !strings.Contains(err.Error(), "sampler log-probabilities") {
			t.Errorf("%d sampler log-probs for %d tokens: %v, want an error", len(smp), n, err)
		}
	}
	for _, isCap := range []float64{0.5, -1, math.NaN(), math.Inf(1)} {
		c := cfg
		c.ISCap = isCap
		if _, err := LossWeights(dst, tk, c); err == nil {
			t.Errorf("cap %v accepted", isCap)
		}
	}
	nan := Tokens{LogP: []float64{-1, -1, -1}, OldLogP: []float64{-1, -1, -1}, RefLogP: []float64{-1, -1, -1},
		SamplerLogP: []float64{-1, math.NaN(), -1}, Lens: []int{3}, Adv: []float64{1}}
	w := make([]float64, 3)
	if st, _ := LossWeights(w, nan, cfg); math.IsNaN(w[0]) || !math.IsNaN(w[1]) || math.IsNaN(w[2]) || !math.IsNaN(st.Objective) || !math.IsNaN(st.SamplerMismatch) {
		t.Errorf("NaN sampler log-prob: weights %v, J %v, mismatch %v", w, st.Objective, st.SamplerMismatch)
	}
	tk.SamplerLogP = samplerTokens(rand.New(rand.NewPCG(1, 2)), tk)
	if a := testing.AllocsPerRun(10, func() { _, _ = LossWeights(dst, tk, cfg) }); a != 0 {
		t.Errorf("LossWeights with SamplerLogP allocates %v times", a)
	}
}
