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
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// SamplerConfig configures a Sampler; DefaultSamplerConfig returns the paper's
// one episode per batch on one rank.
type SamplerConfig struct {
	// Seed seeds the shuffle; with the epoch it fixes the order of that epoch.
	Seed uint64
	// EpisodesPerBatch is how many episodes one rank's batch holds (the last
	// batches of an epoch may hold fewer), when StepBudget is 0.
	EpisodesPerBatch int
	// StepBudget, when positive, packs instead as many whole episodes, in order, as
	// fit in that many steps; an episode longer than the budget forms a batch alone.
	StepBudget int
	// Ranks is the number of data-parallel ranks and Rank this one, 0 <= Rank < Ranks.
	Ranks, Rank int
	// KeepOrder turns the shuffle off: episodes come in their original order.
	KeepOrder bool
}

// DefaultSamplerConfig returns one episode per batch, one rank, seed 0, shuffled.
func DefaultSamplerConfig() SamplerConfig {
	return SamplerConfig{EpisodesPerBatch: 1, Ranks: 1}
}

// Validate reports whether c is usable.
func (c SamplerConfig) Validate() error {
	switch {
	case c.StepBudget < 0:
		return errors.New("espo: the step budget must not be negative")
	case c.StepBudget == 0 && c.EpisodesPerBatch < 1:
		return errors.New("espo: a batch needs at least one episode (or a step budget)")
	case c.Ranks < 1 || c.Rank < 0 || c.Rank >= c.Ranks:
		return fmt.Errorf("espo: rank %d of %d ranks is not in [0, ranks)", c.Rank, c.Ranks)
	}
	return nil
}

// Sampler yields batches of whole episodes. Each step of the data set belongs to an
// episode; the Sampler groups the steps by episode, keeping each episode's steps in
// their original order (episode e is the e-th distinct id to appear), and in every
// epoch shuffles whole episodes and packs them into batches. No episode is ever
// split across batches or ranks.
//
// Batches are formed globally and dealt to ranks: global batch b consists of one
// batch for each rank r, in rank order, filled from the shuffled episodes in turn.
// Every rank computes the same global plan from (Seed, epoch), so all ranks agree
// without talking, and every rank has the same number of batches per epoch; at the
// end of an epoch a rank's batch may be short or empty (such a rank still takes part
// in the step's collective operations, with zero gradient). Over the ranks, an epoch
// covers every episode exactly once. Resuming at batch b of an epoch is
// Epoch(epoch).Steps(dst, b): the plan depends on nothing else.
//
// The shuffle of epoch t is a Fisher-Yates shuffle driven by ChaCha8 keyed with
// Seed and t (little-endian, in the key's first 16 bytes), stable across releases.
// A Sampler is safe for concurrent use.
type Sampler struct {
	cfg    SamplerConfig
	steps  []int // the steps, grouped by episode
	starts []int // episode e holds steps[starts[e]:starts[e+1]]
}

// NewEpisodeSampler returns a Sampler over the steps whose episode ids are given,
// one per step, or an error if cfg is not valid.
func NewEpisodeSampler(episodeIDs []string, cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	index := make(map[string]int)
	var count []int
	for _, id := range episodeIDs {
		e, ok := index[id]
		if !ok {
			e = len(count)
			index[id] = e
			count = append(count, 0)
		}
		count[e]++
	}
	s := &Sampler{cfg: cfg, steps: make([]int, len(episodeIDs)), starts: make([]int, len(count)+1)}
	for e, c := range count {
		s.starts[e+1] = s.starts[e] + c
	}
	next := append([]int(nil), s.starts[:len(count)]...)
	for i, id := range episodeIDs {
		e := index[id]
		s.steps[next[e]] = i
		next[e]++
	}
	return s, nil
}

// NewStepSampler returns the Sampler of plain step-wise GRPO: every one of n steps
// is an episode of its own, so steps are shuffled independently, and a batch holds
// cfg.EpisodesPerBatch steps (or cfg.StepBudget steps).
func NewStepSampler(n int, cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errors.New("espo: negative number of steps")
	}
	s := &Sampler{cfg: cfg, steps: make([]int, n), starts: make([]int, n+1)}
	for i := range s.steps {
		s.steps[i] = i
		s.starts[i+1] = i + 1
	}
	return s, nil
}

// NumEpisodes returns the number of episodes.
func (s *Sampler) NumEpisodes() int { return len(s.starts) - 1 }

// EpisodeSteps returns the steps of episode e in their original order; the slice
// must not be modified.
func (s *Sampler) EpisodeSteps(e int) []int { return s.steps[s.starts[e]:s.starts[e+1]:s.starts[e+1]] }

// Epoch returns the plan of one epoch.
func (s *Sampler) Epoch(epoch int) *Epoch {
	n := s.NumEpisodes()
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if !s.cfg.KeepOrder {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[0:], s.cfg.Seed)
		binary.LittleEndian.PutUint64(key[8:], uint64(epoch))
		src := rand.NewChaCha8(key)
		for i := n - 1; i > 0; i-- {
			j := uniform(src, uint64(i+1))
			order[i], order[j] = order[j], order[i]
		}
	}
	R := s.cfg.Ranks
	bounds := []int{0}
	if s.cfg.StepBudget == 0 {
		for end := 0; end < n || len(bounds)%R != 1%R; {
			end = min(end+s.cfg.EpisodesPerBatch, n)
			bounds = append(bounds, end)
		}
	} else {
		steps := 0
		for i, e := range order {
			l := s.starts[e+1] - s.starts[e]
			if i > bounds[len(bounds)-1] && steps+l > s.cfg.StepBudget {
				bounds = append(bounds, i)
				steps = 0
			}
			steps += l
		}
		if n > 0 {
			bounds = append(bounds, n)
		}
		for len(bounds)%R != 1%R {
			bounds = append(bounds, n)
		}
	}
	return &Epoch{s: s, order: order, bounds: bounds}
}

// uniform returns a uniform integer in [0, n) (Lemire's method).
func uniform(src rand.Source, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		for thresh := -n % n; lo < thresh; {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Epoch is the plan of one epoch: the shuffled episodes and their batches. It is
// immutable and safe for concurrent use.
type Epoch struct {
	s      *Sampler
	order  []int // episodes in shuffled order
	bounds []int // rank batch k = b*Ranks + r holds order[bounds[k]:bounds[k+1]]
}

// Len returns the number of batches of each rank in the epoch.
func (e *Epoch) Len() int { return (len(e.bounds) - 1) / e.s.cfg.Ranks }

// Order returns the episodes of the epoch in their shuffled order, over all ranks;
// the slice must not be modified.
func (e *Epoch) Order() []int { return e.order }

// Episodes returns, appended to dst[:0], the episodes of this rank's batch b, in
// order. It panics if b is not in [0, Len()).
func (e *Epoch) Episodes(dst []int, b int) []int {
	return append(dst[:0], e.batch(b)...)
}

// Steps returns, appended to dst[:0], the steps of this rank's batch b: episode by
// episode, each episode's steps in their original order. It panics if b is not in
// [0, Len()).
func (e *Epoch) Steps(dst []int, b int) []int {
	dst = dst[:0]
	for _, ep := range e.batch(b) {
		dst = append(dst, e.s.EpisodeSteps(ep)...)
	}
	return dst
}

func (e *Epoch) batch(b int) []int {
	if b < 0 || b >= e.Len() {
		panic("espo: batch index out of range")
	}
	k := b*e.s.cfg.Ranks + e.s.cfg.Rank
	return e.order[e.bounds[k]:e.bounds[k+1]]
}
