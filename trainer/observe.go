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
	"context"

	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/plan"
)

// Observer watches a run step by step: an experiment's, as the diagnostics of
// hack/results -diagnose run it; no job sets one. The training loop calls it
// synchronously, between the workers' calls, so it may itself call the workers
// (to evaluate the policy between two steps); it must change neither the batches
// nor the advantages it is shown.
type Observer interface {
	// Advantages is called in every reinforcement step once the candidates'
	// advantages are computed, before the backward pass: step is the number of
	// optimizer steps taken before it, groups the batch's groups, and adv[i][j*G+g]
	// the advantage of candidate g of step j of groups[i] (G = 1 for rollouts lived
	// through an environment).
	Advantages(step int64, groups []*experience.Group, adv [][]float64)
	// Stepped is called after every optimizer step: step is the number of steps
	// taken, kind the epoch's, and epochEnd whether the step ended its epoch (the
	// validation evaluation follows). An error stops the run as a failed step.
	Stepped(ctx context.Context, step int64, kind plan.Kind, epochEnd bool) error
}

// observeAdvantages shows the batch's advantages to Options.Observer, when set.
func (t *Trainer) observeAdvantages(gs []*group) {
	if t.opts.Observer == nil {
		return
	}
	groups, adv := make([]*experience.Group, len(gs)), make([][]float64, len(gs))
	for i, g := range gs {
		groups[i], adv[i] = g.Group, g.adv
	}
	t.opts.Observer.Advantages(t.state.Step, groups, adv)
}

// observeStep tells Options.Observer, when set, that a step of ep was taken.
func (t *Trainer) observeStep(ctx context.Context, ep *plan.Epoch) error {
	if t.opts.Observer == nil {
		return nil
	}
	return t.opts.Observer.Stepped(ctx, t.state.Step, ep.Kind, t.state.Batch == ep.Batches-1)
}
