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
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/metrics"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// metric is one test metric, read from an evaluation of one episode as a tally.
type metric struct {
	name string
	get  func(m *metrics.Metrics) tally
}

// The metrics, in the order of the tables; metricRec and metricIntent index them.
var metricList = []metric{
	{"RecAcc", func(m *metrics.Metrics) tally { return count(m.RecAcc, m.RecommendSteps) }},
	{"IntentAcc", func(m *metrics.Metrics) tally { return count(m.IntentAcc, m.PoolSteps) }},
	{"StepSR", func(m *metrics.Metrics) tally { return count(m.StepSR, m.GUISteps) }},
	{"EleAcc", func(m *metrics.Metrics) tally { return count(m.EleAcc, m.ElementSteps) }},
	{"Op F1", func(m *metrics.Metrics) tally { return tally{m.OpF1 * float64(m.GUISteps), float64(m.GUISteps)} }},
	{"Intent slot F1", func(m *metrics.Metrics) tally { return tally{m.IntentF1 * float64(m.SlotSteps), float64(m.SlotSteps)} }},
}

const (
	metricRec    = 0
	metricIntent = 1
	metricStepSR = 2
)

// metricEncoderIntent is IntentAcc judged by the -encoder's embeddings, which
// addEncoderMetric appends to metricList; its tallies come from encoderJudge, not
// from the run's evaluation.
var metricEncoderIntent = metric{name: "IntentAcc (encoder)"}

// addEncoderMetric appends metricEncoderIntent to the metrics when o judges by an
// encoder too, and returns its index, or -1.
func addEncoderMetric(o options) int {
	if o.encoder == "" {
		return -1
	}
	metricList = append(metricList, metricEncoderIntent)
	return len(metricList) - 1
}

// count turns a rate over n steps back into a whole count of successes.
func count(rate float64, n int) tally {
	return tally{math.Round(rate * float64(n)), float64(n)}
}

// curvePoint is a validation RecAcc after an epoch.
type curvePoint struct {
	Step   int64   `json:"step"`
	RecAcc float64 `json:"recAcc"`
}

// armResult is what one arm scored over the seeds.
type armResult struct {
	scores scores
	// curves[seed] is the validation RecAcc after each epoch.
	curves [][]curvePoint
	// wall[seed] is the time the seed's run took.
	wall []time.Duration
}

// results is what run measured.
type results struct {
	arms map[string]*armResult
	// channels[seed][episode] is the channel of each test user.
	channels [][]string
	validity []validity
	// environmentValidity holds the checks of each seed in the simulated app.
	environmentValidity []environmentValidity
	Wall                time.Duration
	// encoderMetric is metricEncoderIntent's index in metricList, -1 without an
	// encoder judge; encoder names that judge's encoder.
	encoderMetric int
	encoder       string
}

// progress prints a line of progress.
type progress func(format string, args ...any)

// run runs every arm on every seed, and the validity checks of every seed.
func run(ctx context.Context, o options, say progress) (*results, error) {
	res := &results{arms: map[string]*armResult{}, encoderMetric: addEncoderMetric(o)}
	for _, name := range o.arms {
		res.arms[name] = &armResult{}
	}
	var judge *encoderJudge
	if o.encoder != "" {
		var err error
		if judge, err = startEncoderJudgeFor(o); err != nil {
			return nil, err
		}
		defer judge.close()
		res.encoder = judge.name
		say("judging the test intents by %s too, at tau %.2f\n", judge.name, judge.tau)
	}
	if o.environment {
		metricList = append(metricList, metricReached)
	}
	for _, seed := range o.seeds {
		test, err := checkSeed(ctx, o, seed, judge, res, say)
		if err != nil {
			return nil, err
		}
		for _, name := range o.arms {
			start := time.Now()
			sc, curve, channels, err := runArm(ctx, o, o.arm(name), seed, test, judge)
			if err != nil {
				return nil, fmt.Errorf("%s, seed %d: %w", name, seed, err)
			}
			ar := res.arms[name]
			ar.scores = append(ar.scores, sc)
			ar.curves = append(ar.curves, curve)
			ar.wall = append(ar.wall, time.Since(start))
			if len(res.channels) < len(ar.scores) {
				res.channels = append(res.channels, channels)
			}
			last := len(ar.scores) - 1
			if name == armSFT && o.environment {
				v := ar.scores.seedValue(last, metricRec)
				res.environmentValidity[last].SFT = &v
				say("seed %d: validity with the sft arm: %s\n", seed, res.environmentValidity[last].summary())
			}
			say("  %-20s seed %d: RecAcc %5.1f  IntentAcc %5.1f  StepSR %5.1f  (%s)\n", name, seed,
				100*ar.scores.seedValue(last, metricRec), 100*ar.scores.seedValue(last, metricIntent),
				100*ar.scores.seedValue(last, metricStepSR), time.Since(start).Round(time.Second))
		}
	}
	return res, nil
}

// checkSeed runs the validity checks of a seed into res and returns its recorded
// test episodes (none in the simulated app, where every arm lives its own).
func checkSeed(ctx context.Context, o options, seed int64, judge *encoderJudge, res *results, say progress) ([]dataset.Episode, error) {
	if o.environment {
		v, err := checkEnvironmentValidity(ctx, o, seed)
		if err != nil {
			return nil, err
		}
		res.environmentValidity = append(res.environmentValidity, v)
		say("seed %d: %d test episodes; validity before the sft arm: %s\n", seed, o.testEpisodes, v.summary())
		return nil, nil
	}
	test, err := testEpisodes(o, seed)
	if err != nil {
		return nil, err
	}
	v, err := checkValidity(ctx, o, seed, judge)
	if err != nil {
		return nil, err
	}
	res.validity = append(res.validity, v)
	say("seed %d: %d test episodes; validity: %s\n", seed, len(test), v.summary())
	return test, nil
}

// spec returns the job spec shared by every arm of a seed: three synthetic sources
// (training and validation users of the training channels, test users of the test
// channels) from separate seeds, the token policy, intents rewarded by o.slotScore
// and ESPO's defaults otherwise.
func spec(o options, seed int64) trainingv1alpha1.ESPOJobSpec {
	source := func(name string, split trainingv1alpha1.DatasetSplitName, chans []string, n int, stream int64) trainingv1alpha1.DatasetSource {
		s := &trainingv1alpha1.SyntheticSource{Episodes: int32(n), Seed: seed*10 + stream, Difficulty: o.difficulty}
		for _, c := range chans {
			s.Channels = append(s.Channels, trainingv1alpha1.Channel(c))
		}
		return trainingv1alpha1.DatasetSource{Name: name, Split: split, Synthetic: s}
	}
	sft := int32(o.sftEpochs)
	s := trainingv1alpha1.ESPOJobSpec{}
	s.Datasets.Sources = []trainingv1alpha1.DatasetSource{
		source("train", trainingv1alpha1.SplitTrain, o.trainChannels, o.trainEpisodes, 1),
		source("validation", trainingv1alpha1.SplitValidation, o.trainChannels, o.valEpisodes, 2),
		source("test", trainingv1alpha1.SplitTest, o.testChannels, o.testEpisodes, 3),
	}
	s.Algorithm = trainingv1alpha1.AlgorithmSpec{SFTEpochs: &sft, Epochs: int32(o.epochs), GroupSize: int32(o.groupSize),
		LearningRate: trainingv1alpha1.Decimal(o.learningRate), SFTLearningRate: trainingv1alpha1.Decimal(o.sftLearningRate), Seed: seed}
	s.Algorithm.KL.Coefficient = trainingv1alpha1.Decimal(o.klCoefficient)
	if o.schedule != "" {
		s.Algorithm.Optimizer = &trainingv1alpha1.OptimizerSpec{Schedule: trainingv1alpha1.LRSchedule(o.schedule)}
	}
	s.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: int32(o.hidden), Architecture: trainingv1alpha1.CPUTokens}
	s.Rewards.Intent.SlotScore = o.slotScore
	return s
}

// testEpisodes returns the test users of a seed, as the trainer loads them.
func testEpisodes(o options, seed int64) ([]dataset.Episode, error) {
	c := &trainer.Config{Spec: spec(o, seed)}
	c.Spec.Default()
	splits, err := experience.LoadSplits(c.DataRoot, c.Spec.Datasets.Sources, [3]float64{0.8, 0.1, 0.1}, uint64(c.Spec.Datasets.Split.Seed))
	if err != nil {
		return nil, err
	}
	return splits.Test, nil
}

// runArm trains an arm on a seed's data and scores it on each test episode, and
// returns the test episodes' channels; the rule arm only decides the
// recommendation steps. With judge, every test intent is judged by it too, into the
// last metric (metricEncoderIntent). In the simulated app the trained policy lives
// through the test episodes.
func runArm(ctx context.Context, o options, a *arm, seed int64, test []dataset.Episode, judge *encoderJudge) ([][]tally, []curvePoint, []string, error) {
	if !a.trained() {
		return decisionScores(test, evidenceRule), nil, channelsOf(test), nil
	}
	c := &trainer.Config{Spec: spec(o, seed)}
	if o.environment {
		c.Spec = environmentSpec(o, seed)
	}
	var r armRun
	a.setup(&c.Spec, &r, o.ablationMode)
	opts := trainer.Options{Workers: worker.NewGang(worker.NewLocal(cpu.New(0))), Log: logr.Discard(), Estimator: r.estimator}
	if r.steps > 0 {
		d := &drainAfter{steps: r.steps, drain: make(chan struct{})}
		opts.Reporter, opts.Drain = d, d.drain
	}
	settings, err := trainer.Resolve(c) // defaults the spec
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := trainer.New(settings, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	rep, err := t.Run(ctx)
	var curve []curvePoint
	switch {
	case r.steps > 0 && errors.Is(err, trainer.ErrDrained): // stopped on purpose, no report
	case err != nil:
		return nil, nil, nil, err
	case rep.Outcome != trainingv1alpha1.OutcomeCompleted:
		return nil, nil, nil, fmt.Errorf("the run ended %s: %s", rep.Outcome, rep.Message)
	default:
		for _, v := range rep.Validation {
			curve = append(curve, curvePoint{Step: v.Step, RecAcc: v.RecommendationAccuracy})
		}
	}
	if o.environment {
		sc, channels, err := testScores(ctx, t)
		return sc, curve, channels, err
	}
	vocab := dataset.SlotVocab(test)
	out := make([][]tally, len(test))
	for e := range test {
		answers, err := experience.GreedyAnswers(ctx, opts.Workers, test[e:e+1])
		if err != nil {
			return nil, nil, nil, err
		}
		r, err := t.EvaluateAnswers(ctx, "test", test[e:e+1], answers)
		if err != nil {
			return nil, nil, nil, err
		}
		out[e] = tallies(&r.Report.Micro)
		if judge != nil {
			if out[e][len(out[e])-1], err = judge.intentTally(ctx, &test[e], answers[0], vocab); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return out, curve, channelsOf(test), nil
}

// drainAfter is a Reporter that closes drain once a report says steps optimizer
// steps are done, so that the run stops after that step.
type drainAfter struct {
	steps int64
	drain chan struct{}
	once  sync.Once
}

func (d *drainAfter) Report(_ context.Context, s *trainingv1alpha1.TrainingStatus) error {
	if s.Step >= d.steps {
		d.once.Do(func() { close(d.drain) })
	}
	return nil
}

// tallies reads every metric of an evaluation; metricEncoderIntent's, which is not
// the evaluation's, stays empty.
func tallies(m *metrics.Metrics) []tally {
	out := make([]tally, len(metricList))
	for i, mt := range metricList {
		if mt.get != nil {
			out[i] = mt.get(m)
		}
	}
	return out
}

// decider decides the recommendation (dataset.Yes or dataset.No) of step j of ep.
type decider func(ep *dataset.Episode, j int) string

// evidenceRule is the feature policy's evidence as a rule (cpu.EvidenceRule on the
// structured prompt).
func evidenceRule(ep *dataset.Episode, j int) string {
	return cpu.EvidenceRule(worker.PromptFromStep(ep, j))
}

// oracle decides as a rule that knows the user's preferences.
func oracle(ep *dataset.Episode, j int) string { return dataset.OracleDecision(ep, &ep.Steps[j]) }

// alwaysYes answers Yes to every candidate.
func alwaysYes(*dataset.Episode, int) string { return dataset.Yes }

// decisionScores decides every recommendation step of the episodes with decide;
// the other metrics have no trials.
func decisionScores(eps []dataset.Episode, decide decider) [][]tally {
	out := make([][]tally, len(eps))
	for e := range eps {
		ep := &eps[e]
		out[e] = make([]tally, len(metricList))
		for j := range ep.Steps {
			if ep.Steps[j].Stage != dataset.StageRecommend {
				continue
			}
			t := &out[e][metricRec]
			t.den++
			if decide(ep, j) == ep.Steps[j].Answer.InputText {
				t.num++
			}
		}
	}
	return out
}

// recAcc is the RecAcc of decide over every recommendation step of the episodes.
func recAcc(eps []dataset.Episode, decide decider) float64 {
	return scores{decisionScores(eps, decide)}.seedValue(0, metricRec)
}

func channelsOf(eps []dataset.Episode) []string {
	out := make([]string, len(eps))
	for i := range eps {
		out[i] = eps[i].Channel
	}
	return out
}

// heldOut returns the test channels that are not training channels.
func heldOut(o options) []string {
	var out []string
	for _, c := range o.testChannels {
		if !slices.Contains(o.trainChannels, c) {
			out = append(out, c)
		}
	}
	return out
}

// heldOutRecAcc returns an arm's RecAcc on the test users of held-out channels, per
// seed (NaN for a seed without such users).
func (res *results) heldOutRecAcc(name string, held []string) []float64 {
	sc := res.arms[name].scores
	out := make([]float64, len(sc))
	for s := range sc {
		var num, den float64
		for e, t := range sc[s] {
			if slices.Contains(held, res.channels[s][e]) {
				num += t[metricRec].num
				den += t[metricRec].den
			}
		}
		out[s] = ratio(num, den)
	}
	return out
}
