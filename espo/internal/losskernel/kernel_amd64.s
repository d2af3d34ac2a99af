// Copyright 2026 The espo-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//go:build !purego

#include "textflag.h"
#include "go_asm.h"

// Operand order is Go's: VOP src2, src1, dst computes dst = src1 OP src2;
// VMAXPD b, a, d is d = a > b ? a : b and VMINPD b, a, d is d = a < b ? a : b, so a
// NaN in b comes through, as in the Go loop's "if a > x { x = a }".

// EXP sets y to exp20(x) in each lane (see exp20): t1 = x*64/ln2 + shift holds k in
// its low bits; r = x - kd*ln2hi/64 - kd*ln2lo/64 (t3); t = expTable[k&63] +
// (k>>6)<<52 (y); p = Horner's r(1 + r(1/2 + r(1/6 + r(1/24 + r/120)))); y = t + t*p.
// R9 holds &expTable and R10 the constants; t1..t4 are clobbered; y, t2 and t4 must
// be distinct registers (VPGATHERQQ).
#define EXP(x, y, t1, t2, t3, t4) \
	VMULPD     expVectors_InvLn2(R10), x, t1;  \
	VADDPD     expVectors_Shift(R10), t1, t1;  \
	VSUBPD     expVectors_Shift(R10), t1, t2;  \
	VMULPD     expVectors_Ln2Hi(R10), t2, t3;  \
	VSUBPD     t3, x, t3;                      \
	VMULPD     expVectors_Ln2Lo(R10), t2, t2;  \
	VSUBPD     t2, t3, t3;                     \
	VPAND      expVectors_Mask63(R10), t1, t2; \
	VPSRLQ     $6, t1, t1;                     \
	VPSLLQ     $52, t1, t1;                    \
	VPCMPEQQ   t4, t4, t4;                     \
	VPGATHERQQ t4, (R9)(t2*8), y;              \
	VPADDQ     t1, y, y;                       \
	VMULPD     expVectors_Taylor5(R10), t3, t1; \
	VADDPD     expVectors_Taylor4(R10), t1, t1; \
	VMULPD     t3, t1, t1;                     \
	VADDPD     expVectors_Taylor3(R10), t1, t1; \
	VMULPD     t3, t1, t1;                     \
	VADDPD     expVectors_Taylor2(R10), t1, t1; \
	VMULPD     t3, t1, t1;                     \
	VADDPD     expVectors_One(R10), t1, t1;    \
	VMULPD     t3, t1, t1;                     \
	VMULPD     t1, y, t1;                      \
	VADDPD     t1, y, y

// func tokensK3AVX2(w, lp, old, ref *float64, n int, l *Lanes, c *expVectors)
//
// Registers: DI w, SI lp, BX old, DX ref, CX n, AX the token index, R8 l, R10 c,
// R9 &expTable.
// Y8 LB, Y9 UB; the sums Y10 Q, Y11 R, Y12 K, Y13 Below, Y14 Above; Y0-Y7 scratch.
TEXT ·tokensK3AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), DI
	MOVQ lp+8(FP), SI
	MOVQ old+16(FP), BX
	MOVQ ref+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ l+40(FP), R8
	LEAQ ·expTable(SB), R9
	MOVQ c+48(FP), R10
	VMOVUPD Lanes_LB(R8), Y8
	VMOVUPD Lanes_UB(R8), Y9
	VMOVUPD Lanes_Q(R8), Y10
	VMOVUPD Lanes_R(R8), Y11
	VMOVUPD Lanes_K(R8), Y12
	VMOVDQU Lanes_Below(R8), Y13
	VMOVDQU Lanes_Above(R8), Y14
	XORQ    AX, AX

loop:
	// The ratio: r = x - old, R += r, rc = clamp(r, -20, 20), rho = e^rc (Y3).
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD  (BX)(AX*8), Y0, Y1
	VADDPD  Y1, Y11, Y11
	VMOVUPD expVectors_NegRatioClamp(R10), Y2
	VMAXPD  Y1, Y2, Y2
	VMOVUPD expVectors_RatioClamp(R10), Y3
	VMINPD  Y2, Y3, Y2
	EXP(Y2, Y3, Y4, Y5, Y6, Y7)

	// The clip: q = clamp(rho, LB, UB), Q += q, the counts, and
	// Coef * (A*rho where q == rho and rc == r, else 0) in Y3.
	VCMPPD  $0x00, Y2, Y1, Y4    // r == rc (EQ_OQ)
	VMAXPD  Y3, Y8, Y5
	VMINPD  Y5, Y9, Y5
	VADDPD  Y5, Y10, Y10
	VCMPPD  $0x00, Y3, Y5, Y5    // q == rho
	VANDPD  Y5, Y4, Y4
	VCMPPD  $0x11, Y8, Y3, Y5    // rho < LB (LT_OQ)
	VPSUBQ  Y5, Y13, Y13
	VCMPPD  $0x1e, Y9, Y3, Y5    // rho > UB (GT_OQ)
	VPSUBQ  Y5, Y14, Y14
	VMULPD  Lanes_A(R8), Y3, Y3
	VANDPD  Y4, Y3, Y3
	VMULPD  Lanes_Coef(R8), Y3, Y3

	// k3: d = clamp(ref - x, -12, 3), e = e^d, k = (e - d) - 1, dk = 1 - e, and
	// where k > 10, k = 10 and dk = 0. K += k; w = Coef*pg - KB*dk.
	VMOVUPD   (DX)(AX*8), Y1
	VSUBPD    Y0, Y1, Y1
	VMOVUPD   expVectors_KLLow(R10), Y2
	VMAXPD    Y1, Y2, Y1
	VMOVUPD   expVectors_KLHigh(R10), Y2
	VMINPD    Y1, Y2, Y1
	EXP(Y1, Y2, Y4, Y5, Y6, Y7)
	VSUBPD    Y1, Y2, Y1
	VSUBPD    expVectors_One(R10), Y1, Y1
	VMOVUPD   expVectors_One(R10), Y4
	VSUBPD    Y2, Y4, Y2
	VCMPPD    $0x1e, expVectors_KLClamp(R10), Y1, Y4 // k > 10 (GT_OQ)
	VBLENDVPD Y4, expVectors_KLClamp(R10), Y1, Y1
	VADDPD    Y1, Y12, Y12
	VANDNPD   Y2, Y4, Y2
	VMULPD    Lanes_KB(R8), Y2, Y2
	VSUBPD    Y2, Y3, Y3
	VMOVUPD   Y3, (DI)(AX*8)

	ADDQ $4, AX
	CMPQ AX, CX
	JLT  loop

	VMOVUPD Y10, Lanes_Q(R8)
	VMOVUPD Y11, Lanes_R(R8)
	VMOVUPD Y12, Lanes_K(R8)
	VMOVDQU Y13, Lanes_Below(R8)
	VMOVDQU Y14, Lanes_Above(R8)
	VZEROUPPER
	RET
