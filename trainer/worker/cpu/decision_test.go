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
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// decisionLogProbs returns the log-probs of Yes and No at the decision token of
// a recommendation answer to pr, as LogProbs scores them.
func decisionLogProbs(t *testing.T, p *Policy, pr *workerpb.Prompt) (yes, no float64) {
	t.Helper()
	typ := tokenID(kindType, slices.Index(actionTypes, espo.ActionRecommendation))
	items := []*workerpb.Scored{
		{Prompt: pr, Answer: &workerpb.Answer{TokenIds: []int32{typ, tokenID(kindDecision, 0)}}},
		{Prompt: pr, Answer: &workerpb.Answer{TokenIds: []int32{typ, tokenID(kindDecision, 1)}}},
	}
	lps, err := p.LogProbs(items, worker.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lps[0].GetCurrent()[1], lps[1].GetCurrent()[1]
}

// TestDecisionSumsToLogit checks that the split of the Yes/No logit adds up to
// the policy's own log-odds of Yes, log p(Yes) - log p(No), on every recommend
// step of a few episodes, with the match module's tables drawn so that Delta is
// not 0; and that the features architecture, without the module, has Delta 0.
func TestDecisionSumsToLogit(t *testing.T) {
	tok := configured(t, 3, tokensOptions(map[string]string{"embed_bits": "6"}))
	m := tok.net(tok.params).match
	rng := rand.New(rand.NewPCG(7, 8))
	for _, x := range [][]float64{m.A, m.B, m.C, m.scal} {
		for i := range x {
			x[i] = 0.5 * rng.NormFloat64()
		}
	}
	feat := configured(t, 3, nil)
	checked, nonzero := 0, 0
	for _, ep := range episodes(t, 4, 9) {
		for j, pr := range prompts(&ep) {
			if ep.Steps[j].Stage != dataset.StageRecommend {
				continue
			}
			for _, p := range []*Policy{tok, feat} {
				d, err := p.Decision(pr)
				if err != nil {
					t.Fatal(err)
				}
				yes, no := decisionLogProbs(t, p, pr)
				if math.Abs(d.Margin()-(yes-no)) > 1e-9 || math.Abs(d.PYes()-math.Exp(yes)) > 1e-9 {
					t.Errorf("%s step %d: Head %g + Delta %g = %g, want log-odds %g (p(Yes) %g)", ep.ID, j, d.Head, d.Delta,
						d.Margin(), yes-no, math.Exp(yes))
				}
				if p == feat && (d.Delta != 0 || d.Beta != 0) {
					t.Errorf("features policy: Delta %g, Beta %g, want 0", d.Delta, d.Beta)
				}
				if p == tok && d.Beta != m.scal[1] {
					t.Errorf("Beta %g, want the module's beta %g", d.Beta, m.scal[1])
				}
				if p == tok && d.Delta != 0 {
					nonzero++
				}
			}
			checked++
		}
	}
	if checked == 0 || nonzero == 0 {
		t.Fatalf("%d recommend steps checked, %d with a non-zero Delta: the test covers nothing", checked, nonzero)
	}
	if _, err := tok.Decision(nil); err == nil {
		t.Error("Decision(nil): no error")
	}
}
