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

import "sync"

// gradsPool recycles what Backward's per-answer gradients (grads) allocate: a
// dense row index per answer being computed, so at most one per thread, and the
// gradient blocks, so at most those of one Backward call. Everything it holds is
// zero. It is safe for concurrent use.
type gradsPool struct {
	mu      sync.Mutex
	indexes [][]int32
	blocks  [][]float64
}

// index returns a zero row index of rows entries.
func (p *gradsPool) index(rows int) []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return take(&p.indexes, rows)
}

// putIndex returns a row index, zeroed by the caller.
func (p *gradsPool) putIndex(ix []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexes = append(p.indexes, ix)
}

// block returns a zero gradient block of blockRows rows of H values.
func (p *gradsPool) block(H int) []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return take(&p.blocks, blockRows*H)
}

// putBlocks returns gradient blocks, zeroed by the caller.
func (p *gradsPool) putBlocks(bs [][]float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocks = append(p.blocks, bs...)
}

// take pops the last slice of free, dropping those whose length is not n (left
// by a network since configured anew), or makes a zero one of length n.
func take[T any](free *[][]T, n int) []T {
	for len(*free) > 0 {
		s := (*free)[len(*free)-1]
		*free = (*free)[:len(*free)-1]
		if len(s) == n {
			return s
		}
	}
	return make([]T, n)
}
