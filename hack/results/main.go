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

// Command results runs the comparison of docs/results.md on generated SmartSpot
// data: SFT only, step-wise GRPO, ESPO in episode and rollout mode, its ablations
// (w = 0, phi only, psi only, shuffled COUT), the feature policy as an upper bound
// and the feature policy's evidence as a rule with no weights, with the same data,
// seeds and optimizer steps for every trained arm. It writes results.md (means over
// seeds and paired bootstrap intervals of each arm's difference to GRPO),
// results.json and results-curve.png.
//
//	go run ./hack/results -seeds 1,2,3,4,5 -difficulty hard \
//	    -train-channels food,hotel,flight,movie,travel -test-channels food,hotel,flight,movie,travel,medicine
//
// Every seed seeds the data (training, validation and test users are drawn from
// separate streams) and the training. A channel named in -test-channels but not in
// -train-channels is held out: no arm trains or validates on it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// options are the command's flags.
type options struct {
	seeds                        []int64
	difficulty                   trainingv1alpha1.SyntheticDifficulty
	trainChannels, testChannels  []string
	trainEpisodes, valEpisodes   int
	testEpisodes                 int
	sftEpochs, epochs, groupSize int
	hidden                       int
	learningRate                 string
	sftLearningRate              string
	klCoefficient                string
	schedule                     string
	ablationMode                 trainingv1alpha1.COUTMode
	slotScore                    trainingv1alpha1.IntentSlotScore
	arms                         []string
	resamples                    int
	out                          string
	validityEpisodes             int
	// environment runs the comparison in the simulated app (environmentArms) instead
	// of on recorded episodes (arms); table is the arms of the one it runs.
	environment bool
	table       []arm
	// encoder, when set, is a sentence-transformers model folder that judges every
	// test intent a second time, by embedding (encoderJudge), with python.
	encoder, python string
	// diagnose, with environment, runs the diagnosis of the recommendation decision
	// (diagnoser) instead of the comparison, closing a window every diagnoseEvery
	// optimizer steps and at the end of every epoch.
	diagnose      bool
	diagnoseEvery int
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fatal(err)
	}
	start := time.Now()
	if o.diagnose {
		ds, err := runDiagnosis(context.Background(), o, func(format string, args ...any) { fmt.Fprintf(os.Stderr, format, args...) })
		if err == nil {
			err = writeDiagnosis(o, ds, time.Since(start).Round(time.Second), os.Args[1:])
		}
		if err != nil {
			fatal(err)
		}
		fmt.Fprintf(os.Stderr, "results: wrote %s/diagnose-environment.md in %s\n", o.out, time.Since(start).Round(time.Second))
		return
	}
	res, err := run(context.Background(), o, func(format string, args ...any) { fmt.Fprintf(os.Stderr, format, args...) })
	if err != nil {
		fatal(err)
	}
	res.Wall = time.Since(start).Round(time.Second)
	if err := writeResults(o, res, os.Args[1:]); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "results: wrote %s/%s.md in %s\n", o.out, o.stem(), res.Wall)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "results:", err)
	os.Exit(1)
}

// parseFlags reads the flags; every list is comma-separated.
func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("results", flag.ContinueOnError)
	seeds := fs.String("seeds", "1,2,3,4,5", "seeds; each seeds the data and the training")
	difficulty := fs.String("difficulty", string(trainingv1alpha1.DifficultyHard), "generated data: standard or hard")
	train := fs.String("train-channels", "food,hotel,flight,movie,travel", "channels of the training and validation users")
	test := fs.String("test-channels", "food,hotel,flight,movie,travel,medicine", "channels of the test users; one not trained on is held out")
	fs.IntVar(&o.trainEpisodes, "train-episodes", 160, "training episodes per seed")
	fs.IntVar(&o.valEpisodes, "validation-episodes", 20, "validation episodes per seed (training channels)")
	fs.IntVar(&o.testEpisodes, "test-episodes", 60, "test episodes per seed (test channels)")
	fs.IntVar(&o.validityEpisodes, "validity-episodes", 600, "episodes per seed of the validity checks (no training; with -environment the checks live through the test episodes)")
	fs.IntVar(&o.sftEpochs, "sft-epochs", 2, "SFT cold-start epochs (sft runs sft-epochs + epochs of SFT)")
	fs.IntVar(&o.epochs, "epochs", 3, "epochs of each method")
	fs.IntVar(&o.groupSize, "group-size", 5, "candidates per step (G)")
	fs.IntVar(&o.hidden, "hidden", 32, "hidden units of the CPU policy")
	fs.StringVar(&o.learningRate, "learning-rate", "0.001", "AdamW learning rate of the CPU policy's reinforcement epochs (spec.algorithm.learningRate)")
	fs.StringVar(&o.sftLearningRate, "sft-learning-rate", "", "learning rate of the SFT epochs (spec.algorithm.sftLearningRate; default: the job's, ten times -learning-rate)")
	fs.StringVar(&o.schedule, "schedule", "", "spec.algorithm.optimizer.schedule: constant, linear or cosine (default: the job's)")
	fs.StringVar(&o.klCoefficient, "kl-coefficient", "", "spec.algorithm.kl.coefficient (default: the job's)")
	ablation := fs.String("ablation-mode", string(trainingv1alpha1.COUTRollout), "COUT mode of the ablations (w=0, phi only, psi only, shuffled) and the upper bound")
	slotScore := fs.String("slot-score", string(trainingv1alpha1.IntentSlotScoreF1), "spec.rewards.intent.slotScore of every arm: all or f1 (dense, so that COUT's Intent_acc is not almost always 0)")
	armList := fs.String("arms", "", "arms to run (default all): "+strings.Join(armNames(arms), ", ")+
		"; with -environment: "+strings.Join(armNames(environmentArms), ", "))
	fs.BoolVar(&o.environment, "environment", false, "compare in the simulated app (spec.datasets.environment): the policy lives through "+
		"its episodes; -train-episodes is then per epoch, and the files are results-environment.*")
	fs.IntVar(&o.resamples, "bootstrap", 2000, "bootstrap resamples of the intervals")
	fs.StringVar(&o.out, "out", "docs", "folder of results.md, results.json and results-curve.png (results-environment.* with -environment)")
	fs.StringVar(&o.encoder, "encoder", "", "a sentence-transformers model folder (all-MiniLM-L6-v2, say): judge every test intent by it too, "+
		"beside the slots, and report IntentAcc by both and how far they agree")
	fs.StringVar(&o.python, "python", "", "the interpreter of the PyTorch worker's environment for -encoder (default: what hack/setup-python.sh prints)")
	fs.BoolVar(&o.diagnose, "diagnose", false, "with -environment: instead of the comparison, diagnose what each arm's epochs do to the "+
		"recommendation decision on the validation episodes (never the test episodes), window by window; writes "+
		"diagnose-environment.md and .json into -out (default: a folder under the temporary directory, never docs)")
	fs.IntVar(&o.diagnoseEvery, "diagnose-every", 10, "with -diagnose: optimizer steps per window (a window also ends with each epoch)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.checkDiagnose(fs); err != nil {
		return o, err
	}
	var err error
	if o.seeds, err = parseSeeds(*seeds); err != nil {
		return o, err
	}
	o.difficulty = trainingv1alpha1.SyntheticDifficulty(*difficulty)
	if o.difficulty != trainingv1alpha1.DifficultyStandard && o.difficulty != trainingv1alpha1.DifficultyHard {
		return o, fmt.Errorf("-difficulty %q: want standard or hard", *difficulty)
	}
	o.ablationMode = trainingv1alpha1.COUTMode(*ablation)
	if o.ablationMode != trainingv1alpha1.COUTEpisode && o.ablationMode != trainingv1alpha1.COUTRollout {
		return o, fmt.Errorf("-ablation-mode %q: want episode or rollout", *ablation)
	}
	o.slotScore = trainingv1alpha1.IntentSlotScore(*slotScore)
	if o.slotScore != trainingv1alpha1.IntentSlotScoreAll && o.slotScore != trainingv1alpha1.IntentSlotScoreF1 {
		return o, fmt.Errorf("-slot-score %q: want all or f1", *slotScore)
	}
	if o.trainChannels, err = parseChannels("-train-channels", *train); err != nil {
		return o, err
	}
	if o.testChannels, err = parseChannels("-test-channels", *test); err != nil {
		return o, err
	}
	o.table = arms
	if o.environment {
		o.table = environmentArms
	}
	if o.arms, err = parseArms(o.table, *armList, o.diagnose); err != nil {
		return o, err
	}
	if o.environment && o.encoder != "" {
		return o, fmt.Errorf("-encoder judges the intents of recorded test episodes: leave it out with -environment")
	}
	if o.trainEpisodes < 1 || o.valEpisodes < 1 || o.testEpisodes < 1 {
		return o, fmt.Errorf("-train-episodes, -validation-episodes and -test-episodes must be at least 1")
	}
	return o, nil
}

func parseSeeds(list string) ([]int64, error) {
	var out []int64
	for _, s := range split(list) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("-seeds: %q is not a seed (a whole number >= 0)", s)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-seeds: give at least one seed")
	}
	return out, nil
}

func parseChannels(flagName, list string) ([]string, error) {
	out := split(list)
	for _, c := range out {
		if !slices.Contains(dataset.Channels(), c) {
			return nil, fmt.Errorf("%s: unknown channel %q, want some of %s", flagName, c, strings.Join(dataset.Channels(), ","))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: give at least one channel", flagName)
	}
	return out, nil
}

func parseArms(table []arm, list string, diagnose bool) ([]string, error) {
	names := split(list)
	switch {
	case len(names) == 0 && diagnose:
		names = diagnoseArms
	case len(names) == 0:
		return armNames(table), nil
	}
	for _, n := range names {
		if (options{table: table}).arm(n) == nil {
			return nil, fmt.Errorf("-arms: unknown arm %q, want some of %s", n, strings.Join(armNames(table), ", "))
		}
	}
	if !slices.Contains(names, armGRPO) && !diagnose {
		return nil, fmt.Errorf("-arms: the intervals are differences to %s: include it", armGRPO)
	}
	return names, nil
}

func armNames(table []arm) []string {
	out := make([]string, len(table))
	for i := range table {
		out[i] = table[i].name
	}
	return out
}

// rates says the learning rates of the arms' epochs, as the trainer resolves them
// from the arms' spec.
func (o options) rates() string {
	a := spec(o, 0).Algorithm
	return fmt.Sprintf("learning rate %s (SFT epochs: %s)", a.LearningRate, a.SFTRate())
}

// stem is the name of the files the comparison writes, before their extension.
func (o options) stem() string {
	if o.environment {
		return "results-environment"
	}
	return "results"
}

func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// diagnoseArms are the arms -diagnose runs without -arms.
var diagnoseArms = []string{armSFT, armGRPO, "espo episode"}

// checkDiagnose checks -diagnose and its flags, and points -out, when it was not
// given, at a folder under the temporary directory: a diagnosis is no result of
// docs/.
func (o *options) checkDiagnose(fs *flag.FlagSet) error {
	if !o.diagnose {
		return nil
	}
	if !o.environment {
		return fmt.Errorf("-diagnose lives through the simulated app: add -environment")
	}
	if o.diagnoseEvery < 1 {
		return fmt.Errorf("-diagnose-every %d: want at least 1", o.diagnoseEvery)
	}
	out := false
	fs.Visit(func(f *flag.Flag) { out = out || f.Name == "out" })
	if !out {
		o.out = filepath.Join(os.TempDir(), "espo-diagnose")
	}
	return nil
}
