//go:build !purego

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

import "golang.org/x/sys/cpu"

// vectorSupported reports whether golang.org/x/sys/cpu reports AVX2, which it does
// only where the operating system also saves the YMM registers; the kernel uses
// AVX and AVX2 instructions, not FMA.
func vectorSupported() bool { return cpu.X86.HasAVX2 }

// expVectors holds the constants of exp20 and klK3, each broadcast to four lanes,
// for the assembly (which reads them through go_asm.h offsets).
type expVectors struct {
	NegRatioClamp, RatioClamp, KLLow, KLHigh, KLClamp, One [4]float64
	InvLn2, Shift, Ln2Hi, Ln2Lo                            [4]float64
	Taylor5, Taylor4, Taylor3, Taylor2                     [4]float64
	Mask63                                                 [4]uint64
}

// vectorConsts are the constants of the AVX2 kernel.
var vectorConsts = func() (c expVectors) {
	for j := range 4 {
		c.NegRatioClamp[j], c.RatioClamp[j] = -LogRatioClamp, LogRatioClamp
		c.KLLow[j], c.KLHigh[j], c.KLClamp[j], c.One[j] = -12, 3, KLClamp, 1
		c.InvLn2[j], c.Shift[j], c.Ln2Hi[j], c.Ln2Lo[j] = expInvLn2, expShift, expLn2Hi, expLn2Lo
		c.Taylor5[j], c.Taylor4[j], c.Taylor3[j], c.Taylor2[j] = expTaylor5, expTaylor4, expTaylor3, expTaylor2
		c.Mask63[j] = 63
	}
	return c
}()

// tokensK3AVX2 is tokensGo for the k3 estimator, four tokens at a time
// (kernel_amd64.s): it reads n tokens (n > 0, a multiple of 4) from lp, old and
// ref, writes their weights to w and adds to the sums of l, token i in lane
// i mod 4; c is &vectorConsts.
//
//go:noescape
func tokensK3AVX2(w, lp, old, ref *float64, n int, l *Lanes, c *expVectors)

// k3Vector runs tokensK3AVX2 over slices of one length, a positive multiple of 4,
// with the package's constants.
func k3Vector(w, lp, old, ref []float64, l *Lanes) {
	tokensK3AVX2(&w[0], &lp[0], &old[0], &ref[0], len(lp), l, &vectorConsts)
}
