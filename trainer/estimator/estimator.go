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

// Package estimator holds the advantage estimators of the reinforcement epochs. A run
// chooses one when it starts (New); it turns the rewards of every comparison group of
// a batch into the advantages the loss weights. Each estimator is one file, and its
// formula is in package espo.
//
// Adding one takes a file with a type that implements Estimator, a Name, and its row
// in the estimators table.
package estimator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
)

// Name names an estimator.
type Name string

// The estimators.
const (
	// ESPO is ESPO's fused advantage in the COUT mode of the configuration
	// (espo.Advantages; espo.LivedAdvantages for rollouts).
	ESPO Name = "espo"
	// GRPO is the step advantage alone (espo.StepAdvantages; espo.AnchorStepAdvantages
	// for rollouts).
	GRPO Name = "grpo"
	// OutcomeOnly credits every step of a rollout with the outcome advantage
	// (espo.OutcomeAdvantages): rollouts only.
	OutcomeOnly Name = "outcome-only"
	// GiGPO is the outcome advantage plus the anchor-state step advantage
	// (espo.GiGPOAdvantages): rollouts only.
	GiGPO Name = "gigpo"
	// ShuffledCOUT is a control: ESPO's step advantage fused with the COUT advantages
	// of the group trained before, so that COUT is permuted across groups while its
	// size and spread stay what they were.
	ShuffledCOUT Name = "shuffled-cout"
)

// Estimator computes advantages, one comparison group at a time: the G candidates of
// each step of a recorded episode (answered on one recorded history), or the G
// rollouts of one episode seed lived through an environment. Both methods return the
// group's mean COUT (zero for an estimator without COUT).
type Estimator interface {
	// Episode writes the advantage of candidate c of step j of a recorded episode to
	// dst[j*ep.G+c].
	Episode(dst []float64, ep espo.EpisodeRewards) (espo.COUT, error)
	// Rollouts writes the advantage of step t of rollout g to dst[g][t].
	Rollouts(dst [][]float64, rs []espo.Rollout) (espo.COUT, error)
}

// estimators are the estimators by name: how each is made from the run's advantage
// configuration, and whether it compares whole rollouts only.
var estimators = map[Name]struct {
	make         func(cfg espo.AdvantageConfig) Estimator
	rolloutsOnly bool
}{
	ESPO:         {make: func(cfg espo.AdvantageConfig) Estimator { return fused{cfg} }},
	GRPO:         {make: func(cfg espo.AdvantageConfig) Estimator { return stepwise{cfg.Eps} }},
	OutcomeOnly:  {make: func(cfg espo.AdvantageConfig) Estimator { return outcome{cfg.Eps} }, rolloutsOnly: true},
	GiGPO:        {make: func(cfg espo.AdvantageConfig) Estimator { return gigpo{cfg.Eps} }, rolloutsOnly: true},
	ShuffledCOUT: {make: func(cfg espo.AdvantageConfig) Estimator { return &shuffled{cfg: cfg} }},
}

// New returns the estimator named, over the run's advantage configuration; rollouts
// says whether the run's batches are rollouts lived through an environment. It
// refuses an unknown name, and an estimator of rollouts only for a run of recorded
// episodes.
func New(name Name, cfg espo.AdvantageConfig, rollouts bool) (Estimator, error) {
	e, ok := estimators[name]
	if !ok {
		return nil, fmt.Errorf("estimator %q: none of %s", name, strings.Join(Names(), ", "))
	}
	if e.rolloutsOnly && !rollouts {
		return nil, fmt.Errorf("estimator %s compares whole rollouts: it needs spec.datasets.environment", name)
	}
	return e.make(cfg), nil
}

// Names returns the names of the estimators, sorted.
func Names() []string {
	out := make([]string, 0, len(estimators))
	for n := range estimators {
		out = append(out, string(n))
	}
	slices.Sort(out)
	return out
}

// errRolloutsOnly is Episode's error of an estimator of rollouts only (New refuses
// such an estimator for recorded episodes).
var errRolloutsOnly = errors.New("estimator: this estimator compares whole rollouts, not the candidates of recorded steps")
