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

	"github.com/espo-dev/espo-operator/espo/internal/losskernel"
)

// KLEstimator names the estimator of KL(pi_theta || pi_ref) per token; with
// d = logp_ref - logp:
//
//	k1  KL = -d                                   dKL/dlogp = 1
//	k2  KL = d^2 / 2                              dKL/dlogp = -d
//	k3  KL = clamp(e^d - d - 1, -10, 10)          dKL/dlogp = 1 - e^d, 0 where clamped
//
// k3 is verl's and EasyR1's "low_var_kl", the default.
type KLEstimator string

// The KL estimators.
const (
	KLK1 KLEstimator = "k1"
	KLK2 KLEstimator = "k2"
	KLK3 KLEstimator = "k3"
)

// Aggregation names how per-token objectives f_t are combined into J over a batch
// of N sequences s with T_s tokens each, T = sum_s T_s:
//
//	token-mean            J = (1/T) sum_s sum_t f_t
//	seq-mean-token-mean   J = (1/N) sum_s (1/T_s) sum_t f_t      (the paper's)
//	seq-mean-token-sum    J = (1/N) sum_s sum_t f_t
//
// N counts every sequence, an empty one adding 0.
type Aggregation string

// The aggregation modes.
const (
	TokenMean        Aggregation = "token-mean"
	SeqMeanTokenMean Aggregation = "seq-mean-token-mean"
	SeqMeanTokenSum  Aggregation = "seq-mean-token-sum"
)

// The clamps of the objective: the log-ratio log rho to [-20, 20] and the k3
// estimator to [-10, 10], as in verl and EasyR1.
const (
	LogRatioClamp = losskernel.LogRatioClamp
	KLClamp       = losskernel.KLClamp
)

// LossConfig holds the parameters of the policy objective; DefaultLossConfig
// returns EasyR1's, which the paper trained with.
type LossConfig struct {
	// EpsLow and EpsHigh clip the ratio to [1 - EpsLow, 1 + EpsHigh].
	EpsLow, EpsHigh float64
	// DualClip is the dual-clip bound c for negative advantages; 0 turns it off.
	DualClip float64
	// Beta weighs the KL penalty.
	Beta float64
	// KL is the KL estimator.
	KL KLEstimator
	// Agg is how token objectives are aggregated.
	Agg Aggregation
	// ISCap is the cap C of the truncated importance weight between the trainer's
	// policy and the engine that sampled the answers (Tokens.SamplerLogP); 0 turns
	// the correction off.
	ISCap float64
}

// DefaultLossConfig returns eps_low 0.2, eps_high 0.3, dual clip 3, beta 0.01, the
// k3 estimator and seq-mean-token-mean aggregation.
func DefaultLossConfig() LossConfig {
	return LossConfig{EpsLow: 0.2, EpsHigh: 0.3, DualClip: 3, Beta: 0.01, KL: KLK3, Agg: SeqMeanTokenMean}
}

// Validate reports whether c is usable: 0 <= EpsLow < 1, EpsHigh >= 0, DualClip 0
// or above 1 + EpsHigh, Beta >= 0 and finite, ISCap 0 or at least 1 and finite, a
// known estimator and aggregation.
func (c LossConfig) Validate() error {
	switch {
	case !(c.EpsLow >= 0 && c.EpsLow < 1):
		return fmt.Errorf("espo: eps_low %v not in [0,1)", c.EpsLow)
	case !(c.EpsHigh >= 0) || !finite(c.EpsHigh):
		return fmt.Errorf("espo: eps_high %v must be non-negative and finite", c.EpsHigh)
	case c.DualClip != 0 && !(c.DualClip > 1+c.EpsHigh):
		return fmt.Errorf("espo: dual clip %v must be 0 (off) or above 1 + eps_high", c.DualClip)
	case !(c.Beta >= 0) || !finite(c.Beta):
		return fmt.Errorf("espo: beta %v must be non-negative and finite", c.Beta)
	}
	if err := c.checkISCap(); err != nil {
		return err
	}
	if _, err := c.codes(); err != nil {
		return err
	}
	return nil
}

// checkISCap reports whether ISCap is 0 (off) or at least 1 and finite.
func (c LossConfig) checkISCap() error {
	if c.ISCap != 0 && !(c.ISCap >= 1 && finite(c.ISCap)) {
		return fmt.Errorf("espo: importance-sampling cap %v must be 0 (off) or at least 1, and finite", c.ISCap)
	}
	return nil
}

// codes returns the kernel's estimator.
func (c LossConfig) codes() (losskernel.Estimator, error) {
	switch c.Agg {
	case TokenMean, SeqMeanTokenMean, SeqMeanTokenSum:
	default:
		return 0, fmt.Errorf("espo: unknown aggregation %q, want token-mean, seq-mean-token-mean or seq-mean-token-sum", c.Agg)
	}
	switch c.KL {
	case KLK1:
		return losskernel.K1, nil
	case KLK2:
		return losskernel.K2, nil
	case KLK3:
		return losskernel.K3, nil
	}
	return 0, fmt.Errorf("espo: unknown KL estimator %q, want k1, k2 or k3", c.KL)
}

// Tokens holds a batch of sampled sequences token by token: the tokens of sequence
// s follow those of sequence s-1, Lens[s] of them.
type Tokens struct {
	// LogP, OldLogP and RefLogP are each token's log-probability under the current
	// policy, the policy that sampled it, and the reference policy. RefLogP may be
	// nil when Beta is 0.
	LogP, OldLogP, RefLogP []float64
	// Entropy is each token's policy entropy, for the statistics; it may be nil.
	Entropy []float64
	// SamplerLogP is each token's log-probability under the engine that sampled it,
	// when that is not the policy whose log-probabilities OldLogP holds (a serving
	// engine such as vLLM); nil when the policy sampled the tokens. With it the
	// weights are corrected by truncated importance sampling (LossConfig.ISCap) and
	// the mismatch is reported (LossStats.SamplerMismatch).
	SamplerLogP []float64
	// Lens holds the number of tokens of each sequence.
	Lens []int
	// Adv holds the advantage of each sequence, A_episode of its candidate.
	Adv []float64
}

// LossStats holds the objective and the statistics trainers report. The fractions
// and means are over all tokens.
type LossStats struct {
	// Objective is J, Surrogate the aggregated clipped surrogate and KL the
	// aggregated KL estimate: Objective = Surrogate - Beta * KL.
	Objective, Surrogate, KL float64
	// ClipFrac is the fraction of tokens whose ratio was clipped (rho > 1 + eps_high
	// with A > 0, rho < 1 - eps_low with A < 0), DualClipFrac of those held at the
	// dual-clip bound (rho > c with A < 0).
	ClipFrac, DualClipFrac float64
	// ApproxKL is the mean of logp_old - logp, verl's ppo_kl.
	ApproxKL float64
	// Entropy is the mean entropy, 0 when none was given.
	Entropy float64
	// SamplerMismatch is the mean of |logp_old - logp_sampler|, ISWeight the mean
	// importance weight before truncation, e^clamp(logp_old - logp_sampler, -20, 20),
	// and ISTruncFrac the fraction of tokens whose weight was truncated to ISCap
	// (0 with ISCap 0); all three 0 without Tokens.SamplerLogP.
	SamplerMismatch, ISWeight, ISTruncFrac float64
	// Tokens is the number of tokens.
	Tokens int
}

// LossWeights writes to dst the derivative of the objective J with respect to each
// token's log-probability, w_t = dJ/dlogp_t, and returns J with statistics. A worker
// that back-propagates sum_t w_t * logp_t (w_t held constant) obtains exactly the
// gradient of J; an optimiser that minimises takes -sum_t w_t * logp_t as its loss.
// With A the advantage of the token's sequence,
//
//	r      = logp - logp_old
//	rho    = exp(clamp(r, -20, 20))
//	L_clip = min(rho*A, clip(rho, 1 - eps_low, 1 + eps_high)*A)
//	         and for A < 0 with dual clip c: max(L_clip, c*A)
//	f      = L_clip - beta * KL(logp, logp_ref)
//	J      = the aggregation of f (see Aggregation)
//
// so that dJ/dlogp_t = a_t * (dL_clip/dlogp_t - beta * dKL/dlogp_t), with a_t the
// token's aggregation coefficient (1/T, 1/(N T_s) or 1/N), dL_clip/dlogp = rho*A
// where the unclipped term is taken and 0 where a clip or a clamp holds (at a tie,
// the unclipped term), and dKL/dlogp as in KLEstimator.
//
// When the tokens were sampled by an engine other than the policy (SamplerLogP
// set) and cfg.ISCap = C > 0, each token's term of J is weighted by its truncated
// importance weight (the TIS of Yao et al. 2025), a constant that is not
// differentiated:
//
//	is = min(exp(clamp(logp_old - logp_sampler, -20, 20)), C)
//	J  = the aggregation of is * f,  so that  dJ/dlogp_t = is_t * a_t * (...)
//
// which makes the gradient an estimate under the policy logp_old though the tokens
// came from the sampler. Surrogate and KL are then weighted too; ClipFrac,
// DualClipFrac and ApproxKL are not. SamplerLogP's statistics (SamplerMismatch,
// ISWeight, ISTruncFrac) are computed whenever it is given, with ISCap 0 too, which
// leaves the weights exactly as without it.
//
// The exponentials are computed to within 3 ulp by a fast routine, the same in J
// and in w, so w is the derivative of the J returned. A NaN in LogP, OldLogP or Adv
// makes its sequence's weights and J NaN; a NaN in RefLogP, or in SamplerLogP with
// ISCap > 0, makes its token's weight and J NaN. On amd64 with AVX2, the default k3
// estimator runs four tokens at a time in an assembly kernel whose results are bit
// for bit those of the Go loop; the build tag purego, or GODEBUG=cpu.avx2=off, keeps
// the Go loop, which the importance-weighted tokens always take.
//
// It returns an error if cfg names an unknown estimator or aggregation, if ISCap is
// neither 0 nor at least 1 and finite, or if SamplerLogP is not nil and not as long
// as LogP; it panics if the other lengths disagree: dst, LogP, OldLogP, RefLogP
// (unless nil with Beta 0) and Entropy (unless nil) of one length equal to the sum
// of Lens, and Adv as long as Lens. It allocates nothing.
func LossWeights(dst []float64, t Tokens, cfg LossConfig) (LossStats, error) {
	est, err := cfg.codes()
	if err != nil {
		return LossStats{}, err
	}
	if err := cfg.checkISCap(); err != nil {
		return LossStats{}, err
	}
	n := len(t.LogP)
	if t.SamplerLogP != nil && len(t.SamplerLogP) != n {
		return LossStats{}, fmt.Errorf("espo: %d sampler log-probabilities for %d tokens", len(t.SamplerLogP), n)
	}
	if len(dst) != n || len(t.OldLogP) != n || len(t.Adv) != len(t.Lens) ||
		(t.RefLogP != nil || cfg.Beta != 0) && len(t.RefLogP) != n ||
		t.Entropy != nil && len(t.Entropy) != n {
		panic("espo: token length mismatch")
	}
	total := 0
	for _, l := range t.Lens {
		if l < 0 {
			panic("espo: negative sequence length")
		}
		total += l
	}
	if total != n {
		panic("espo: sequence lengths do not add up to the tokens")
	}
	lo, hi, c := 1-cfg.EpsLow, 1+cfg.EpsHigh, cfg.DualClip
	if c == 0 {
		c = math.Inf(1)
	}
	if t.RefLogP == nil {
		est = losskernel.NoKL
	}
	correct := t.SamplerLogP != nil && cfg.ISCap > 0
	var st LossStats
	var clipped, dual int64
	var l losskernel.Lanes
	off := 0
	for s, L := range t.Lens {
		if L == 0 {
			continue
		}
		var coef float64
		switch cfg.Agg {
		case TokenMean:
			coef = 1 / float64(n)
		case SeqMeanTokenMean:
			coef = 1 / float64(len(t.Lens)*L)
		default:
			coef = 1 / float64(len(t.Lens))
		}
		// The ratio's unclipped range [lb, ub]: for A > 0, rho above 1 + eps_high is
		// clipped; for A < 0, rho below 1 - eps_low is clipped and rho above c is
		// held at the dual clip.
		A := t.Adv[s]
		lb, ub := 0.0, math.Inf(1)
		if A > 0 {
			ub = hi
		} else if A < 0 {
			lb, ub = lo, c
		}
		l.Reset(A, coef, coef*cfg.Beta, lb, ub)
		w := dst[off : off+L]
		var ref []float64
		if est != losskernel.NoKL {
			ref = t.RefLogP[off : off+L]
		}
		if correct {
			losskernel.TokensIS(w, t.LogP[off:off+L], t.OldLogP[off:off+L], ref, t.SamplerLogP[off:off+L], cfg.ISCap, est, &l)
		} else {
			losskernel.Tokens(w, t.LogP[off:off+L], t.OldLogP[off:off+L], ref, est, &l)
		}
		off += L
		sumQ, sumR, sumK, below, above := l.Sums()
		if math.IsNaN(sumR) || math.IsNaN(A) {
			// A NaN log-probability or advantage makes the sequence's weights and J
			// NaN (the clip above would hide it).
			for i := range w {
				w[i] = math.NaN()
			}
			sumQ = math.NaN()
		}
		if A > 0 {
			clipped += above
		} else if A < 0 {
			clipped += below
			dual += above
		}
		st.Surrogate += coef * A * sumQ
		st.KL += coef * sumK
		st.ApproxKL -= sumR
	}
	st.Objective = st.Surrogate - cfg.Beta*st.KL
	st.Tokens = n
	if n > 0 {
		st.ClipFrac = float64(clipped) / float64(n)
		st.DualClipFrac = float64(dual) / float64(n)
		st.ApproxKL /= float64(n)
		if t.Entropy != nil {
			st.Entropy = mean(t.Entropy)
		}
		if t.SamplerLogP != nil {
			st.SamplerMismatch, st.ISWeight, st.ISTruncFrac = samplerStats(t.OldLogP, t.SamplerLogP, cfg.ISCap)
		}
	}
	return st, nil
}

// samplerStats returns the mean of |old - smp|, the mean importance weight before
// truncation (losskernel.ISWeight) and the fraction of weights above isCap (none
// when isCap is 0), over the tokens; old and smp have one length, not 0.
func samplerStats(old, smp []float64, isCap float64) (mismatch, weight, truncated float64) {
	smp = smp[:len(old)]
	trunc := 0
	for i, o := range old {
		mismatch += math.Abs(o - smp[i])
		is := losskernel.ISWeight(o, smp[i])
		weight += is
		if isCap > 0 && is > isCap {
			trunc++
		}
	}
	n := float64(len(old))
	return mismatch / n, weight / n, float64(trunc) / n
}
