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

package trainer

import (
	"errors"

	"github.com/espo-dev/espo-operator/espo"
)

// Controls are experiment controls of the comparison of methods (hack/results): each
// breaks one part of ESPO on purpose, to measure what that part carries. None is a
// training method and no job sets one, so they are not part of the spec nor of
// Options; the zero value trains as a job does.
type Controls struct {
	// ShuffleCOUT gives each ESPO episode the COUT advantages of the episode trained
	// before it (zeros for the run's first), so that R_COUT is permuted across
	// episodes while its size and spread stay what they were: a method whose COUT
	// carries credit must beat its shuffled self. A resumed run starts the
	// permutation afresh.
	ShuffleCOUT bool
	// OutcomeOnly (a run in an environment only) trains every step of a rollout on
	// the outcome advantage of espo.OutcomeAdvantages: what the rollout stated and
	// decided, credited to all its steps alike, with no step-wise term and no COUT.
	OutcomeOnly bool
	// GiGPO (a run in an environment only) trains on GiGPO's advantage, the outcome
	// advantage plus the anchor-state step advantage (espo.OutcomeAdvantages +
	// espo.AnchorStepAdvantages), with no COUT.
	GiGPO bool
}

// check refuses controls the run cannot apply.
func (c Controls) check(lived bool) error {
	if !lived && (c.OutcomeOnly || c.GiGPO) {
		return errors.New("trainer: the OutcomeOnly and GiGPO controls need spec.datasets.environment: their advantages compare rollouts")
	}
	if c.OutcomeOnly && c.GiGPO {
		return errors.New("trainer: the OutcomeOnly and GiGPO controls are two estimators: set one")
	}
	return nil
}

// SetControls sets the experiment controls of the run; call it before Run. It refuses
// controls the run cannot apply.
func (t *Trainer) SetControls(c Controls) error {
	_, lived := t.exp.(*lived)
	if err := c.check(lived); err != nil {
		return err
	}
	t.controls = c
	return nil
}

// fusedAdvantages writes the ESPO advantages of an episode's candidates to dst
// (espo.Advantages), or, with Controls.ShuffleCOUT, the step advantages fused with the
// COUT advantages of the episode trained before this one.
func (t *Trainer) fusedAdvantages(dst []float64, ep espo.EpisodeRewards) (espo.COUT, error) {
	cfg := t.res.Advantage
	if !t.controls.ShuffleCOUT {
		return espo.Advantages(dst, ep, cfg)
	}
	if err := espo.StepAdvantages(dst, ep.Step, ep.G, cfg.Eps); err != nil {
		return espo.COUT{}, err
	}
	own := make([]float64, ep.G)
	c, err := espo.COUTAdvantages(own, ep, cfg)
	if err != nil {
		return espo.COUT{}, err
	}
	espo.FuseAdvantages(dst, t.swapShuffledCOUT(own), cfg.W)
	return c, nil
}

// swapShuffledCOUT returns the COUT advantages of the group trained before this one
// (zeros for the run's first, or after G changed) and keeps own, this group's, for
// the next: Controls.ShuffleCOUT's permutation.
func (t *Trainer) swapShuffledCOUT(own []float64) []float64 {
	prev := t.shuffledCOUT
	if len(prev) != len(own) {
		prev = make([]float64, len(own))
	}
	t.shuffledCOUT = own
	return prev
}
