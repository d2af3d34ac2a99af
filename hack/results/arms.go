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
	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/estimator"
)

// arm is one method of the comparison. An arm with setup trains a CPU policy
// through the trainer and the worker protocol; an arm without it is a rule with
// no learned weights, judged on the recommendation steps only.
type arm struct {
	name string
	// about says in a few words what the arm is, for the legend of results.md.
	about string
	// setup turns the shared job spec and run into the arm's.
	setup func(s *trainingv1alpha1.ESPOJobSpec, r *armRun, ablation trainingv1alpha1.COUTMode)
}

// armRun is what an arm changes in a training run besides the job spec.
type armRun struct {
	// estimator is the advantage estimator of the reinforcement epochs; empty for the
	// one the algorithm names (trainer.Options.Estimator).
	estimator estimator.Name
	// steps, when positive, stops the training after that many optimizer steps, as a
	// SIGTERM would (through trainer.Options.Drain): the run has no final report.
	steps int64
}

// trained reports whether the arm trains a policy.
func (a *arm) trained() bool { return a.setup != nil }

// The names of the arms the checks and the intervals refer to.
const (
	armUntrained = "untrained"
	armSFT       = "sft"
	armGRPO      = "grpo"
	armRule      = "no-weights rule"
)

// untrainedArm is the floor of both comparisons, on recorded episodes and in the
// simulated app.
var untrainedArm = arm{armUntrained, "the token policy after a single SFT step: the floor a method must clear to have learnt",
	func(s *trainingv1alpha1.ESPOJobSpec, r *armRun, _ trainingv1alpha1.COUTMode) {
		s.Algorithm.Name = trainingv1alpha1.AlgorithmSFT
		r.steps = 1
	}}

// arms are the methods compared, in the order of the table. Every trained arm but
// the feature upper bound uses the token policy; the ablations of ESPO (w = 0, one
// gate, shuffled COUT) use the COUT mode of -ablation-mode.
var arms = []arm{
	untrainedArm,
	{armSFT, "supervised only, as many optimizer steps as the others", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Algorithm.Name = trainingv1alpha1.AlgorithmSFT
	}},
	{armGRPO, "step-wise GRPO, steps shuffled, no COUT", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Algorithm.Name = trainingv1alpha1.AlgorithmGRPO
	}},
	{"espo episode", "ESPO, one R_COUT per episode for every candidate", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = trainingv1alpha1.COUTEpisode
	}},
	{"espo rollout", "ESPO, R_COUT per rollout, normalised over the G rollouts", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, _ trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = trainingv1alpha1.COUTRollout
	}},
	{"espo w=0", "ESPO's episodic batches and stage rewards without COUT", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode, s.Rewards.COUT.Weight = m, "0"
	}},
	{"espo phi only", "ESPO with the GUI-action gate's term only", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode, s.Rewards.COUT.Gates = m, trainingv1alpha1.COUTGUIGate
	}},
	{"espo psi only", "ESPO with the decision gate's term only", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode, s.Rewards.COUT.Gates = m, trainingv1alpha1.COUTDecisionGate
	}},
	{"espo shuffled COUT", "control: each episode gets another episode's COUT advantages", func(s *trainingv1alpha1.ESPOJobSpec, r *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = m
		r.estimator = estimator.ShuffledCOUT
	}},
	{"feature upper bound", "ESPO on the feature policy: structured attributes and hand-built evidence", func(s *trainingv1alpha1.ESPOJobSpec, _ *armRun, m trainingv1alpha1.COUTMode) {
		s.Rewards.COUT.Mode = m
		s.Model.CPU.Architecture = trainingv1alpha1.CPUFeatures
	}},
	{armRule, "the feature policy's evidence as a rule, no training (RecAcc only)", nil},
}

// arm returns the arm of that name in the comparison o runs, or nil.
func (o options) arm(name string) *arm {
	for i := range o.table {
		if o.table[i].name == name {
			return &o.table[i]
		}
	}
	return nil
}
