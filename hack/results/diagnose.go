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

package main

import (
	"context"
	"fmt"
	"math"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// The diagnosis of -diagnose (issue 54): what the epochs of one arm do to the
// recommendation decision, window by window of optimizer steps, read on the
// VALIDATION episodes only (the test episodes are never lived through by it) and
// on the decisions the policy sampled in training.

// sampledTally accumulates the recommendation decisions a policy sampled in
// reinforcement steps, with the advantage each got from the estimator.
type sampledTally struct {
	// Steps counts the recommend steps of the rollouts; Decisions those answered
	// with a recommendation (Yes or No), Yes those answered Yes, Right those
	// answered as the hidden user decides.
	Steps     int `json:"steps"`
	Decisions int `json:"decisions"`
	Yes       int `json:"yes"`
	Right     int `json:"right"`
	// RightAdv and WrongAdv sum the advantages of the right and the wrong
	// decisions.
	RightAdv float64 `json:"rightAdv"`
	WrongAdv float64 `json:"wrongAdv"`
	// RightNegative counts the right decisions with a negative advantage,
	// WrongPositive the wrong ones with a positive advantage.
	RightNegative int `json:"rightNegative"`
	WrongPositive int `json:"wrongPositive"`
	// Push sums adv * (1[Yes] - p(Yes)) over the decisions, by the hidden user's
	// decision (PushYes where it is Yes): the derivative of the policy-gradient
	// objective sum adv * log p(decision) by the decision's Yes-minus-No logit,
	// before the loss's normalisation and clipping. Positive pushes the logit
	// toward Yes.
	PushYes  float64 `json:"pushYes"`
	PushNo   float64 `json:"pushNo"`
	TruthYes int     `json:"truthYes"`
}

// sampledDecision is one sampled recommend step: the hidden user's decision
// want, the sampled one (dataset.Yes, dataset.No, or "" for an answer that is no
// recommendation), the log-prob of the sampled decision token, and the
// advantage.
type sampledDecision struct {
	want, got string
	logp, adv float64
}

// add counts one sampled recommend step.
func (s *sampledTally) add(d sampledDecision) {
	s.Steps++
	if d.got == "" {
		return
	}
	s.Decisions++
	yes := 0.0
	if d.got == dataset.Yes {
		s.Yes++
		yes = 1
	}
	pYes := math.Exp(d.logp)
	if d.got != dataset.Yes {
		pYes = 1 - pYes
	}
	if d.want == dataset.Yes {
		s.TruthYes++
		s.PushYes += d.adv * (yes - pYes)
	} else {
		s.PushNo += d.adv * (yes - pYes)
	}
	if d.got == d.want {
		s.Right++
		s.RightAdv += d.adv
		if d.adv < 0 {
			s.RightNegative++
		}
	} else {
		s.WrongAdv += d.adv
		if d.adv > 0 {
			s.WrongPositive++
		}
	}
}

// sampledDecisions returns the recommend steps of a reinforcement batch as
// Observer.Advantages shows it: each group's candidates with their advantages,
// the hidden user's decision the reference answer of the step.
func sampledDecisions(groups []*experience.Group, adv [][]float64) []sampledDecision {
	var out []sampledDecision
	for i, g := range groups {
		G := len(g.Samples) / max(len(g.Steps), 1)
		for j, s := range g.Steps {
			st := &g.Episode.Steps[s]
			if st.Stage != dataset.StageRecommend {
				continue
			}
			for c := range G {
				smp := &g.Samples[j*G+c]
				d := sampledDecision{want: st.Answer.InputText, got: decisionOf(smp.Answer.Text), adv: adv[i][j*G+c]}
				if d.got != "" && len(smp.LogProbs) > 0 {
					d.logp = smp.LogProbs[len(smp.LogProbs)-1]
				}
				out = append(out, d)
			}
		}
	}
	return out
}

// decisionOf returns the decision of an answer text: dataset.Yes or dataset.No
// for a recommendation that says so, "" otherwise.
func decisionOf(text string) string {
	a, err := espo.ParseAnswer(text)
	if err != nil || a.Type != espo.ActionRecommendation || (a.Text != dataset.Yes && a.Text != dataset.No) {
		return ""
	}
	return a.Text
}

// liveDecision is one recommend step of a validation episode lived through: the
// split of the policy's Yes/No logit on the step's prompt, the hidden user's
// decision, the policy's (as decisionOf reads it) and whether the environment
// judged it right.
type liveDecision struct {
	logits    cpu.DecisionLogits
	want, got string
	right     bool
}

// liveValidation lives through n validation episodes of the simulated app sim
// with p answering as opts says (greedy, or sampled at a fixed seed), and returns
// every recommend step it judged.
func liveValidation(ctx context.Context, p *cpu.Policy, sim environment.Options, n int, opts worker.SampleOptions) ([]liveDecision, error) {
	envs, seeds, ids := make([]environment.Env, n), make([]uint64, n), make([]string, n)
	for i := range n {
		s, err := environment.NewSimulated(sim)
		if err != nil {
			return nil, err
		}
		envs[i], seeds[i], ids[i] = s, experience.EvaluationSeed("validation", i), fmt.Sprintf("validation-%d", i)
	}
	split := map[string][]cpu.DecisionLogits{}
	act := func(_ context.Context, obs []*environment.Observation, eps []*dataset.Episode) ([]string, error) {
		prompts := make([]*workerpb.Prompt, len(eps))
		for k, ep := range eps {
			prompts[k] = worker.PromptFromStep(ep, len(ep.Steps)-1)
			if obs[k].Stage == dataset.StageRecommend {
				d, err := p.Decision(prompts[k])
				if err != nil {
					return nil, err
				}
				split[ep.ID] = append(split[ep.ID], d)
			}
		}
		cands, err := p.Generate(prompts, opts)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(cands))
		for k, c := range cands {
			out[k] = c.GetSamples()[0].GetAnswer().GetText()
		}
		return out, nil
	}
	rs, err := environment.RunAll(ctx, envs, seeds, ids, act)
	if err != nil {
		return nil, err
	}
	var out []liveDecision
	for _, r := range rs {
		k := 0
		for j, res := range r.Results {
			if r.Episode.Steps[j].Stage != dataset.StageRecommend {
				continue
			}
			d := split[r.Episode.ID][k]
			k++
			if res.Judged {
				out = append(out, liveDecision{logits: d, want: res.Want, got: r.Episode.Steps[j].Answer.InputText, right: res.Right})
			}
		}
	}
	return out, nil
}

// splitMeans are the means of a quantity over decisions: all, those whose right
// answer is Yes, and those whose right answer is No.
type splitMeans struct {
	All      number `json:"all"`
	TruthYes number `json:"truthYes"`
	TruthNo  number `json:"truthNo"`
}

// validationTally summarises the judged recommend steps of a validation pass.
type validationTally struct {
	// Decisions is the number of judged recommend steps; RecAcc the share right;
	// Decided the share answered with a recommendation; AnsweredYes the share
	// of those answered Yes; TruthYes the share of steps whose right answer is Yes.
	Decisions   int    `json:"decisions"`
	RecAcc      number `json:"recAcc"`
	Decided     number `json:"decided"`
	AnsweredYes number `json:"answeredYes"`
	TruthYes    number `json:"truthYes"`
	// Head, Delta and Margin are the parts of the Yes-minus-No logit, Beta the
	// constant part of Delta (cpu.DecisionLogits); Entropy the decision's
	// entropy at temperature 1, in nats; PYes the probability of Yes.
	Head    splitMeans `json:"head"`
	Delta   splitMeans `json:"delta"`
	Beta    splitMeans `json:"beta"`
	Margin  splitMeans `json:"margin"`
	Entropy number     `json:"entropy"`
	PYes    number     `json:"pYes"`
}

// tallyValidation summarises ds.
func tallyValidation(ds []liveDecision) validationTally {
	var right, decided, yes, truthYes int
	var head, delta, beta, margin [3]meanOf // all, truth Yes, truth No
	var entropy, pYes meanOf
	for _, d := range ds {
		if d.right {
			right++
		}
		if d.got == dataset.Yes || d.got == dataset.No {
			decided++
			if d.got == dataset.Yes {
				yes++
			}
		}
		k := 2
		if d.want == dataset.Yes {
			truthYes++
			k = 1
		}
		for _, i := range []int{0, k} {
			head[i].add(d.logits.Head)
			delta[i].add(d.logits.Delta)
			beta[i].add(d.logits.Beta)
			margin[i].add(d.logits.Margin())
		}
		p := d.logits.PYes()
		pYes.add(p)
		entropy.add(binaryEntropy(p))
	}
	n := len(ds)
	return validationTally{Decisions: n, RecAcc: share(right, n), Decided: share(decided, n), AnsweredYes: share(yes, decided),
		TruthYes: share(truthYes, n), Head: means(head), Delta: means(delta), Beta: means(beta), Margin: means(margin),
		Entropy: entropy.mean(), PYes: pYes.mean()}
}

// meanOf is a running mean.
type meanOf struct {
	sum float64
	n   int
}

func (m *meanOf) add(x float64) { m.sum, m.n = m.sum+x, m.n+1 }

// mean is the mean, NaN without values.
func (m meanOf) mean() number { return number(ratio(m.sum, float64(m.n))) }

func means(m [3]meanOf) splitMeans {
	return splitMeans{All: m[0].mean(), TruthYes: m[1].mean(), TruthNo: m[2].mean()}
}

// share is n/d as a number, NaN when d is 0.
func share(n, d int) number { return number(ratio(float64(n), float64(d))) }

// binaryEntropy is -p ln p - (1-p) ln (1-p), 0 at p = 0 or 1.
func binaryEntropy(p float64) float64 {
	h := 0.0
	for _, q := range []float64{p, 1 - p} {
		if q > 0 {
			h -= q * math.Log(q)
		}
	}
	return h
}

// diagWindow is one window of optimizer steps of a diagnosed run.
type diagWindow struct {
	// From and To are the first and last optimizer step of the window (1-based);
	// Kind the kind of its epoch; EpochEnd whether it ends the epoch.
	From     int64     `json:"from"`
	To       int64     `json:"to"`
	Kind     plan.Kind `json:"kind"`
	EpochEnd bool      `json:"epochEnd"`
	// Sampled is what the policy sampled in the window's reinforcement steps.
	Sampled sampledTally `json:"sampled"`
	// Greedy is the greedy validation pass after the window; Temp1 the sampled one
	// (temperature 1, fixed seed), at the end of an epoch only.
	Greedy validationTally  `json:"greedy"`
	Temp1  *validationTally `json:"temp1,omitempty"`
	// Trainer is the trainer's own validation at the end of an epoch (its RecAcc is
	// a check that Greedy lives through the same episodes), filled after the run.
	Trainer *trainerValidation `json:"trainer,omitempty"`
}

// trainerValidation is the part of the trainer's validation evaluation that a
// choice of settings must keep: the decision, the navigation and the intent.
type trainerValidation struct {
	RecAcc    number `json:"recAcc"`
	StepSR    number `json:"stepSR"`
	IntentAcc number `json:"intentAcc"`
}

// diagnoser is the trainer.Observer of a diagnosed run: it accumulates the
// sampled decisions of each window of every optimizer steps and, at the end of a
// window, lives through the validation episodes with the policy.
type diagnoser struct {
	policy     *cpu.Policy
	sim        environment.Options
	episodes   int
	every      int64
	sampleSeed uint64
	cur        diagWindow
	windows    []diagWindow
}

var _ trainer.Observer = (*diagnoser)(nil)

// Advantages counts the batch's sampled recommendation decisions.
func (d *diagnoser) Advantages(_ int64, groups []*experience.Group, adv [][]float64) {
	for _, s := range sampledDecisions(groups, adv) {
		d.cur.Sampled.add(s)
	}
}

// Stepped closes the window after every d.every steps and at the end of an epoch.
func (d *diagnoser) Stepped(ctx context.Context, step int64, k plan.Kind, epochEnd bool) error {
	if d.cur.From == 0 {
		d.cur.From = step
	}
	if step%d.every != 0 && !epochEnd {
		return nil
	}
	w := d.cur
	w.To, w.Kind, w.EpochEnd = step, k, epochEnd
	ds, err := liveValidation(ctx, d.policy, d.sim, d.episodes, worker.SampleOptions{Samples: 1, Greedy: true})
	if err != nil {
		return fmt.Errorf("diagnosis after step %d: %w", step, err)
	}
	w.Greedy = tallyValidation(ds)
	if epochEnd {
		ds, err := liveValidation(ctx, d.policy, d.sim, d.episodes, worker.SampleOptions{Samples: 1, Temperature: 1, Seed: d.sampleSeed})
		if err != nil {
			return fmt.Errorf("diagnosis after step %d: %w", step, err)
		}
		t := tallyValidation(ds)
		w.Temp1 = &t
	}
	d.windows = append(d.windows, w)
	d.cur = diagWindow{}
	return nil
}
