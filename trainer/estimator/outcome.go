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

// outcome is outcome-only GRPO: what a rollout stated and decided, normalised over
// the G rollouts and credited to all its steps alike, with no step term and no COUT.
type outcome struct{ eps float64 }

func (outcome) Episode([]float64, espo.EpisodeRewards) (espo.COUT, error) {
	return espo.COUT{}, errRolloutsOnly
}

func (o outcome) Rollouts(dst [][]float64, rs []espo.Rollout) (espo.COUT, error) {
	return espo.COUT{}, espo.OutcomeAdvantages(dst, rs, o.eps)
}
