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
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// stageAccuracy is the greedy accuracy per stage: a GUI step is right when the
// type and the value are (Step success), the pool step when the intent is
// (cosine >= 0.75), a recommend step when the decision is.
type stageAccuracy struct{ right, total [4]int }

func (a *stageAccuracy) of(s dataset.Stage) float64 {
	k := s.Espo()
	return float64(a.right[k]) / float64(max(a.total[k], 1))
}

func evaluate(t testing.TB, p *Policy, eps []dataset.Episode) *stageAccuracy {
	t.Helper()
	rw, err := espo.NewRewarder(espo.DefaultRewardConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rw.SetSlotVocab(dataset.SlotVocab(eps))
	var acc stageAccuracy
	for i := range eps {
		ep := &eps[i]
		cands, err := p.Generate(prompts(ep), worker.SampleOptions{Samples: 1, Temperature: 1, Greedy: true})
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cands {
			st := &ep.Steps[j]
			gt := ep.GroundTruth(st)
			sc := rw.Score(&gt, c.Samples[0].Answer.Text)
			k := st.Stage.Espo()
			acc.total[k]++
			if sc.TypeOK && sc.ValueOK {
				acc.right[k]++
			}
		}
	}
	return &acc
}

// sftEpoch runs one epoch of SFT, one episode per batch: Backward on the
// ground-truth answers with sequence weight 1/(tokens of the episode), so the
// loss is the mean cross-entropy per token, then an AdamW step.
func sftEpoch(t testing.TB, p *Policy, eps []dataset.Episode, lr float64) {
	t.Helper()
	for i := range eps {
		ep := &eps[i]
		ps := prompts(ep)
		scored := make([]*workerpb.Scored, len(ps))
		for j := range ps {
			scored[j] = &workerpb.Scored{Prompt: ps[j], Answer: &workerpb.Answer{Text: truth(ep, j)}}
		}
		lps, err := p.LogProbs(scored, worker.ScoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, lp := range lps {
			n += len(lp.TokenIds)
		}
		items := make([]*workerpb.Weighted, len(ps))
		for j := range ps {
			items[j] = &workerpb.Weighted{Prompt: ps[j], Answer: &workerpb.Answer{TokenIds: lps[j].TokenIds}, SequenceWeight: 1 / float64(n)}
		}
		if _, _, err := p.Backward(items); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Step(worker.StepOptions{LearningRate: lr, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, MaxGradNorm: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSFTLearns trains the policy with SFT on 24 generated episodes (4 per
// channel) and checks that the greedy accuracy on their steps rises well above
// chance on every stage. Chance: a GUI step needs the type (1 of 7) and the
// element (1 of 10-40) or value; a pool step an intent text with cosine >= 0.75;
// a recommend step the type and Yes or No (1 of 14). It also reports the
// accuracy on 12 held-out episodes.
func TestSFTLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	all := episodes(t, 36, 11)
	train, heldOut := all[:24], all[24:]
	p := configured(t, 1, nil)
	report := func(when string) *stageAccuracy {
		acc, ho := evaluate(t, p, train), evaluate(t, p, heldOut)
		t.Logf("%-8s train: gui %.3f pool %.3f rec %.3f | held-out: gui %.3f pool %.3f rec %.3f", when,
			acc.of(dataset.StageGUI), acc.of(dataset.StagePool), acc.of(dataset.StageRecommend),
			ho.of(dataset.StageGUI), ho.of(dataset.StagePool), ho.of(dataset.StageRecommend))
		return acc
	}
	report("before")
	for range 5 {
		sftEpoch(t, p, train, 3e-3)
	}
	acc := report("5 epochs")
	for stage, min := range map[dataset.Stage]float64{dataset.StageGUI: 0.4, dataset.StagePool: 0.25, dataset.StageRecommend: 0.9} {
		if got := acc.of(stage); got < min {
			t.Errorf("%s accuracy on train steps %.3f after SFT, want >= %.2f", stage, got, min)
		}
	}
}
