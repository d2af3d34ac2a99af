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
	"fmt"
	"slices"
	"strconv"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// The episode seeds of an environment run: training epoch e lives through seeds
// e*episodes .. e*episodes+episodes-1, so that every epoch meets new episodes; the
// validation and test episodes take seeds from these bases on, which no training
// epoch reaches.
const (
	validationSeeds = 1 << 48
	testSeeds       = 1 << 49
)

// lived is the experience of an environment (spec.datasets.environment): each
// group of a reinforcement batch is G rollouts of one episode seed, the policy's
// sampled answers driving the app; an SFT batch is the expert's demonstrations of
// the batch's seeds (the simulated app only); an evaluation lives through the
// held-out seeds greedily.
type lived struct {
	t    *Trainer
	spec *trainingv1alpha1.EnvironmentSource
	// train and eval open n environments for the training episodes and for the
	// evaluations: simulated apps, or rollouts of the endpoint.
	train, eval opener
	// sim holds the options of the simulated app's training episodes (nil for an
	// endpoint), for the expert's demonstrations.
	sim *environment.Options
	// remote is the endpoint's connection, nil for the simulated app.
	remote *environment.Remote
	// vocab holds the slot values, the intents' vocabulary.
	vocab espo.SlotVocab
}

// opener opens n environments, one per rollout of a batch.
type opener func(n int) ([]environment.Env, error)

// newLived returns the experience of spec, checking that its environments can be made
// (for an endpoint, dialing it with dial).
func newLived(t *Trainer, spec *trainingv1alpha1.EnvironmentSource, dial DialEnvironment) (*lived, error) {
	l := &lived{t: t, spec: spec, vocab: espo.SlotVocab{}}
	switch {
	case spec.Simulated != nil:
		return l, l.simulated(spec.Simulated)
	case spec.Endpoint != nil:
		return l, l.endpoint(spec.Endpoint, dial)
	}
	return nil, fmt.Errorf("spec.datasets.environment: set simulated or endpoint")
}

// simulated makes the environments the simulated app's.
func (l *lived) simulated(sim *trainingv1alpha1.SimulatedEnvironment) error {
	train := environment.Options{Channels: channelNames(sim.Channels), Difficulty: string(sim.Difficulty),
		Seed: uint64(sim.Seed), MaxSteps: int(l.spec.MaxSteps)}
	eval := train
	if len(sim.EvaluationChannels) > 0 {
		eval.Channels = channelNames(sim.EvaluationChannels)
	}
	for _, o := range []environment.Options{train, eval} {
		env, err := environment.NewSimulated(o)
		if err != nil {
			return fmt.Errorf("spec.datasets.environment.simulated: %w", err)
		}
		for k, vs := range env.Vocab() {
			for _, v := range vs {
				if !slices.Contains(l.vocab[k], v) {
					l.vocab[k] = append(l.vocab[k], v)
				}
			}
		}
	}
	l.sim, l.train, l.eval = &train, simulatedOpener(train), simulatedOpener(eval)
	return nil
}

func simulatedOpener(o environment.Options) opener {
	return func(n int) ([]environment.Env, error) {
		out := make([]environment.Env, n)
		for i := range out {
			sim, err := environment.NewSimulated(o)
			if err != nil {
				return nil, err
			}
			out[i] = sim
		}
		return out, nil
	}
}

// endpoint makes the environments rollouts of the endpoint's server: rollout ids
// "train-0", "train-1", ... and "eval-0", ..., the same ids batch after batch, so
// that the server keeps as many episodes as a batch has rollouts.
func (l *lived) endpoint(e *trainingv1alpha1.EnvironmentEndpoint, dial DialEnvironment) error {
	remote, err := dial(e.Address, time.Duration(e.TimeoutSeconds)*time.Second)
	if err != nil {
		return fmt.Errorf("spec.datasets.environment.endpoint: %w", err)
	}
	for k, vs := range e.Slots {
		l.vocab[k] = slices.Clone(vs)
	}
	l.remote = remote
	rollouts := func(prefix string) opener {
		return func(n int) ([]environment.Env, error) {
			out := make([]environment.Env, n)
			for i := range out {
				out[i] = remote.Rollout(prefix + strconv.Itoa(i))
			}
			return out, nil
		}
	}
	l.train, l.eval = rollouts("train-"), rollouts("eval-")
	return nil
}

// close closes the endpoint's connection, if there is one.
func (l *lived) close() {
	if l.remote != nil {
		_ = l.remote.Close()
	}
}

func channelNames(cs []trainingv1alpha1.Channel) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// batches returns the number of batches of an epoch: the epoch's episodes,
// episodesPerBatch at a time.
func (l *lived) batches() int {
	per := int(l.t.cfg.Spec.Algorithm.EpisodesPerBatch)
	return (int(l.spec.Episodes) + per - 1) / per
}

// EvaluationSeed returns the episode seed of the i-th episode of split ("validation"
// or "test") of a run in an environment: what a comparison lives through with its
// baselines to pair them with a trained policy's episodes.
func EvaluationSeed(split string, i int) uint64 {
	if split == "test" {
		return testSeeds + uint64(i)
	}
	return validationSeeds + uint64(i)
}

// seeds returns the episode seeds of batch b of epoch e.
func (l *lived) seeds(e, b int) []uint64 {
	n, per := int(l.spec.Episodes), int(l.t.cfg.Spec.Algorithm.EpisodesPerBatch)
	var out []uint64
	for i := b * per; i < min((b+1)*per, n); i++ {
		out = append(out, uint64(e)*uint64(n)+uint64(i))
	}
	return out
}

func (l *lived) demonstrations(ctx context.Context, e, b int) ([]*group, error) {
	if l.sim == nil {
		return nil, fmt.Errorf("trainer: an SFT epoch in an environment without an expert") // New refuses such a run
	}
	sim, err := environment.NewSimulated(*l.sim)
	if err != nil {
		return nil, err
	}
	var gs []*group
	for _, seed := range l.seeds(e, b) {
		ep, err := environment.Demonstration(ctx, sim, seed, fmt.Sprintf("e%d-s%d", e, seed))
		if err != nil {
			return nil, err
		}
		g := &group{ep: &ep}
		for j := range ep.Steps {
			g.steps = append(g.steps, j)
			g.prompts = append(g.prompts, worker.NewPrompt(&ep, j))
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// candidates lives through G rollouts of each seed of the batch in lockstep, one
// Generate call per round for every rollout not done, and returns each rollout as
// a group: its episode the references (environment.Rollout.Referenced), its
// prompts what the policy saw, its samples what the policy answered.
func (l *lived) candidates(ctx context.Context, e, b int) (batch, error) {
	seeds := l.seeds(e, b)
	G := int(l.t.cfg.Spec.Algorithm.GroupSize)
	var all []uint64
	var ids []string
	for _, seed := range seeds {
		for g := range G {
			all = append(all, seed)
			ids = append(ids, fmt.Sprintf("e%d-s%d-r%d", e, seed, g))
		}
	}
	rs, taken, err := l.live(ctx, l.train, all, ids, func(id string) worker.SampleOptions { return l.t.sampling(1, id) })
	if err != nil {
		return batch{}, err
	}
	var out batch
	for f := range seeds {
		var family []int
		for g := range G {
			i := f*G + g
			ref := rs[i].Referenced()
			grp := &group{ep: &ref, prompts: taken[i].prompts, samples: taken[i].samples}
			for j := range ref.Steps {
				grp.steps = append(grp.steps, j)
			}
			family = append(family, len(out.groups))
			out.groups = append(out.groups, grp)
		}
		out.families = append(out.families, family)
	}
	return out, nil
}

// answered is what the policy saw and answered at each step of a rollout.
type answered struct {
	prompts []worker.Prompt
	samples []worker.Sample
}

// live lives through seeds[i] as episode ids[i] on environments open makes, the
// policy answering with the options opts gives for the rollout, and returns the
// rollouts and what the policy saw and answered at each of their steps.
func (l *lived) live(ctx context.Context, open opener, seeds []uint64, ids []string,
	opts func(id string) worker.SampleOptions) ([]*environment.Rollout, []answered, error) {
	es, err := open(len(seeds))
	if err != nil {
		return nil, nil, err
	}
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	taken := make([]answered, len(seeds))
	act := func(ctx context.Context, _ []*environment.Observation, eps []*dataset.Episode) ([]string, error) {
		reqs := make([]worker.Rollouts, len(eps))
		for k, ep := range eps {
			p := worker.NewPrompt(ep, len(ep.Steps)-1)
			a := &taken[index[ep.ID]]
			a.prompts = append(a.prompts, p)
			reqs[k] = worker.Rollouts{Prompts: []worker.Prompt{p}, Options: opts(ep.ID)}
		}
		out, err := l.t.opts.Workers.Generate(ctx, reqs)
		if err != nil {
			return nil, err
		}
		answers := make([]string, len(eps))
		for k, ep := range eps {
			a := &taken[index[ep.ID]]
			a.samples = append(a.samples, out[k][0])
			answers[k] = out[k][0].Answer.Text
		}
		return answers, nil
	}
	rs, err := environment.RunAll(ctx, es, seeds, ids, act)
	return rs, taken, err
}

// evaluation lives through the split's held-out seeds greedily, in batches of at
// most evaluationBatch episodes.
func (l *lived) evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
	n := *l.spec.ValidationEpisodes
	if split == "test" {
		n = *l.spec.TestEpisodes
	}
	var eps []dataset.Episode
	var answers [][]string
	for start := 0; start < int(n); start += evaluationBatch {
		var seeds []uint64
		var ids []string
		for i := start; i < min(start+evaluationBatch, int(n)); i++ {
			seeds = append(seeds, EvaluationSeed(split, i))
			ids = append(ids, fmt.Sprintf("%s-%d", split, i))
		}
		rs, taken, err := l.live(ctx, l.eval, seeds, ids, func(string) worker.SampleOptions {
			return worker.SampleOptions{Samples: 1, Greedy: true}
		})
		if err != nil {
			return nil, nil, err
		}
		for i, r := range rs {
			eps = append(eps, r.Referenced())
			texts := make([]string, len(taken[i].samples))
			for j, s := range taken[i].samples {
				texts[j] = s.Answer.Text
			}
			answers = append(answers, texts)
		}
	}
	return eps, answers, nil
}

// evaluationBatch is how many evaluation episodes are lived through in lockstep.
const evaluationBatch = 64

// livedAdvantages scores the rollouts of each family of b and computes their
// advantages: espo.LivedAdvantages for ESPO (steps anchored on the states the
// rollouts share, COUT per rollout), its step term alone for GRPO, or the
// estimator of an experiment control.
func (t *Trainer) livedAdvantages(k Kind, b batch, stats *batchStats) error {
	for _, family := range b.families {
		rs := make([]espo.Rollout, len(family))
		dst := make([][]float64, len(family))
		for i, gi := range family {
			g := b.groups[gi]
			r := t.score(g, stats)
			rs[i] = espo.Rollout{Stages: r.Stages, Step: r.Step, Stage: r.Stage, States: make([]uint64, len(g.prompts))}
			for j, p := range g.prompts {
				rs[i].States[j] = p.ObservationKey()
			}
			g.adv = make([]float64, len(g.samples))
			dst[i] = g.adv
		}
		c, err := t.familyAdvantages(k, dst, rs)
		if err != nil {
			return err
		}
		for _, gi := range family {
			b.groups[gi].cout = c.Reward
		}
		stats.cout += c.Reward / float64(len(b.families))
	}
	return nil
}

// familyAdvantages writes the advantages of one family's rollouts to dst.
func (t *Trainer) familyAdvantages(k Kind, dst [][]float64, rs []espo.Rollout) (espo.COUT, error) {
	cfg := t.res.Advantage
	switch {
	case t.controls.OutcomeOnly:
		return espo.COUT{}, espo.OutcomeAdvantages(dst, rs, cfg.Eps)
	case t.controls.GiGPO:
		return espo.COUT{}, gigpoAdvantages(dst, rs, cfg.Eps)
	case k == KindGRPO:
		return espo.COUT{}, espo.AnchorStepAdvantages(dst, rs, cfg.Eps)
	case t.controls.ShuffleCOUT:
		return t.shuffledLivedAdvantages(dst, rs)
	}
	return espo.LivedAdvantages(dst, rs, cfg)
}

// gigpoAdvantages writes GiGPO's advantage: the outcome advantage plus the
// anchor-state step advantage.
func gigpoAdvantages(dst [][]float64, rs []espo.Rollout, eps float64) error {
	step := make([][]float64, len(dst))
	for g := range dst {
		step[g] = make([]float64, len(dst[g]))
	}
	if err := espo.AnchorStepAdvantages(step, rs, eps); err != nil {
		return err
	}
	if err := espo.OutcomeAdvantages(dst, rs, eps); err != nil {
		return err
	}
	for g := range dst {
		for i := range dst[g] {
			dst[g][i] += step[g][i]
		}
	}
	return nil
}

// shuffledLivedAdvantages is Controls.ShuffleCOUT in an environment: the anchor
// step advantages fused with the per-rollout COUT advantages of the family trained
// before this one (zeros for the first).
func (t *Trainer) shuffledLivedAdvantages(dst [][]float64, rs []espo.Rollout) (espo.COUT, error) {
	cfg := t.res.Advantage
	if err := espo.AnchorStepAdvantages(dst, rs, cfg.Eps); err != nil {
		return espo.COUT{}, err
	}
	own := make([]float64, len(rs))
	c, err := espo.LivedCOUTAdvantages(own, rs, cfg)
	if err != nil {
		return espo.COUT{}, err
	}
	prev := t.swapShuffledCOUT(own)
	for g := range dst {
		for i := range dst[g] {
			dst[g][i] += cfg.W * prev[g]
		}
	}
	return c, nil
}

// checkLivedRewards refuses rewards an environment run cannot judge by: intents are
// judged by slots against the preferences the environment reports, and no intent
// is known before an episode is lived, for an embedder to embed.
func checkLivedRewards(s *trainingv1alpha1.ESPOJobSpec) error {
	if s.Rewards.Intent.Embedder != nil {
		return fmt.Errorf("spec.rewards.intent.embedder: with spec.datasets.environment, intents are judged by slots against the preferences the environment reports; remove the embedder")
	}
	if m := s.Rewards.Intent.Match; m == trainingv1alpha1.IntentMatchEmbedding {
		return fmt.Errorf("spec.rewards.intent.match: %s: with spec.datasets.environment, intents are judged by slots; set auto or slots", m)
	}
	return nil
}
