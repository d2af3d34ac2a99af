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

// Package environment is the world an ESPO policy lives through instead of
// replaying demonstrations: an Env is reset to an episode, shown an Observation,
// answers with the text a policy writes (the GUI-R1 answer format that
// espo.ParseAnswer reads) and is told, step by step, what the expert would have
// done and, on the judged stages, whether the answer was right.
//
// An episode passes through the SmartSpot stages of trainer/dataset in order:
// GUI steps (the agent browses the app), one item-pool step (the agent states
// the user's intent, judged by slots against the hidden preferences) and one
// recommend step per candidate of the pool (answered Yes or No, judged against
// the hidden user with the generator's fit rule). Simulated is the simulated
// SmartSpot app built from the generator's channels and users.
package environment

import (
	"context"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Observation is what the policy is shown at one step: what a prompt holds.
type Observation struct {
	// Channel is the app category ("food", "hotel", ...).
	Channel string
	// Instruction is the user's vague request, the same at every step.
	Instruction string
	// Step is the index of the step, 0 after Reset.
	Step int
	// Stage is the stage of the step: dataset.StageGUI, StagePool or StageRecommend.
	Stage dataset.Stage
	// Screen is the current screen of the app.
	Screen dataset.Screen
	// History holds the actions taken so far, in order, as the environment read
	// them: a click carries the element it hit (Target and Box) when it hit one;
	// an answer that did not parse is recorded with an empty Action.
	History []dataset.Answer
	// Candidate is the item to decide on, on a recommend step; nil otherwise.
	Candidate *dataset.Item
}

// StepResult is what the environment says about one answered step.
type StepResult struct {
	// Done: the episode is over; the Observation returned with it is the last
	// one and Step must not be called again before Reset.
	Done bool
	// Reference is the expert's action at the step just answered: the action a
	// policy that knows the hidden user takes there (see Simulated.Expert).
	Reference dataset.Answer
	// GroundTruth is the reference as the espo rewards read it (as
	// dataset.Episode.GroundTruth builds it): the stage, the action, the target box
	// of a click, the viewport and, on the pool step, the reference intent and the
	// hidden preferences a slot-judged intent must name.
	GroundTruth espo.GroundTruth
	// ParseErr is the error of espo.ParseAnswer on the answer, nil when it parsed.
	// A malformed answer uses up a step and changes nothing else.
	ParseErr error
	// Judged: the stage judges the step (the pool and recommend stages); Right
	// and the fields below are set only then.
	Judged bool
	// Right: on the pool step, the stated intent names every preference of the
	// hidden user and no conflicting value (espo.SlotMatch.Right); on a recommend
	// step, the decision equals Want.
	Right bool
	// Slots is the slot judgement of the stated intent, on the pool step.
	Slots espo.SlotMatch
	// Want is the hidden user's decision on the candidate (dataset.Yes or
	// dataset.No), on a recommend step.
	Want string
}

// Env is an environment a policy acts in, one episode at a time. An Env is not
// safe for concurrent use; a group of rollouts uses one Env per rollout.
//
// The contract:
//
//   - Reset(ctx, seed) starts the episode that seed names and returns its first
//     observation. Resets with the same seed (on the same Env or on Envs made
//     with the same options) give identical first observations, so that a group
//     of G rollouts starts from G Resets with one seed and sees one start.
//   - The episode is a deterministic function of the seed and the answers:
//     the same seed and the same answers give the same observations and results.
//   - Step(ctx, answer) applies the policy's answer text (the GUI-R1 format read
//     by espo.ParseAnswer) and returns the next observation and the result of
//     the step; when the result is Done the observation is the final one.
//   - Errors are for misuse and cancellation (a Step before Reset or after Done,
//     a done context), never for a bad answer: a bad answer is a step that
//     changes nothing (StepResult.ParseErr says why when it did not parse).
type Env interface {
	Reset(ctx context.Context, episodeSeed uint64) (Observation, error)
	Step(ctx context.Context, answer string) (Observation, StepResult, error)
}
