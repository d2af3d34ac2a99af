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

// Package losskernel is the per-token kernel of espo.LossWeights: for each token of
// one sequence, the ratio rho = e^clamp(logp - logp_old, -20, 20), its clip, the KL
// estimate and its derivative, the token's weight dJ/dlogp, and the sums of the
// sequence (see Tokens).
//
// Like gonum's internal/asm, it keeps a Go reference loop and an amd64 assembly
// kernel that does the k3 estimator's work four tokens per AVX2 instruction.
// Which one runs is chosen once, when the package is initialised: the assembly
// where golang.org/x/sys/cpu reports AVX2 (with the operating system saving the
// YMM registers), the Go loop elsewhere, in a build with the tag purego, or with
// GODEBUG=cpu.avx2=off. Token i of a sequence accumulates into lane i mod 4 of
// Lanes, in token order, so that both add the same numbers in the same order and
// agree bit for bit. Every product is rounded before it is added (float64(x*y)):
// the compiler may not fuse it into a multiply-add, which the assembly does not use
// either.
package losskernel

import "math"

// The clamps: the log-ratio log rho to [-LogRatioClamp, LogRatioClamp] and the k3
// estimate to at most KLClamp.
const (
	LogRatioClamp = 20
	KLClamp       = 10
)

// Estimator chooses the KL estimator of Tokens; with d = logp_ref - logp,
// K1 is -d, K2 is d^2/2 and K3 is e^d - d - 1, at most KLClamp.
type Estimator int

// The estimators.
const (
	NoKL Estimator = iota // no KL term; ref is not read
	K1
	K2
	K3
)

// Lanes holds one sequence's parameters, broadcast to four lanes for the
// assembly, and the per-lane sums the kernel accumulates. Field offsets reach the
// assembly through go_asm.h: keep the fields' names and types as they are.
type Lanes struct {
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

// Reset sets the parameters of a sequence and zeroes the sums.
func (l *Lanes) Reset(A, coef, kb, lb, ub float64) {
	*l = Lanes{}
	for j := range 4 {
		l.A[j], l.Coef[j], l.KB[j], l.LB[j], l.UB[j] = A, coef, kb, lb, ub
	}
}

// Sums adds up the lanes, (lane 0 + lane 1) + (lane 2 + lane 3): the sums of the
// clipped ratios q, the log-ratios r and the KL estimates k, and the counts of
// ratios below LB and above UB.
func (l *Lanes) Sums() (q, r, k float64, below, above int64) {
	add := func(v *[4]float64) float64 { return (v[0] + v[1]) + (v[2] + v[3]) }
	return add(&l.Q), add(&l.R), add(&l.K),
		l.Below[0] + l.Below[1] + l.Below[2] + l.Below[3],
		l.Above[0] + l.Above[1] + l.Above[2] + l.Above[3]
}

// useVector reports whether Tokens runs k3Vector, the k3 estimator's tokens four at
// a time. It is set once, when the package is initialised, to whether the build
// and the CPU have a vector kernel; only tests change it (to force the Go loop).
// A flag rather than a function value keeps the call direct, so that escape
// analysis sees that Tokens does not keep l.
var useVector = vectorSupported()

// Tokens computes the weights w of one sequence's tokens, given their
// log-probabilities lp under the policy, old under the sampling policy and ref
// under the reference policy, and adds the sequence's sums to l (set by Reset);
// est chooses the KL estimator, and with NoKL ref is not read. old, w and (unless
// NoKL) ref must be at least as long as lp. For each token, with the parameters
// of l,
//
//	r   = logp - logp_old, rc = clamp(r, -20, 20), rho = e^rc
//	q   = clamp(rho, LB, UB)
//	w   = Coef * (A*rho if q == rho and rc == r, else 0) - KB * dKL/dlogp
//
// and the sums of q, r and KL, the counts of rho < LB and rho > UB. For K3, the
// tokens up to the last multiple of four run in the vector kernel where there is
// one, the rest in the Go loop; the results are the same bit for bit. It allocates
// nothing.
func Tokens(w, lp, old, ref []float64, est Estimator, l *Lanes) {
	old, w = old[:len(lp)], w[:len(lp)]
	if est == K3 {
		ref = ref[:len(lp)]
		if n := len(lp) &^ 3; n > 0 && useVector {
			k3Vector(w[:n], lp[:n], old[:n], ref[:n], l)
			w, lp, old, ref = w[n:], lp[n:], old[n:], ref[n:]
		}
	}
	tokensGo(w, lp, old, ref, nil, 0, est, l)
}

// TokensIS is Tokens with truncated importance sampling: smp holds each token's
// log-probability under the engine that sampled it (at least as long as lp), and
// each token's weight w, clipped ratio q and KL estimate are multiplied by its
// importance weight, a constant,
//
//	is = min(e^clamp(logp_old - logp_smp, -20, 20), isCap)        (ISWeight)
//
// so that the sums of l are those of is*q and is*KL; r and the counts are not
// weighted. isCap must be positive. It runs the Go loop, and allocates nothing.
func TokensIS(w, lp, old, ref, smp []float64, isCap float64, est Estimator, l *Lanes) {
	tokensGo(w, lp, old, ref, smp[:len(lp)], isCap, est, l)
}

// ISWeight returns the importance weight of a token whose log-probability is old
// under the trainer's policy and smp under the engine that sampled it, before its
// truncation: e^clamp(old - smp, -20, 20), the log-ratio clamped as the ratio rho
// is. A NaN gives a NaN.
func ISWeight(old, smp float64) float64 {
	d := old - smp
	if -LogRatioClamp > d {
		d = -LogRatioClamp
	}
	if LogRatioClamp < d {
		d = LogRatioClamp
	}
	return exp20(d)
}

// tokensGo is Tokens in Go, token by token: the reference the vector kernel
// agrees with. With smp not nil it is TokensIS.
func tokensGo(w, lp, old, ref, smp []float64, isCap float64, est Estimator, l *Lanes) {
	old, w = old[:len(lp)], w[:len(lp)]
	if est != NoKL {
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
		case K1:
			d := ref[i] - x
			k, dk = -d, 1
		case K2:
			d := ref[i] - x
			k, dk = float64(d*d)/2, -d
		case K3:
			k, dk = klK3(ref[i] - x)
		}
		wi := float64(coef*pg) - float64(kb*dk)
		if smp != nil {
			is := ISWeight(old[i], smp[i])
			if is > isCap {
				is = isCap
			}
			q, k, wi = float64(is*q), float64(is*k), float64(is*wi)
		}
		l.Q[j] += q
		l.K[j] += k
		w[i] = wi
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
