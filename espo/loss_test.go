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
	"math/rand/v2"
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
