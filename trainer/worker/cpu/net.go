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

import (
	"math"
	"sync"
)

// The network scores every option of a decision with the same MLP over the
// option's hashed features x (a sparse vector of +-1 entries):
//
//	z        = b1 + E^T x          E: rows x H embedding table, one row per feature hash
//	h        = tanh(z)             H hidden units
//	logit    = w2 . h
//	p(o)     = softmax over the decision's options of logit(o)
//	log p(o) = logit(o) - log sum_o' exp(logit(o'))
//
// The parameters are one vector: E (row-major), then b1, then w2, then, in the
// tokens architecture, the match module (tokens.go), whose Delta is added to the
// logit of Yes.

// netView reads a parameter vector as the network.
type netView struct {
	H      int
	E      []float64
	b1, w2 []float64
	// match is the match module, nil in the features architecture.
	match *matchNet
}

func newNetView(params []float64, rows, H int) netView {
	n := rows * H
	return netView{H: H, E: params[:n], b1: params[n : n+H], w2: params[n+H : n+2*H]}
}

// paramCount is the number of parameters of a network with rows and H.
func paramCount(rows, H int) int { return rows*H + 2*H }

// paramCount is the number of parameters of the policy with options o: the MLP's,
// then, in the tokens architecture, the match module's.
func (o Options) paramCount() int {
	n := paramCount(o.rows(), o.Hidden)
	if o.tokens() {
		n += matchParamCount(1<<o.EmbedBits, o.EmbedDim)
	}
	return n
}

// addRow adds sign * E[row] to z.
func (n netView) addRow(z []float64, f feat) {
	addSigned(z, n.E[f.row()*n.H:(f.row()+1)*n.H], f)
}

// addSigned adds sign_f * x to dst, four values a step (a third faster than one at
// a time on the rows of H = 32; each value is still one addition).
func addSigned(dst, x []float64, f feat) {
	dst = dst[:len(x)]
	k := 0
	if f&1 == 0 {
		for ; k+4 <= len(x); k += 4 {
			d, s := dst[k:k+4:k+4], x[k:k+4:k+4]
			d[0] += s[0]
			d[1] += s[1]
			d[2] += s[2]
			d[3] += s[3]
		}
		for ; k < len(x); k++ {
			dst[k] += x[k]
		}
		return
	}
	for ; k+4 <= len(x); k += 4 {
		d, s := dst[k:k+4:k+4], x[k:k+4:k+4]
		d[0] -= s[0]
		d[1] -= s[1]
		d[2] -= s[2]
		d[3] -= s[3]
	}
	for ; k < len(x); k++ {
		dst[k] -= x[k]
	}
}

// sums holds, for each option set of one view under one network, the sums
// b1 + sum_{f in static list k} sign_f E[row_f] of its options' static lists,
// option o at [o*H, (o+1)*H), computed on the set's first use. It is safe for
// concurrent use.
type sums struct {
	n    netView
	v    *view
	zs   [][]float64
	once []sync.Once
	// match is the match module's forward pass, set with the sums of the
	// view's Yes/No set when the network has the module.
	match *matchForward
}

func newSums(n netView, v *view) *sums {
	return &sums{n: n, v: v, zs: make([][]float64, len(v.sets)), once: make([]sync.Once, len(v.sets))}
}

// of returns the sums of set.
func (s *sums) of(set optionSet) []float64 {
	s.once[set.id].Do(func() {
		H := s.n.H
		zs := make([]float64, set.n*H)
		for o := range set.n {
			z := zs[o*H : (o+1)*H]
			copy(z, s.n.b1)
			for _, f := range s.v.static[set.start+o] {
				s.n.addRow(z, f)
			}
		}
		s.zs[set.id] = zs
		if s.n.match != nil && set.id == s.v.yesno.id {
			s.match = newMatchForward(s.n.match, s.v.matchInput())
		}
	})
	return s.zs[set.id]
}

// scorer evaluates the decisions of one prompt under one network. It holds the
// hidden activations and logits of the last decision evaluated.
type scorer struct {
	sums   *sums
	h      []float64
	logits []float64
	lse    float64
}

// eval computes h and the logits of the options of set, with the dynamic
// features dyn[o] when dyn is not nil, and their log-sum-exp.
func (s *scorer) eval(set optionSet, dyn [][]feat) {
	n := s.sums.n
	H := n.H
	zs := s.sums.of(set)
	s.h = grow(s.h, set.n*H)
	s.logits = grow(s.logits, set.n)
	for o := range set.n {
		h := s.h[o*H : (o+1)*H]
		copy(h, zs[o*H:(o+1)*H])
		if dyn != nil {
			for _, f := range dyn[o] {
				n.addRow(h, f)
			}
		}
		var l float64
		for k, z := range h {
			t := math.Tanh(z)
			h[k] = t
			l += n.w2[k] * t
		}
		s.logits[o] = l
	}
	if s.isMatched(set) {
		s.logits[0] += s.sums.match.delta // Yes
	}
	s.lse = logSumExp(s.logits)
}

// isMatched reports whether the match module adds to the logits of set.
func (s *scorer) isMatched(set optionSet) bool {
	// The set first: the module is set with the Yes/No sums, which eval has
	// computed (synchronised by their sync.Once) before it asks.
	return set.id == s.sums.v.yesno.id && s.sums.match != nil
}

// logp returns the log-probability of option o of the last decision.
func (s *scorer) logp(o int) float64 { return s.logits[o] - s.lse }

func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - m)
	}
	return m + math.Log(sum)
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// grads accumulates the gradient of one prompt's loss. The static lists'
// pre-activation gradients are summed first (dzs, per option set, option o at
// [o*H, (o+1)*H)) and spread to their features by finish; rows touched by
// dynamic features are kept sparse, in the order they were first touched, so
// adding into the full gradient is deterministic. Its row index and gradient
// blocks come from a gradsPool (newGrads), and go back to it with computed and
// release.
type grads struct {
	H   int
	dzs [][]float64
	// slotOf[r] is 1 + the slot of row r's gradient, 0 for a row not touched,
	// until computed; rows lists the touched rows by slot.
	slotOf []int32
	rows   []int32
	blocks [][]float64 // the rows' gradients, blockRows rows per block
	b1, w2 []float64
	dz     []float64
	// dDelta is the derivative of the loss by the match module's Delta, and
	// match the module's gradient, set from it after the answer.
	dDelta float64
	match  *matchGrads
	pool   *gradsPool
}

// newGrads returns a zero gradient of a network with rows table rows and H
// hidden units, for a view of sets option sets, drawing on pool.
func newGrads(pool *gradsPool, sets, rows, H int) *grads {
	return &grads{H: H, dzs: make([][]float64, sets), slotOf: pool.index(rows), pool: pool,
		b1: make([]float64, H), w2: make([]float64, H), dz: make([]float64, H)}
}

// computed returns the row index to the pool: g takes no more rows, and still
// holds its gradient.
func (g *grads) computed() {
	for _, r := range g.rows {
		g.slotOf[r] = 0
	}
	g.pool.putIndex(g.slotOf)
	g.slotOf = nil
}

// release zeroes the gradient blocks and returns them to the pool: g is no
// longer used.
func (g *grads) release() {
	for k, b := range g.blocks {
		clear(b[:min(blockRows, len(g.rows)-k*blockRows)*g.H])
	}
	g.pool.putBlocks(g.blocks)
	g.blocks = nil
}

// decision adds the gradient of the loss -w * log p(chosen) of the decision s
// evaluated last (options set, dynamic features dyn):
//
//	dL/dlogit_o = w * (p_o - [o == chosen])
//	dL/dw2     += dL/dlogit_o * h_o
//	dL/dz_o     = dL/dlogit_o * w2 * (1 - h_o^2)
//	dL/db1     += dL/dz_o,  dL/dE[f] += sign_f * dL/dz_o for each feature f of o
//	dL/dDelta  += dL/dlogit_Yes when the match module adds Delta to Yes
func (g *grads) decision(s *scorer, set optionSet, dyn [][]feat, chosen int, w float64) {
	H := g.H
	w2 := s.sums.n.w2
	if g.dzs[set.id] == nil {
		g.dzs[set.id] = make([]float64, set.n*H)
	}
	matched := s.isMatched(set)
	for o := range set.n {
		p := math.Exp(s.logits[o] - s.lse)
		gl := p
		if o == chosen {
			gl--
		}
		gl *= w
		if matched && o == 0 {
			g.dDelta += gl
		}
		if gl == 0 {
			continue
		}
		h := s.h[o*H : (o+1)*H]
		dz := g.dz
		for k, t := range h {
			g.w2[k] += gl * t
			dz[k] = gl * w2[k] * (1 - t*t)
		}
		static := g.dzs[set.id][o*H : (o+1)*H]
		for k, d := range dz {
			static[k] += d
		}
		if dyn != nil {
			for _, f := range dyn[o] {
				g.addRow(f, dz)
			}
		}
	}
}

// addRow adds sign_f * dz to the gradient of row f.
func (g *grads) addRow(f feat, dz []float64) {
	r := f.row()
	slot := int(g.slotOf[r]) - 1
	if slot < 0 {
		slot = len(g.rows)
		g.slotOf[r] = int32(slot + 1)
		g.rows = append(g.rows, int32(r))
		if slot%blockRows == 0 {
			g.blocks = append(g.blocks, g.pool.block(g.H))
		}
	}
	addSigned(g.slot(slot), dz, f)
}

// blockRows is the number of rows per block of grads.blocks.
const blockRows = 256

// slot returns the gradient of the row in slot i.
func (g *grads) slot(i int) []float64 {
	k := i % blockRows * g.H
	return g.blocks[i/blockRows][k : k+g.H]
}

// finish spreads the static lists' gradients of view v to their features and b1.
func (g *grads) finish(v *view) {
	H := g.H
	for _, set := range v.sets {
		dzs := g.dzs[set.id]
		if dzs == nil {
			continue
		}
		for o := range set.n {
			dz := dzs[o*H : (o+1)*H]
			if allZero(dz) {
				continue
			}
			for i, d := range dz {
				g.b1[i] += d
			}
			for _, f := range v.static[set.start+o] {
				g.addRow(f, dz)
			}
		}
	}
}

func allZero(x []float64) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

// addTo adds the gradient into the full gradient vector dst of a network with
// rows rows.
func (g *grads) addTo(dst []float64, rows int) {
	H := g.H
	for slot, r := range g.rows {
		d := dst[int(r)*H : (int(r)+1)*H]
		for k, v := range g.slot(slot) {
			d[k] += v
		}
	}
	n := rows * H
	for k := range H {
		dst[n+k] += g.b1[k]
		dst[n+H+k] += g.w2[k]
	}
	if g.match != nil {
		g.match.addTo(dst, paramCount(rows, H))
	}
}
