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

package experience

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
	"github.com/espo-dev/espo-operator/trainer/plan"
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

// Lived is the experience of an environment (spec.datasets.environment): each
// family of a reinforcement batch is G rollouts of one episode seed, the policy's
// sampled answers driving the app; an SFT batch is the expert's demonstrations of
// the batch's seeds (the simulated app only); an evaluation lives through the
// held-out seeds greedily.
type Lived struct {
	spec   *trainingv1alpha1.EnvironmentSource
	policy Policy
	// perBatch is the number of episode seeds of a batch (spec.algorithm.episodesPerBatch).
	perBatch int
	plan     *plan.Plan
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

// Dial connects to an environment server at address, bounding every call by timeout
// (environment.Dial with the job's worker token, say).
type Dial func(address string, timeout time.Duration) (*environment.Remote, error)

// NewLived returns the experience of spec, batched as alg says and lived through by
// p, checking that its environments can be made (for an endpoint, dialing it with
// dial). An endpoint gives no demonstrations: with one, alg must run no SFT epoch.
func NewLived(spec *trainingv1alpha1.EnvironmentSource, alg *trainingv1alpha1.AlgorithmSpec, p Policy, dial Dial) (*Lived, error) {
	if spec.Endpoint != nil && (*alg.SFTEpochs > 0 || alg.Name == trainingv1alpha1.AlgorithmSFT) {
		return nil, fmt.Errorf("spec.algorithm: an environment endpoint gives no demonstrations to fine-tune on: set sftEpochs: 0 and name espo or grpo")
	}
	l := &Lived{spec: spec, policy: p, perBatch: int(alg.EpisodesPerBatch), vocab: espo.SlotVocab{}}
	var err error
	switch {
	case spec.Simulated != nil:
		err = l.simulated(spec.Simulated)
	case spec.Endpoint != nil:
		err = l.endpoint(spec.Endpoint, dial)
	default:
		err = fmt.Errorf("spec.datasets.environment: set simulated or endpoint")
	}
	if err != nil {
		return nil, err
	}
	batches := (int(spec.Episodes) + l.perBatch - 1) / l.perBatch
	l.plan = plan.New(alg, func(int, plan.Kind) int { return batches })
	return l, nil
}

// Plan returns the run's epochs: each of the batches of an epoch's episodes,
// episodesPerBatch seeds at a time.
func (l *Lived) Plan() *plan.Plan { return l.plan }

// Recorded returns no episodes: an environment's are lived.
func (l *Lived) Recorded() *Splits { return &Splits{} }

// Vocab returns the slot values of the environment: the simulated app's, or the
// endpoint's spec.datasets.environment.endpoint.slots.
func (l *Lived) Vocab() espo.SlotVocab { return l.vocab }

// simulated makes the environments the simulated app's.
func (l *Lived) simulated(sim *trainingv1alpha1.SimulatedEnvironment) error {
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
func (l *Lived) endpoint(e *trainingv1alpha1.EnvironmentEndpoint, dial Dial) error {
	remote, err := dial(string(e.Address), time.Duration(e.TimeoutSeconds)*time.Second)
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

// Close closes the endpoint's connection, if there is one.
func (l *Lived) Close() error {
	if l.remote != nil {
		return l.remote.Close()
	}
	return nil
}

func channelNames(cs []trainingv1alpha1.Channel) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
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
func (l *Lived) seeds(e, b int) []uint64 {
	n, per := int(l.spec.Episodes), l.perBatch
	var out []uint64
	for i := b * per; i < min((b+1)*per, n); i++ {
		out = append(out, uint64(e)*uint64(n)+uint64(i))
	}
	return out
}

// Demonstrations returns the expert's demonstrations of the batch's seeds in the
// simulated app.
func (l *Lived) Demonstrations(ctx context.Context, e, b int) ([]*Group, error) {
	if l.sim == nil {
		return nil, fmt.Errorf("trainer: an SFT epoch in an environment without an expert") // New refuses such a run
	}
	sim, err := environment.NewSimulated(*l.sim)
	if err != nil {
		return nil, err
	}
	var gs []*Group
	for _, seed := range l.seeds(e, b) {
		ep, err := environment.Demonstration(ctx, sim, seed, fmt.Sprintf("e%d-s%d", e, seed))
		if err != nil {
			return nil, err
		}
		g := &Group{Episode: &ep}
		for j := range ep.Steps {
			g.Steps = append(g.Steps, j)
			g.Prompts = append(g.Prompts, worker.NewPrompt(&ep, j))
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// Candidates lives through s.G rollouts of each seed of the batch in lockstep, one
// Generate call per round for every rollout not done, and returns each rollout as
// a group: its episode the references (environment.Rollout.Referenced), its
// prompts what the policy saw, its samples what the policy answered.
func (l *Lived) Candidates(ctx context.Context, e, b int, s Sampling) (Batch, error) {
	seeds := l.seeds(e, b)
	G := s.G
	var all []uint64
	var ids []string
	for _, seed := range seeds {
		for g := range G {
			all = append(all, seed)
			ids = append(ids, fmt.Sprintf("e%d-s%d-r%d", e, seed, g))
		}
	}
	rs, taken, err := l.live(ctx, l.train, all, ids, func(id string) worker.SampleOptions { return s.options(1, id) })
	if err != nil {
		return Batch{}, err
	}
	var out Batch
	for f := range seeds {
		var family []int
		for g := range G {
			i := f*G + g
			ref := rs[i].Referenced()
			grp := &Group{Episode: &ref, Prompts: taken[i].prompts, Samples: taken[i].samples}
			for j := range ref.Steps {
				grp.Steps = append(grp.Steps, j)
			}
			family = append(family, len(out.Groups))
			out.Groups = append(out.Groups, grp)
		}
		out.Families = append(out.Families, family)
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
func (l *Lived) live(ctx context.Context, open opener, seeds []uint64, ids []string,
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
		out, err := l.policy.Generate(ctx, reqs)
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

// Evaluation lives through the split's held-out seeds greedily, in batches of at
// most evaluationBatch episodes.
func (l *Lived) Evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
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

// CheckRewards refuses rewards an environment run cannot judge by: intents are
// judged by slots against the preferences the environment reports, and no intent
// is known before an episode is lived, for an embedder to embed (nor a threshold
// of its similarity to apply). The API server refuses the same.
func CheckRewards(s *trainingv1alpha1.ESPOJobSpec) error {
	if s.Rewards.Intent.Embedder != nil {
		return fmt.Errorf("spec.rewards.intent.embedder: with spec.datasets.environment, intents are judged by slots against the preferences the environment reports; remove the embedder")
	}
	if m := s.Rewards.Intent.Match; m == trainingv1alpha1.IntentMatchEmbedding {
		return fmt.Errorf("spec.rewards.intent.match: %s: with spec.datasets.environment, intents are judged by slots; set auto or slots", m)
	}
	if tau := s.Rewards.Intent.Threshold; tau != "" {
		return fmt.Errorf("spec.rewards.intent.threshold: %s: with spec.datasets.environment, intents are judged by slots, "+
			"never by the embedding similarity it bounds; remove it", tau)
	}
	return nil
}
