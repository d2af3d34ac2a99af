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
	"math/rand/v2"
	"strings"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/estimator"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/metrics"
)

// The arms of the comparison in the simulated app (-environment). Every arm starts
// from the same SFT cold start on the expert's demonstrations and takes the same
// optimizer steps.
var environmentArms = []arm{
	untrainedArm,
	{armSFT, "supervised on the expert's demonstrations only, as many optimizer steps as the others", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Algorithm.Name = trainingv1alpha1.AlgorithmSFT
	}},
	{armGRPO, "step-wise GRPO: each step's reward normalised over the steps of the group that answered the same state, no COUT", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Algorithm.Name = trainingv1alpha1.AlgorithmGRPO
	}},
	{"outcome grpo", "outcome-only GRPO: what the rollout stated and decided, normalised over the G rollouts, for every step", func(_ *trainingv1alpha1.ESPOJobSpec, r *armRun, _ trainingv1alpha1.COUTMode) {
		r.estimator = estimator.OutcomeOnly
	}},
	{"gigpo", "GiGPO-style: the outcome advantage plus the anchor-state step advantage", func(_ *trainingv1alpha1.ESPOJobSpec, r *armRun, _ trainingv1alpha1.COUTMode) {
		r.estimator = estimator.GiGPO
	}},
	{"espo episode", "ESPO: the anchor-state step advantage plus each rollout's own R_COUT (the job's default)", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = trainingv1alpha1.COUTEpisode
	}},
	{"espo rollout", "ESPO with R_COUT normalised over the G rollouts", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = trainingv1alpha1.COUTRollout
	}},
	{"espo w=0", "ESPO without COUT: the same computation as grpo, a check that equal methods score equally", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode, s.Rewards.COUT.Weight = m, "0"
	}},
	{"espo shuffled COUT", "control: each group gets the previous group's COUT advantages", func(s *trainingv1alpha1.ESPOJobSpec, r *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = m
		r.estimator = estimator.ShuffledCOUT
	}},
}

// metricReached is, in the environment, the share of test episodes that reached the
// item pool: RecAcc counts the decisions a policy made, so a policy must be read by
// both.
var metricReached = metric{"Pool reached", func(m *metrics.Metrics) tally {
	if m.PoolSteps > 0 {
		return tally{1, 1}
	}
	return tally{0, 1}
}}

// environmentSpec is spec's job in the simulated app: o.trainEpisodes new episodes
// of the training channels per epoch, validation and test episodes of the test
// channels (so a test channel not trained on is held out), the world of seed.
func environmentSpec(o options, seed int64) trainingv1alpha1.ESPOJobSpec {
	s := spec(o, seed)
	s.Datasets.Sources = nil
	val, test := int32(o.valEpisodes), int32(o.testEpisodes)
	sim := &trainingv1alpha1.SimulatedEnvironment{Difficulty: o.difficulty, Seed: seed}
	for _, c := range o.trainChannels {
		sim.Channels = append(sim.Channels, trainingv1alpha1.Channel(c))
	}
	for _, c := range o.testChannels {
		sim.EvaluationChannels = append(sim.EvaluationChannels, trainingv1alpha1.Channel(c))
	}
	s.Datasets.Environment = &trainingv1alpha1.EnvironmentSource{Simulated: sim, Episodes: int32(o.trainEpisodes),
		ValidationEpisodes: &val, TestEpisodes: &test}
	return s
}

// testScores lives through the run's test episodes with its trained policy and
// scores each, returning the tallies and the episodes' channels.
func testScores(ctx context.Context, t *trainer.Trainer) ([][]tally, []string, error) {
	eps, answers, err := t.EvaluationEpisodes(ctx, "test")
	if err != nil {
		return nil, nil, err
	}
	out := make([][]tally, len(eps))
	for e := range eps {
		r, err := t.EvaluateAnswers(ctx, "test", eps[e:e+1], answers[e:e+1])
		if err != nil {
			return nil, nil, err
		}
		out[e] = tallies(&r.Report.Micro)
	}
	return out, channelsOf(eps), nil
}

// The bounds the simulated app must meet on the test episodes of every seed before
// any arm is read (the environment's own tests hold it to them too).
const (
	minExpertRecAcc   = 0.95
	maxNeverRecAcc    = 0.60
	maxRandomSuccess  = 0.10
	maxRandomIntents  = 0.02
	minSFTLead        = 0.10
	maxTemplateIntent = 0.05
)

// environmentValidity is what the checks of one seed measured on the test episodes:
// the baselines live through them exactly as the arms do.
type environmentValidity struct {
	Seed     int64 `json:"seed"`
	Episodes int   `json:"episodes"`
	// Expert, Never and Random are the RecAcc of the expert, of the policy that
	// never explores and of a random policy; RandomReached is the share of episodes
	// the random policy took to the pool, RandomIntent the share of its intents
	// that were right, and RandomSuccess its right decisions as a share of the
	// decisions the expert made on the same episodes: the random policy reaches the
	// pool so rarely that its RecAcc rests on a handful of decisions, and what must
	// stay low is how much of the task it does.
	Expert        float64 `json:"expert"`
	Never         float64 `json:"neverExplores"`
	Random        float64 `json:"random"`
	RandomReached float64 `json:"randomReached"`
	RandomIntent  float64 `json:"randomIntent"`
	RandomSuccess float64 `json:"randomSuccess"`
	// Template is the share of template intents (the requirement, values deleted)
	// that passed.
	Template float64 `json:"templateIntent"`
	// SFT is the RecAcc of the sft arm, once it ran: it must lead Never by
	// minSFTLead, or the policy cannot use what exploring shows.
	SFT *float64 `json:"sft,omitempty"`
}

func (v environmentValidity) ok() bool {
	return v.Expert >= minExpertRecAcc && v.Never <= maxNeverRecAcc && v.RandomSuccess <= maxRandomSuccess &&
		v.RandomIntent <= maxRandomIntents && v.Template <= maxTemplateIntent && (v.SFT == nil || *v.SFT >= v.Never+minSFTLead)
}

func (v environmentValidity) summary() string {
	verdict := "holds"
	if !v.ok() {
		verdict = "FAILS"
	}
	sft := "not run yet"
	if v.SFT != nil {
		sft = fmt.Sprintf("%.1f%%", 100*(*v.SFT))
	}
	return fmt.Sprintf("expert %.1f%% (>= %.0f%%), never explores %.1f%% (<= %.0f%%), random: %.1f%% of the expert's decisions "+
		"right (<= %.0f%%; RecAcc %.1f%%, pool in %.1f%%, intent %.1f%% (<= %.0f%%)), template intent %.1f%% (<= %.0f%%), sft %s (>= never + %.0f): %s",
		100*v.Expert, 100*minExpertRecAcc, 100*v.Never, 100*maxNeverRecAcc, 100*v.RandomSuccess, 100*maxRandomSuccess, 100*v.Random,
		100*v.RandomReached, 100*v.RandomIntent, 100*maxRandomIntents, 100*v.Template, 100*maxTemplateIntent, sft, 100*minSFTLead, verdict)
}

// checkEnvironmentValidity lives through the test episodes of a seed with the
// baselines (environment.Expert, NeverExplore, Random, TemplateIntent).
func checkEnvironmentValidity(ctx context.Context, o options, seed int64) (environmentValidity, error) {
	s := environmentSpec(o, seed)
	s.Default()
	env := s.Datasets.Environment
	sim, err := environment.NewSimulated(environment.Options{Channels: o.testChannels, Difficulty: string(o.difficulty),
		Seed: uint64(seed), MaxSteps: int(env.MaxSteps)})
	if err != nil {
		return environmentValidity{}, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7a11d))
	v := environmentValidity{Seed: seed, Episodes: o.testEpisodes}
	var expert, never, random, template environment.Accuracy
	for i := range o.testEpisodes {
		episode := experience.EvaluationSeed("test", i)
		for _, p := range []struct {
			policy environment.Policy
			acc    *environment.Accuracy
		}{{environment.Expert, &expert}, {environment.NeverExplore, &never}, {environment.Random(rng), &random},
			{environment.TemplateIntent, &template}} {
			r, err := environment.Run(ctx, sim, episode, "validity", p.policy.Actor(sim))
			if err != nil {
				return v, err
			}
			p.acc.Add(r)
		}
	}
	v.Expert, v.Never, v.Random, v.RandomIntent = expert.RecAcc(), never.RecAcc(), random.RecAcc(), random.IntentAcc()
	v.RandomReached = frac(random.Intents, o.testEpisodes)
	v.RandomSuccess = frac(random.RightDecisions, expert.Decisions)
	v.Template = template.IntentAcc()
	return v, nil
}

// writeEnvironmentHeader writes the title, the set-up and the validity checks of
// the comparison in the simulated app.
func writeEnvironmentHeader(b *strings.Builder, o options, res *results, held []string) {
	b.WriteString("# Results in the simulated app: SFT, GRPO, GiGPO, ESPO and its controls on episodes the policy lives through\n\n")
	fmt.Fprintf(b, "Generated by `hack/results -environment`; do not edit by hand. %s users in the simulated SmartSpot app "+
		"(spec.datasets.environment.simulated), seeds %v, each seeding the app's world and the training. Per seed and epoch: "+
		"%d new episodes of %s; %d validation and %d test episodes of %s (held out, never trained on: %s), the same for "+
		"every arm. SFT epochs on the expert's demonstrations: %d, then %d epochs of each method (SFT only: %d epochs of "+
		"SFT), so every trained arm takes the same optimizer steps; G = %d rollouts of each episode; the CPU token "+
		"policy (hidden %d), %s; intents judged slot by slot and rewarded by slotScore %s; w = 0 and the "+
		"shuffled control in %s mode. Wall time of the whole run: %s.\n\n",
		o.difficulty, o.seeds, o.trainEpisodes, strings.Join(o.trainChannels, ", "), o.valEpisodes, o.testEpisodes,
		strings.Join(o.testChannels, ", "), orNone(held), o.sftEpochs, o.epochs, o.sftEpochs+o.epochs, o.groupSize,
		o.hidden, o.rates(), o.slotScore, o.ablationMode, res.Wall)
	b.WriteString("## Validity of the test bed\n\n")
	fmt.Fprintf(b, "Measured on each seed's test episodes, lived through by policies without weights, before any arm is "+
		"read: the expert (who knows the user) must score at least %.0f%% RecAcc; the policy that never explores (to the "+
		"pool at once, deciding from the cards and the instruction) at most %.0f%%; a random policy must get at most %.0f%% "+
		"of the expert's decisions right (it reaches the pool so rarely that its RecAcc rests on a handful of decisions) and "+
		"at most %.0f%% of its intents; the requirement with its values deleted must pass as an intent at most "+
		"%.0f%% of the time; and the sft arm must lead the never-exploring policy by %.0f points, or the policy cannot "+
		"use what exploring shows. RecAcc counts the decisions a policy made, so read it with Pool reached.\n\n",
		100*minExpertRecAcc, 100*maxNeverRecAcc, 100*maxRandomSuccess, 100*maxRandomIntents, 100*maxTemplateIntent, 100*minSFTLead)
	b.WriteString("| seed | expert | never explores | random: expert's decisions right (RecAcc, pool reached) | template intent | sft | holds |\n|---|---|---|---|---|---|---|\n")
	for _, v := range res.environmentValidity {
		sft := "—"
		if v.SFT != nil {
			sft = fmt.Sprintf("%.1f", 100*(*v.SFT))
		}
		fmt.Fprintf(b, "| %d | %.1f | %.1f | %.1f (%.1f, %.1f) | %.1f | %s | %s |\n", v.Seed, 100*v.Expert, 100*v.Never,
			100*v.RandomSuccess, 100*v.Random, 100*v.RandomReached, 100*v.Template, sft, yesNo(v.ok()))
	}
}
