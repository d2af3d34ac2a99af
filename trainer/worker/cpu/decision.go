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
	"fmt"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// DecisionLogits is the Yes-minus-No logit of a prompt's recommendation decision
// (the Yes/No choice once the policy answers with a recommendation), split into
// its parts: Head is logit(Yes) - logit(No) of the MLP head, and Delta what the
// match module adds to the logit of Yes (0 in the features architecture, which
// has no module). Margin = Head + Delta is the decision's logit: p(Yes) =
// sigmoid(Margin). Beta is the part of Delta that is the module's constant beta
// (tokens.go), the same for every decision; Delta - Beta is the part read from
// the prompt's words.
type DecisionLogits struct {
	Head, Delta, Beta float64
}

// Margin returns Head + Delta, the decision's Yes-minus-No logit.
func (d DecisionLogits) Margin() float64 { return d.Head + d.Delta }

// PYes returns the probability of Yes at temperature 1, sigmoid(Margin).
func (d DecisionLogits) PYes() float64 { return sigmoid(d.Margin()) }

// Decision returns the split of pr's Yes/No logit under the current weights. It
// is a read of the weights, for diagnostics: it changes nothing, and must not run
// while a Backward or Step changes them (the server's lock is not taken).
func (p *Policy) Decision(pr *workerpb.Prompt) (DecisionLogits, error) {
	if pr == nil {
		return DecisionLogits{}, fmt.Errorf("%w: no prompt", worker.ErrInvalid)
	}
	v := p.newView(pr)
	s := &scorer{sums: newSums(p.net(p.params), v)}
	s.eval(v.yesno, nil)
	d := DecisionLogits{Head: s.logits[0] - s.logits[1]}
	if s.isMatched(v.yesno) {
		d.Delta, d.Beta = s.sums.match.delta, s.sums.n.match.scal[1]
		d.Head -= d.Delta
	}
	return d, nil
}
