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

package cpu

import "math"

// The match module of the tokens architecture adds a learned score Delta to the
// logit of Yes of every recommendation decision. It reads the occurrences i of
// the words of the instruction and the history (matchInput), each with the
// context features c_i, and the words v_1..v_K of the current screen and the
// candidate's title:
//
//	a_i   = gain sum_{f in c_i} s_f A[f] + alpha * rho_i   relevance gate logit
//	g_i   = sigmoid(a_i)
//	p_i   = gain sum_{f in c_i} s_f B[f]                    weight of a match
//	q_i   = gain sum_{f in c_i} s_f C[f]                    weight of the word itself
//	n_i   = sum_k sigma(s (U[w_i] . U[v_k] - tau))         soft count on the page
//	m_i   = 1 - exp(-kappa n_i)                             found on the page (0..1)
//	rho_i = sum_{j rep} sigma(s (U[w_i] . U[w_j] - tau))    soft count of repetitions
//	Delta = beta + sum_i g_i (p_i m_i + q_i)
//
// with s = matchSharpness, tau = matchThreshold, kappa = matchSaturation, gain
// = matchGain, s_f the feature's sign, and "j rep"
// the history occurrences of the other actions (a chip clicked twice is
// cleared). U is one
// table of word embeddings for history and page words alike (tied), so a word
// matches itself, seen in training or not, once the gates have learnt which
// occurrences matter: a preference clicked, typed or chosen must be on the page
// (q_i < 0 < p_i), a Back or a sort order need not (g_i = 0). U is drawn with
// unit rows, so U_w . U_w = 1 and different words are near 0; A, B, C, alpha
// and beta start at 0.
//
// U is stored scaled: the parameter rows have length embedScale and every dot
// product is read divided by embedScale^2. AdamW moves a parameter by about the
// learning rate per step whatever its scale, so the embeddings learn
// embedScale times slower than the gates: fast enough to tune the words seen
// in training, too slow to memorise episodes through item names (learning U as
// fast as the gates took held-out RecAcc from 0.70 to 0.52 while train RecAcc
// reached 0.99).

// matchSharpness and matchThreshold are s and tau above. Two random unit rows
// of D = 64 have a dot product of about N(0, 1/64), so two different words
// count about sigma(20 (0.125 - 0.5)) = 0.0006, and a word itself sigma(10) = 1.
// matchSaturation makes one occurrence on the page count 0.95 and two 0.998,
// so a value shown twice is not worth more than once. matchGain lets AdamW,
// whose steps are about the learning rate whatever the gradient, reach gates
// and weights of a few units within a few hundred steps.
const (
	embedScale      = 32.0
	matchSharpness  = 20.0
	matchThreshold  = 0.5
	matchSaturation = 3.0
	matchGain       = 4.0
)

// matchNet reads the module's parameters in a parameter vector: U (rows x D,
// row-major), then A, B, C (rows each), then alpha and beta.
type matchNet struct {
	D       int
	mask    uint64
	U       []float64
	A, B, C []float64
	scal    []float64 // alpha, beta
	base    int       // the index of U[0] in the parameter vector
}

// matchParamCount is the number of parameters of a module with rows and D.
func matchParamCount(rows, D int) int { return rows*D + 3*rows + 2 }

func newMatchNet(params []float64, base, rows, D int) *matchNet {
	m := &matchNet{D: D, mask: uint64(rows - 1), base: base}
	x := params[base : base+matchParamCount(rows, D)]
	m.U, x = x[:rows*D], x[rows*D:]
	m.A, m.B, m.C, m.scal = x[:rows], x[rows:2*rows], x[2*rows:3*rows], x[3*rows:]
	return m
}

func (m *matchNet) row(r int32) []float64 { return m.U[int(r)*m.D : (int(r)+1)*m.D] }

// signed returns sum_{f in fs} s_f T[f].
func signed(t []float64, fs []feat) float64 {
	var x float64
	for _, f := range fs {
		if f&1 == 0 {
			x += t[f.row()]
		} else {
			x -= t[f.row()]
		}
	}
	return x
}

// matchForward is the module's forward pass on one prompt under one network,
// with what its backward pass needs.
type matchForward struct {
	in            *matchInput
	delta         float64
	g, p, q, m, r []float64
	// wm holds the slopes s sigma (1 - sigma) of the counts of occurrence i on
	// the page at [i*K, (i+1)*K); wr those of its repetitions at wrAt[i] + j,
	// whose embedding rows are rep[i][j].
	wm, wr []float64
	wrAt   []int
	rep    [][]int32
}

func newMatchForward(n *matchNet, in *matchInput) *matchForward {
	N, K := len(in.occ), len(in.page)
	fw := &matchForward{in: in, g: make([]float64, N), p: make([]float64, N), q: make([]float64, N),
		m: make([]float64, N), r: make([]float64, N), wm: make([]float64, N*K), wrAt: make([]int, N), rep: make([][]int32, N)}
	for i := range in.occ {
		for _, j := range in.repeats(i) {
			fw.rep[i] = append(fw.rep[i], in.occ[j].row)
		}
		fw.wrAt[i] = len(fw.wr)
		fw.wr = append(fw.wr, make([]float64, len(fw.rep[i]))...)
	}
	alpha := n.scal[0]
	fw.delta = n.scal[1]
	for i, o := range in.occ {
		u := n.row(o.row)
		fw.m[i] = 1 - math.Exp(-matchSaturation*softCount(u, n, in.page, fw.wm[i*K:(i+1)*K]))
		fw.r[i] = softCount(u, n, fw.rep[i], fw.wr[fw.wrAt[i]:fw.wrAt[i]+len(fw.rep[i])])
		fw.g[i] = sigmoid(matchGain*signed(n.A, o.ctx) + alpha*fw.r[i])
		fw.p[i], fw.q[i] = matchGain*signed(n.B, o.ctx), matchGain*signed(n.C, o.ctx)
		fw.delta += fw.g[i] * (fw.p[i]*fw.m[i] + fw.q[i])
	}
	return fw
}

// softCount returns sum_k sigma(s (u . U[rows_k] - tau)) and writes the slopes
// s sigma (1 - sigma) of its terms into w.
func softCount(u []float64, n *matchNet, rows []int32, w []float64) float64 {
	var c float64
	for k, r := range rows {
		x := sigmoid(matchSharpness * (dot(u, n.row(r))/(embedScale*embedScale) - matchThreshold))
		c += x
		w[k] = matchSharpness * x * (1 - x) / (embedScale * embedScale)
	}
	return c
}

func dot(a, b []float64) float64 {
	var x float64
	for k, v := range a {
		x += v * b[k]
	}
	return x
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// matchGrads is the sparse gradient of the module for one answer: the U rows and
// the entries of A, B, C, alpha and beta that it touched, by index in the
// parameter vector.
type matchGrads struct {
	D     int
	rows  map[int32][]float64
	entry map[int]float64
}

func newMatchGrads(D int) *matchGrads {
	return &matchGrads{D: D, rows: map[int32][]float64{}, entry: map[int]float64{}}
}

func (g *matchGrads) row(r int32) []float64 {
	x, ok := g.rows[r]
	if !ok {
		x = make([]float64, g.D)
		g.rows[r] = x
	}
	return x
}

// addSigned adds d * s_f to the gradient of T[f] for each f in fs, T starting
// at index off of the parameter vector.
func (g *matchGrads) addSigned(off int, fs []feat, d float64) {
	for _, f := range fs {
		if f&1 == 0 {
			g.entry[off+f.row()] += d
		} else {
			g.entry[off+f.row()] -= d
		}
	}
}

// backward adds the gradient of a loss whose derivative by Delta is dDelta:
//
//	dbeta    = dDelta
//	dB[f]   += gain s_f dDelta g_i m_i,  dC[f] += gain s_f dDelta g_i
//	da_i     = dDelta (p_i m_i + q_i) g_i (1 - g_i)
//	dA[f]   += gain s_f da_i,         dalpha += da_i rho_i
//	dn_i     = dDelta g_i p_i kappa (1 - m_i),  drho_i = da_i alpha
//	dU[w_i] += dn_i sum_k wm_ik U[v_k] + drho_i sum_j wr_ij U[w_j]
//	dU[v_k] += dn_i wm_ik U[w_i],     dU[w_j] += drho_i wr_ij U[w_i]
//
// with wm_ik and wr_ij the slopes of the terms of n_i and rho_i.
func (fw *matchForward) backward(n *matchNet, g *matchGrads, dDelta float64) {
	rows := len(n.A)
	offA, offB, offC := n.base+len(n.U), n.base+len(n.U)+rows, n.base+len(n.U)+2*rows
	offS := offC + rows
	g.entry[offS+1] += dDelta
	in, K := fw.in, len(fw.in.page)
	alpha := n.scal[0]
	for i, o := range in.occ {
		gi := fw.g[i]
		da := dDelta * (fw.p[i]*fw.m[i] + fw.q[i]) * gi * (1 - gi)
		g.addSigned(offA, o.ctx, matchGain*da)
		g.addSigned(offB, o.ctx, matchGain*dDelta*gi*fw.m[i])
		g.addSigned(offC, o.ctx, matchGain*dDelta*gi)
		g.entry[offS] += da * fw.r[i]
		u := n.row(o.row)
		if dm := dDelta * gi * fw.p[i] * matchSaturation * (1 - fw.m[i]); dm != 0 {
			spread(n, g, u, o.row, in.page, fw.wm[i*K:(i+1)*K], dm)
		}
		if dr := da * alpha; dr != 0 {
			spread(n, g, u, o.row, fw.rep[i], fw.wr[fw.wrAt[i]:], dr)
		}
	}
}

// spread adds the gradient d * (sum_k w_k U[rows_k]) to U[r] (whose value is u)
// and d * w_k u to each U[rows_k].
func spread(n *matchNet, g *matchGrads, u []float64, r int32, rows []int32, w []float64, d float64) {
	for k, v := range rows {
		addScaled(g.row(r), n.row(v), d*w[k])
		addScaled(g.row(v), u, d*w[k])
	}
}

// addScaled adds a * x to dst.
func addScaled(dst, x []float64, a float64) {
	for k, v := range x {
		dst[k] += a * v
	}
}

// addTo adds the gradient into the full gradient vector dst of a network whose
// module starts at index base. Every index receives one sum, so the result does
// not depend on the order of the maps.
func (g *matchGrads) addTo(dst []float64, base int) {
	for r, x := range g.rows {
		addScaled(dst[base+int(r)*g.D:base+(int(r)+1)*g.D], x, 1)
	}
	for i, x := range g.entry {
		dst[i] += x
	}
}
