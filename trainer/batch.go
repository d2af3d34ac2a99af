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
	"cmp"
	"context"
	"fmt"
	"math"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// batchStats summarises one training step.
type batchStats struct {
	rewardSum   float64
	rewardCount int
	// stageReward accumulates the step rewards of each stage's candidates.
	stageReward map[espo.Stage]*meanAcc
	// advantage accumulates the candidates' advantages A and A^2.
	advantage, advantageSq meanAcc
	// cout is the mean R_COUT over the batch's episodes (0 for SFT and GRPO).
	cout         float64
	kl           float64
	clipFraction float64
	// sampler holds, for a reinforcement step whose answers carried the log-probs of
	// the engine that sampled them (worker.Sample.SamplerLogProbs), the mismatch
	// statistics of espo.LossStats; nil otherwise.
	sampler *samplerStats
	// objective is the worker-reported sum_t w_t * logp_t of the step, tokens the
	// answer tokens its backward passes took.
	objective float64
	tokens    int64
	gradNorm  float64
	// times holds the wall time of each phase of the step.
	times phaseTimes
}

// samplerStats are the statistics of the difference between the trainer's policy
// and the engine that sampled a step's answers, over the step's tokens.
type samplerStats struct {
	// mismatch is the mean |logp_old - logp_sampler|, weight the mean importance
	// weight before truncation, truncated the fraction of tokens whose weight was
	// truncated at the cap.
	mismatch, weight, truncated float64
}

// addStageReward adds a candidate's step reward r to its stage's.
func (s *batchStats) addStageReward(stage espo.Stage, r float64) {
	if s.stageReward == nil {
		s.stageReward = map[espo.Stage]*meanAcc{}
	}
	if s.stageReward[stage] == nil {
		s.stageReward[stage] = &meanAcc{}
	}
	s.stageReward[stage].add(r, 1)
}

// addAdvantages adds the groups' advantages to the step's statistics.
func (s *batchStats) addAdvantages(gs []*group) {
	for _, g := range gs {
		for _, a := range g.adv {
			s.advantage.add(a, 1)
			s.advantageSq.add(a*a, 1)
		}
	}
}

// advantageStd is the standard deviation of the step's advantages,
// sqrt(E[A^2] - E[A]^2).
func (s batchStats) advantageStd() float64 {
	m := s.advantage.mean()
	return math.Sqrt(max(s.advantageSq.mean()-m*m, 0))
}

func (s batchStats) meanReward() float64 {
	if s.rewardCount == 0 {
		return 0
	}
	return s.rewardSum / float64(s.rewardCount)
}

// group is a group of a reinforcement batch with what the step computes for it.
// GRPO batches of recorded episodes hold groups of single steps.
type group struct {
	*experience.Group
	// adv[j*G+g] is the advantage of candidate g of step j.
	adv []float64
	// logp and ref are the per-token log-probs under the current and the reference
	// policy, per candidate: logp is the samples' Logprobs unless the worker returned
	// current log-probs; ref is empty when the loss has no KL term.
	logp, ref [][]float64
}

// trainBatch takes one optimizer step on the current batch of the current epoch.
func (t *Trainer) trainBatch(ctx context.Context, k plan.Kind) (batchStats, error) {
	stats := batchStats{times: phaseTimes{}}
	var err error
	start := t.opts.Clock.Now()
	t.policy.take() // what an evaluation's Generate calls took is no step's
	if k == plan.SFT {
		var gs []*experience.Group
		gs, err = t.src.Demonstrations(ctx, t.state.Epoch, t.state.Batch)
		t.policy.sampled(stats.times, t.opts.Clock.Since(start), t.cfg.Spec.Datasets.Environment != nil)
		if err == nil {
			err = t.backwardSFT(ctx, gs, &stats)
		}
	} else {
		var b experience.Batch
		b, err = t.src.Candidates(ctx, t.state.Epoch, t.state.Batch, t.sampling())
		t.policy.sampled(stats.times, t.opts.Clock.Since(start), t.cfg.Spec.Datasets.Environment != nil)
		if err == nil {
			err = t.backwardRL(ctx, b, &stats)
		}
	}
	if err != nil {
		return stats, err
	}
	err = timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseOptimizer, func() (err error) {
		stats.gradNorm, err = t.step(ctx)
		return err
	})
	return stats, err
}

// sampling is how the policy samples the candidates of the current step.
func (t *Trainer) sampling() experience.Sampling {
	return experience.Sampling{G: t.settings.GroupSize, Temperature: t.settings.Temperature, Seed: t.settings.Seed, Step: t.state.Step}
}

// backwardSFT accumulates the cross-entropy gradient of the demonstrated answers:
// every answer gets sequence weight 1/(steps in batch), so the loss is the mean over
// steps of -log p(answer).
func (t *Trainer) backwardSFT(ctx context.Context, gs []*experience.Group, stats *batchStats) error {
	n := 0
	for _, g := range gs {
		n += len(g.Steps)
	}
	reqs := make([][]worker.Weighted, len(gs))
	for i, g := range gs {
		for j, s := range g.Steps {
			reqs[i] = append(reqs[i], worker.Weighted{
				Prompt:         g.Prompts[j],
				Answer:         worker.Answer{Text: demonstrated(&g.Episode.Steps[s])},
				SequenceWeight: 1 / float64(n),
			})
		}
	}
	return t.backward(ctx, reqs, stats)
}

// demonstrated returns the demonstrated answer of a step in the GUI-R1 format.
func demonstrated(s *dataset.Step) string { return espo.FormatAnswer("", s.Answer.Espo()) }

// backwardRL scores the candidates of a batch, computes their advantages with the
// run's estimator and the loss weights of the clipped, KL-penalised objective, and
// accumulates its gradient.
func (t *Trainer) backwardRL(ctx context.Context, b experience.Batch, stats *batchStats) error {
	gs := groups(b)
	defer t.intents.Release()
	err := timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseRewards, func() error {
		if err := t.intents.PrefetchBatch(ctx, b.Groups); err != nil {
			return err
		}
		err := t.advantages(gs, b.Families, stats)
		stats.addAdvantages(gs)
		if err == nil {
			t.observeAdvantages(gs)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseReference, func() error { return t.logProbs(ctx, gs) }); err != nil {
		return err
	}
	return t.lossBackward(ctx, gs, stats)
}

// groups returns the groups of b, ready for what the step computes.
func groups(b experience.Batch) []*group {
	gs := make([]*group, len(b.Groups))
	for i, g := range b.Groups {
		gs[i] = &group{Group: g}
	}
	return gs
}

// advantages scores every candidate of the batch and writes its advantage with the
// run's estimator, one comparison group at a time: each recorded episode's G
// candidates per step, or, when families is set (a batch lived through an
// environment), the G rollouts of each episode seed. stats.cout is the mean COUT of
// those groups.
func (t *Trainer) advantages(gs []*group, families [][]int, stats *batchStats) error {
	if families == nil {
		for _, g := range gs {
			ep := t.score(g.Group, stats)
			g.adv = make([]float64, len(g.Samples))
			c, err := t.estimator.Episode(g.adv, ep)
			if err != nil {
				return err
			}
			stats.cout += c.Reward / float64(len(gs))
		}
		return nil
	}
	for _, family := range families {
		rs := make([]espo.Rollout, len(family))
		dst := make([][]float64, len(family))
		for i, gi := range family {
			g := gs[gi]
			r := t.score(g.Group, stats)
			rs[i] = espo.Rollout{Stages: r.Stages, Step: r.Step, Stage: r.Stage, States: make([]uint64, len(g.Prompts))}
			for j, p := range g.Prompts {
				rs[i].States[j] = p.ObservationKey()
			}
			g.adv = make([]float64, len(g.Samples))
			dst[i] = g.adv
		}
		c, err := t.estimator.Rollouts(dst, rs)
		if err != nil {
			return err
		}
		stats.cout += c.Reward / float64(len(families))
	}
	return nil
}

// score scores every candidate of g against its step's ground truth, adding the
// step rewards to stats: candidate c of step j at index j*G + c.
func (t *Trainer) score(g *experience.Group, stats *batchStats) espo.EpisodeRewards {
	G := len(g.Samples) / len(g.Steps)
	ep := espo.EpisodeRewards{G: G, Stages: make([]espo.Stage, len(g.Steps)),
		Step: make([]float64, len(g.Samples)), Stage: make([]float64, len(g.Samples))}
	for j, s := range g.Steps {
		step := &g.Episode.Steps[s]
		gt := g.Episode.GroundTruth(step)
		ep.Stages[j] = step.Stage.Espo()
		for c := range G {
			sc := t.rewarder.Score(&gt, g.Samples[j*G+c].Answer.Text)
			ep.Step[j*G+c], ep.Stage[j*G+c] = sc.Step(), sc.Stage
			stats.rewardSum += sc.Step()
			stats.rewardCount++
			stats.addStageReward(ep.Stages[j], sc.Step())
		}
	}
	return ep
}

// logProbs sets every candidate's log-probs under the current policy (logp) and, when
// the loss has a KL term (beta != 0), under the reference policy (ref). A batch takes
// one optimizer step, so the current policy is the one that sampled the candidates and
// logp is what Generate reported; the workers are asked for the reference only, and
// not at all when beta is 0.
func (t *Trainer) logProbs(ctx context.Context, gs []*group) error {
	for _, g := range gs {
		g.useSampledLogProbs()
	}
	if t.settings.Loss.Beta == 0 {
		return nil
	}
	reqs := make([][]worker.Scored, len(gs))
	for i, g := range gs {
		reqs[i] = g.scored()
	}
	lps, err := t.opts.Workers.ReferenceLogProbs(ctx, reqs)
	if err != nil {
		return err
	}
	for i, g := range gs {
		if err := g.useReference(lps[i]); err != nil {
			return fmt.Errorf("episode %s: %w", g.Episode.ID, err)
		}
	}
	return nil
}

// useSampledLogProbs takes the log-probs Generate reported as the group's current
// log-probs and leaves its reference log-probs empty.
func (g *group) useSampledLogProbs() {
	g.logp, g.ref = make([][]float64, len(g.Samples)), make([][]float64, len(g.Samples))
	for i, s := range g.Samples {
		g.logp[i] = s.LogProbs
	}
}

// scored returns the group's candidates as answers to score.
func (g *group) scored() []worker.Scored {
	G := len(g.Samples) / len(g.Prompts)
	out := make([]worker.Scored, len(g.Samples))
	for i, s := range g.Samples {
		out[i] = worker.Scored{Prompt: g.Prompts[i/G], Answer: s.Answer}
	}
	return out
}

// useReference takes the reference log-probs of the group's candidates, one per
// candidate. A worker that returns the current log-probs anyway (one that ignores
// ReferenceOnly) has them used instead of Generate's; each answer's current and
// reference log-probs must have as many tokens as Generate gave it.
func (g *group) useReference(lps []worker.TokenLogProbs) error {
	for i, it := range lps {
		n := len(g.Samples[i].LogProbs)
		if len(it.Current) > 0 {
			if len(it.Current) != n {
				return fmt.Errorf("logprobs: answer %d has %d tokens, generate gave %d", i, len(it.Current), n)
			}
			g.logp[i] = it.Current
		}
		if len(it.Reference) != n {
			return fmt.Errorf("logprobs: answer %d has %d reference log-probs, generate gave %d tokens", i, len(it.Reference), n)
		}
		g.ref[i] = it.Reference
	}
	return nil
}

// lossBackward computes the loss weights of the whole batch at once (so that the
// aggregation normalises over the batch, whatever the number of workers) and sends
// each worker the weights of its candidates.
func (t *Trainer) lossBackward(ctx context.Context, gs []*group, stats *batchStats) error {
	var tok espo.Tokens
	for _, g := range gs {
		for i, s := range g.Samples {
			tok.LogP = append(tok.LogP, g.logp[i]...)
			tok.OldLogP = append(tok.OldLogP, s.LogProbs...)
			if tok.RefLogP != nil || len(g.ref[i]) > 0 {
				tok.RefLogP = append(tok.RefLogP, g.ref[i]...)
			}
			tok.Lens = append(tok.Lens, len(s.LogProbs))
			tok.Adv = append(tok.Adv, g.adv[i])
		}
	}
	smp, err := samplerLogProbs(gs)
	if err != nil {
		return err
	}
	if smp == nil && len(tok.LogP) > 0 && t.cfg.Spec.Model.Engine() == trainingv1alpha1.RolloutVLLM {
		return fmt.Errorf("spec.model.rollout.engine is vllm, but no answer of the batch carries the engine's log-probs "+
			"(sampler_logprobs): the workers sampled with their own policy, or do not report them; the sampler correction "+
			"(cap %g) cannot apply", t.settings.Loss.ISCap)
	}
	tok.SamplerLogP = smp
	weights := make([]float64, len(tok.LogP))
	var ls espo.LossStats
	err = timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseRewards, func() (err error) {
		ls, err = espo.LossWeights(weights, tok, t.settings.Loss)
		return err
	})
	if err != nil {
		return err
	}
	stats.kl, stats.clipFraction = ls.KL, ls.ClipFrac
	if smp != nil {
		stats.sampler = &samplerStats{mismatch: ls.SamplerMismatch, weight: ls.ISWeight, truncated: ls.ISTruncFrac}
	}
	reqs := make([][]worker.Weighted, len(gs))
	off := 0
	for k, g := range gs {
		G := len(g.Samples) / len(g.Prompts)
		reqs[k] = make([]worker.Weighted, len(g.Samples))
		for i, s := range g.Samples {
			n := len(s.LogProbs)
			reqs[k][i] = worker.Weighted{Prompt: g.Prompts[i/G], Answer: s.Answer, TokenWeights: weights[off : off+n]}
			off += n
		}
	}
	return t.backward(ctx, reqs, stats)
}

// samplerLogProbs returns the log-probs of the batch's answers under the engine that
// sampled them, token by token in the order of the groups and their samples (as
// lossBackward lays out the tokens), or nil when no answer carries any (the policy
// sampled them). An answer with tokens either carries one per token or none, and
// every answer of the batch does the same; otherwise it returns an error naming the
// answer.
func samplerLogProbs(gs []*group) ([]float64, error) {
	var with, without string // an answer with sampler log-probs, one without
	n := 0
	for _, g := range gs {
		for i, s := range g.Samples {
			switch {
			case len(s.LogProbs) == 0 && len(s.SamplerLogProbs) == 0: // no tokens: either way
			case len(s.SamplerLogProbs) == 0:
				without = cmp.Or(without, g.answer(i))
			case len(s.SamplerLogProbs) != len(s.LogProbs):
				return nil, fmt.Errorf("generate: %s has %d sampler log-probs for its %d tokens: a worker that samples with an engine must report one per token",
					g.answer(i), len(s.SamplerLogProbs), len(s.LogProbs))
			default:
				with = cmp.Or(with, g.answer(i))
				n += len(s.LogProbs)
			}
		}
	}
	switch {
	case with == "":
		return nil, nil
	case without != "":
		return nil, fmt.Errorf("generate: %s carries the sampling engine's log-probs and %s does not: every answer of a batch must, or none "+
			"(are the workers configured alike?)", with, without)
	}
	out := make([]float64, 0, n)
	for _, g := range gs {
		for _, s := range g.Samples {
			out = append(out, s.SamplerLogProbs...)
		}
	}
	return out, nil
}

// answer names candidate i of the group: its episode, step and candidate index.
func (g *group) answer(i int) string {
	G := len(g.Samples) / len(g.Prompts)
	step := i / G
	if g.Steps != nil {
		step = g.Steps[step]
	}
	return fmt.Sprintf("the answer of episode %s, step %d, candidate %d", g.Episode.ID, step, i%G)
}

// backward accumulates the gradient of each group's weighted answers (request i is
// group i's) on the gang.
func (t *Trainer) backward(ctx context.Context, reqs [][]worker.Weighted, stats *batchStats) error {
	return timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseBackward, func() error {
		done, err := t.opts.Workers.Backward(ctx, reqs)
		stats.objective += done.Objective
		stats.tokens += done.Tokens
		return err
	})
}

// step applies the optimizer step to the batch's gradient (the gang sums its
// members' gradients: the loss weights already normalise over the whole batch).
func (t *Trainer) step(ctx context.Context) (float64, error) {
	return t.opts.Workers.Step(ctx, t.stepOptions(t.state.Step))
}

// stepOptions returns the options of optimizer step s (counted from 0: the steps the
// run took before it): spec.algorithm.optimizer's AdamW constants, and the learning
// rate its schedule gives step s over the plan's total steps (status.training.
// totalSteps, the SFT cold start's included; an early stop does not shorten it).
// The rate depends on s alone, which a checkpoint restores, so a resumed run takes
// the rates the uninterrupted run took.
func (t *Trainer) stepOptions(s int64) worker.StepOptions {
	o := t.settings.Optimizer
	lr := t.settings.LearningRate
	if t.plan.KindAt(s) == plan.SFT {
		lr = t.settings.SFTLearningRate
	}
	return worker.StepOptions{
		LearningRate: espo.ScheduledRate(lr, o.Schedule, s, o.WarmupSteps, t.plan.TotalSteps()),
		MaxGradNorm:  t.settings.MaxGradNorm,
		Beta1:        o.Beta1, Beta2: o.Beta2, Epsilon: o.Epsilon, WeightDecay: o.WeightDecay,
	}
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
