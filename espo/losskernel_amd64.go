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

package espo

// useAVX2 reports whether lossTokens may call lossTokensAVX2.
var useAVX2 = hasAVX2()

// hasAVX2 reports whether the CPU has AVX2 and the operating system saves the YMM
// registers: the largest basic CPUID leaf is at least 7, CPUID.1:ECX has OSXSAVE
// (bit 27) and AVX (bit 28), XCR0 enables the XMM and YMM state (bits 1 and 2), and
// CPUID.(EAX=7,ECX=0):EBX has AVX2 (bit 5).
func hasAVX2() bool {
	const (
		osxsave = 1 << 27
		avx     = 1 << 28
		xmmYMM  = 1<<1 | 1<<2
		avx2    = 1 << 5
	)
	if maxLeaf, _, _, _ := cpuid(0, 0); maxLeaf < 7 {
		return false
	}
	if _, _, ecx, _ := cpuid(1, 0); ecx&(osxsave|avx) != osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&xmmYMM != xmmYMM {
		return false
	}
	_, ebx, _, _ := cpuid(7, 0)
	return ebx&avx2 != 0
}

// cpuid executes CPUID with EAX = leaf and ECX = subleaf (cpu_amd64.s).
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// xgetbv returns XCR0, low half in eax (cpu_amd64.s); call it only when CPUID
// reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// expVectors holds the constants of exp20 and klK3, each broadcast to four lanes,
// for the assembly (which reads them through go_asm.h offsets).
type expVectors struct {
	NegRatioClamp, RatioClamp, KLLow, KLHigh, KLClamp, One [4]float64
	InvLn2, Shift, Ln2Hi, Ln2Lo                            [4]float64
	Taylor5, Taylor4, Taylor3, Taylor2                     [4]float64
	Mask63                                                 [4]uint64
}

var lossConsts = func() (c expVectors) {
	for j := range 4 {
		c.NegRatioClamp[j], c.RatioClamp[j] = -LogRatioClamp, LogRatioClamp
		c.KLLow[j], c.KLHigh[j], c.KLClamp[j], c.One[j] = -12, 3, KLClamp, 1
		c.InvLn2[j], c.Shift[j], c.Ln2Hi[j], c.Ln2Lo[j] = expInvLn2, expShift, expLn2Hi, expLn2Lo
		c.Taylor5[j], c.Taylor4[j], c.Taylor3[j], c.Taylor2[j] = expTaylor5, expTaylor4, expTaylor3, expTaylor2
		c.Mask63[j] = 63
	}
	return c
}()

// lossTokensAVX2 is lossTokensGo for the k3 estimator, four tokens at a time: it
// reads n tokens (n > 0, a multiple of 4) from lp, old and ref, writes their
// weights to w and adds to the sums of l, token i in lane i mod 4; c is
// &lossConsts.
//
//go:noescape
func lossTokensAVX2(w, lp, old, ref *float64, n int, l *lossLanes, c *expVectors)

// lossTokensVec runs lossTokensAVX2 with the package's constants.
func lossTokensVec(w, lp, old, ref *float64, n int, l *lossLanes) {
	lossTokensAVX2(w, lp, old, ref, n, l, &lossConsts)
}
