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

// fused is ESPO: the step advantage fused with the COUT advantage, in the mode of
// its configuration (episode or rollout).
type fused struct{ cfg espo.AdvantageConfig }

func (f fused) Episode(dst []float64, ep espo.EpisodeRewards) (espo.COUT, error) {
	return espo.Advantages(dst, ep, f.cfg)
}

func (f fused) Rollouts(dst [][]float64, rs []espo.Rollout) (espo.COUT, error) {
	return espo.LivedAdvantages(dst, rs, f.cfg)
}
