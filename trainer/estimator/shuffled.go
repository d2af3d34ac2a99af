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

package estimator

import "github.com/espo-dev/espo-operator/espo"

// shuffled is the shuffled-COUT control: each group gets ESPO's step advantage fused
// with the COUT advantages of the group estimated before it (zeros for the run's
// first, or when G changed), so that a method whose COUT carries credit must beat its
// shuffled self. It reports each group's own COUT. The permutation lives in the
// estimator, so a resumed run starts it afresh.
type shuffled struct {
	cfg espo.AdvantageConfig
	// prev holds the COUT advantages of the group estimated last, one per candidate
	// (per rollout).
	prev []float64
}

func (s *shuffled) Episode(dst []float64, ep espo.EpisodeRewards) (espo.COUT, error) {
	if err := espo.StepAdvantages(dst, ep.Step, ep.G, s.cfg.Eps); err != nil {
		return espo.COUT{}, err
	}
	own := make([]float64, ep.G)
	c, err := espo.COUTAdvantages(own, ep, s.cfg)
	if err != nil {
		return espo.COUT{}, err
	}
	espo.FuseAdvantages(dst, s.swap(own), s.cfg.W)
	return c, nil
}

func (s *shuffled) Rollouts(dst [][]float64, rs []espo.Rollout) (espo.COUT, error) {
	if err := espo.AnchorStepAdvantages(dst, rs, s.cfg.Eps); err != nil {
		return espo.COUT{}, err
	}
	own := make([]float64, len(rs))
	c, err := espo.LivedCOUTAdvantages(own, rs, s.cfg)
	if err != nil {
		return espo.COUT{}, err
	}
	prev := s.swap(own)
	for g := range dst {
		for t := range dst[g] {
			dst[g][t] += s.cfg.W * prev[g]
		}
	}
	return c, nil
}

// swap returns the COUT advantages of the group estimated before this one (zeros
// for the first, or after G changed) and keeps own, this group's, for the next.
func (s *shuffled) swap(own []float64) []float64 {
	prev := s.prev
	if len(prev) != len(own) {
		prev = make([]float64, len(own))
	}
	s.prev = own
	return prev
}
