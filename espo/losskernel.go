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

import "math"

// The per-token kernel of LossWeights. Token i of a sequence accumulates into lane
// i mod 4 of lossLanes, in token order, so that the Go loop (lossTokensGo) and the
// AVX2 kernel (lossTokensAVX2, four tokens per instruction) add the same numbers in
// the same order and agree bit for bit. Every product is rounded before it is added
// (float64(x*y)): the compiler may not fuse it into a multiply-add, which the
// assembly does not use either.

// lossLanes holds one sequence's parameters, broadcast to four lanes for the
// assembly, and the per-lane sums the kernel accumulates. Field offsets reach the
// assembly through go_asm.h: keep the fields' types as they are.
type lossLanes struct {
	// A is the sequence's advantage, Coef its aggregation coefficient a_t and KB
	// a_t times beta.
	A, Coef, KB [4]float64
	// LB and UB bound the unclipped ratio.
	LB, UB [4]float64
	// Q sums the clipped ratios, R the log-ratios and K the KL estimates.
	Q, R, K [4]float64
	// Below and Above count the ratios below LB and above UB.
	Below, Above [4]int64
}

// reset sets the parameters of a sequence and zeroes the sums.
func (l *lossLanes) reset(A, coef, kb, lb, ub float64) {
	*l = lossLanes{}
	for j := range 4 {
		l.A[j], l.Coef[j], l.KB[j], l.LB[j], l.UB[j] = A, coef, kb, lb, ub
	}
}

// sums adds up the lanes: (lane 0 + lane 1) + (lane 2 + lane 3).
func (l *lossLanes) sums() (q, r, k float64, below, above int64) {
	add := func(v *[4]float64) float64 { return (v[0] + v[1]) + (v[2] + v[3]) }
	return add(&l.Q), add(&l.R), add(&l.K),
		l.Below[0] + l.Below[1] + l.Below[2] + l.Below[3],
		l.Above[0] + l.Above[1] + l.Above[2] + l.Above[3]
}

// lossTokens computes the weights w of one sequence's tokens (see LossWeights) and
// accumulates its sums into l; est is the KL estimator (1, 2 or 3), 0 for none, in
// which case ref is not read. It uses the AVX2 kernel for k3 where the CPU has it,
// for the tokens up to the last multiple of four, and the Go loop for the rest.
func lossTokens(w, lp, old, ref []float64, est int, l *lossLanes) {
	old, w = old[:len(lp)], w[:len(lp)]
	if est == 3 {
		ref = ref[:len(lp)]
		if n := len(lp) &^ 3; n > 0 && useAVX2 {
			lossTokensVec(&w[0], &lp[0], &old[0], &ref[0], n, l)
			w, lp, old, ref = w[n:], lp[n:], old[n:], ref[n:]
		}
	}
	lossTokensGo(w, lp, old, ref, est, l)
}

// lossTokensGo is the reference kernel: for each token,
//
//	r   = logp - logp_old, rc = clamp(r, -20, 20), rho = e^rc
//	q   = clamp(rho, LB, UB)
//	w   = Coef * (A*rho if q == rho and rc == r, else 0) - KB * dKL/dlogp
//
// and the sums of q, r and KL, the counts of rho < LB and rho > UB.
func lossTokensGo(w, lp, old, ref []float64, est int, l *lossLanes) {
	old, w = old[:len(lp)], w[:len(lp)]
	if est != 0 {
		ref = ref[:len(lp)]
	}
	A, coef, kb, lb, ub := l.A[0], l.Coef[0], l.KB[0], l.LB[0], l.UB[0]
	for i, x := range lp {
		j := i & 3
		r := x - old[i]
		l.R[j] += r
		rc := r
		if -LogRatioClamp > rc {
			rc = -LogRatioClamp
		}
		if LogRatioClamp < rc {
			rc = LogRatioClamp
		}
		rho := exp20(rc)
		q := rho
		if lb > q {
			q = lb
		}
		if ub < q {
			q = ub
		}
		l.Q[j] += q
		var pg float64
		if q == rho && rc == r {
			pg = float64(A * rho)
		}
		if rho < lb {
			l.Below[j]++
		}
		if rho > ub {
			l.Above[j]++
		}
		var k, dk float64
		switch est {
		case 1:
			d := ref[i] - x
			k, dk = -d, 1
		case 2:
			d := ref[i] - x
			k, dk = float64(d*d)/2, -d
		case 3:
			k, dk = klK3(ref[i] - x)
		}
		l.K[j] += k
		w[i] = float64(coef*pg) - float64(kb*dk)
	}
}

// klK3 returns the k3 estimate e^d - d - 1, clamped to KLClamp, and its derivative
// with respect to logp, 1 - e^d, or 0 where the clamp holds. d is first clamped to
// [-12, 3], where exp20 is accurate and outside of which the estimate exceeds
// KLClamp (e^3 - 4 > 10 and e^-12 + 11 > 10), so the clamp still holds there.
func klK3(d float64) (k, dk float64) {
	if -12 > d {
		d = -12
	}
	if 3 < d {
		d = 3
	}
	e := exp20(d)
	k, dk = (e-d)-1, 1-e
	if k > KLClamp {
		k, dk = KLClamp, 0
	}
	return k, dk
}

// The constants of exp20, named for the assembly (see expVectors).
const (
	expShift   = 0x1.8p52 // adding it rounds to an integer held in the low bits
	expInvLn2  = 64 / math.Ln2
	expLn2Hi   = 6.93147180369123816490e-01 / 64 // ln2/64, high part (math's Ln2Hi)
	expLn2Lo   = 1.90821492927058770002e-10 / 64 // ln2/64, low part (math's Ln2Lo)
	expTaylor5 = 1.0 / 120
	expTaylor4 = 1.0 / 24
	expTaylor3 = 1.0 / 6
	expTaylor2 = 1.0 / 2
)

// expTable holds 2^(j/64) for j = 0..63, as bits.
var expTable = func() (t [64]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / 64))
	}
	return t
}()

// exp20 returns e^x for |x| <= 20 (a NaN gives a NaN) to within 3 ulp, about twice
// as fast as math.Exp and small enough to be inlined: x = (64m + j) ln2/64 + r with
// |r| <= ln2/128, and e^x = 2^m 2^(j/64) e^r with e^r from its Taylor polynomial of
// degree 5 (truncation error below 2^-54). Range reduction splits ln2/64 in two
// (Cody and Waite).
func exp20(x float64) float64 {
	kd := float64(x*expInvLn2) + expShift
	k := math.Float64bits(kd)
	kd -= expShift
	r := float64(x-float64(kd*expLn2Hi)) - float64(kd*expLn2Lo)
	t := math.Float64frombits(expTable[k&63] + (k>>6)<<52)
	p := float64(r*expTaylor5) + expTaylor4
	p = float64(r*p) + expTaylor3
	p = float64(r*p) + expTaylor2
	p = float64(r*p) + 1
	p = float64(r * p)
	return t + float64(t*p)
}
