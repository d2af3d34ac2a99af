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

package environment

import (
	"context"
	"fmt"
	"slices"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Rollout is one episode lived through an Env, written as the dataset writes a
// recorded one, so that what reads recorded episodes (the worker's prompts, the
// trainer's SFT) reads it too.
type Rollout struct {
	// Episode holds a step per observation the policy answered: its stage, screen
	// and candidate, and as its Answer the action the environment read from the
	// policy's answer (the last entry of the next observation's History). On the
	// pool and recommend steps of a Demonstration, whose answers are the expert's,
	// the episode also carries the hidden requirement and preferences.
	Episode dataset.Episode
	// Results are the results of the steps, one per step of Episode.
	Results []StepResult
}

// Actor answers obs, the observation of the last step of ep, the episode so far
// (its earlier steps answered): worker.PromptFromStep(ep, len(ep.Steps)-1) is the
// step's prompt, as for a recorded episode.
type Actor func(ctx context.Context, obs *Observation, ep *dataset.Episode) (string, error)

// BatchActor answers many episodes at once: answers[i] answers obs[i], the last
// step of eps[i], as an Actor does.
type BatchActor func(ctx context.Context, obs []*Observation, eps []*dataset.Episode) ([]string, error)

// Run lives through the episode of seed on env, answering each step with act, until
// the environment says it is done, and returns the rollout, whose episode is named id.
func Run(ctx context.Context, env Env, seed uint64, id string, act Actor) (*Rollout, error) {
	rs, err := RunAll(ctx, []Env{env}, []uint64{seed}, []string{id},
		func(ctx context.Context, obs []*Observation, eps []*dataset.Episode) ([]string, error) {
			a, err := act(ctx, obs[0], eps[0])
			return []string{a}, err
		})
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// RunAll lives through episode seeds[i] on envs[i], named ids[i], for every i in
// lockstep: each round asks act once for the answers of every episode not done yet
// (in index order), so that a policy answers them in one batch. It returns the
// rollouts in index order. The Envs must be distinct.
func RunAll(ctx context.Context, envs []Env, seeds []uint64, ids []string, act BatchActor) ([]*Rollout, error) {
	if len(seeds) != len(envs) || len(ids) != len(envs) {
		panic("environment: RunAll needs as many seeds and ids as envs")
	}
	rs := make([]*Rollout, len(envs))
	obs := make([]Observation, len(envs))
	for i, env := range envs {
		o, err := env.Reset(ctx, seeds[i])
		if err != nil {
			return nil, fmt.Errorf("episode %s: %w", ids[i], err)
		}
		obs[i] = o
		rs[i] = &Rollout{Episode: dataset.Episode{Format: dataset.FormatVersion, ID: ids[i], Channel: o.Channel,
			Instruction: o.Instruction, Viewport: dataset.Viewport}}
	}
	live := make([]int, len(envs))
	for i := range live {
		live[i] = i
	}
	for len(live) > 0 {
		os, eps := make([]*Observation, len(live)), make([]*dataset.Episode, len(live))
		for k, i := range live {
			r := rs[i]
			r.Episode.Steps = append(r.Episode.Steps, stepOf(len(r.Episode.Steps), &obs[i]))
			os[k], eps[k] = &obs[i], &r.Episode
		}
		answers, err := act(ctx, os, eps)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", len(rs[live[0]].Episode.Steps)-1, err)
		}
		next := live[:0]
		for k, i := range live {
			done, err := advance(ctx, envs[i], rs[i], &obs[i], answers[k])
			if err != nil {
				return nil, fmt.Errorf("episode %s: %w", ids[i], err)
			}
			if !done {
				next = append(next, i)
			}
		}
		live = next
	}
	return rs, nil
}

// advance applies answer to the last step of r on env, records what the environment
// read and said, moves obs on, and reports whether the episode is done.
func advance(ctx context.Context, env Env, r *Rollout, obs *Observation, answer string) (bool, error) {
	j := len(r.Episode.Steps) - 1
	next, res, err := env.Step(ctx, answer)
	if err != nil {
		return false, fmt.Errorf("step %d: %w", j, err)
	}
	if n := len(next.History); n > j {
		r.Episode.Steps[j].Answer = next.History[j]
	}
	r.Results = append(r.Results, res)
	*obs = next
	return res.Done, nil
}

// stepOf is observation obs as step j of an episode, not answered yet.
func stepOf(j int, obs *Observation) dataset.Step {
	return dataset.Step{Index: j, Stage: obs.Stage, Screen: obs.Screen, Candidate: obs.Candidate}
}

// Demonstration is the expert's rollout of seed on sim, as a recorded episode a policy
// can be fine-tuned on: every answer is the expert's action, the pool step's the
// hidden requirement, each recommend step's the hidden user's decision, and the
// episode carries the requirement and the preferences its pool step is judged by.
func Demonstration(ctx context.Context, sim *Simulated, seed uint64, id string) (dataset.Episode, error) {
	r, err := Run(ctx, sim, seed, id, func(context.Context, *Observation, *dataset.Episode) (string, error) { return sim.Expert(), nil })
	if err != nil {
		return dataset.Episode{}, err
	}
	return r.Referenced(), nil
}

// Referenced returns the rollout as a recorded episode of references: the steps the
// policy saw, each answered with the expert's action there (StepResult.Reference),
// and the requirement and preferences the pool step is judged by. It is what a
// policy's answers to the rollout are judged against (its GroundTruth of step j
// is Results[j].GroundTruth); the prompts of its later steps show the expert's
// actions, so they are the policy's own prompts only where it acted as the
// expert (as in a Demonstration).
func (r *Rollout) Referenced() dataset.Episode {
	ep := r.Episode
	ep.Steps = slices.Clone(ep.Steps)
	for j, res := range r.Results {
		ep.Steps[j].Answer = res.Reference
		if res.GroundTruth.Stage == dataset.StagePool.Espo() {
			ep.Requirement, ep.Preferences = res.GroundTruth.Intent, res.GroundTruth.Preferences
		}
	}
	return ep
}

// Accuracy counts the judged steps of rollouts: the recommend steps and the pool
// steps (intents), and how many of each were right.
type Accuracy struct {
	Decisions, RightDecisions int
	Intents, RightIntents     int
}

// Add counts the judged steps of r.
func (a *Accuracy) Add(r *Rollout) {
	for j, res := range r.Results {
		if !res.Judged {
			continue
		}
		right := 0
		if res.Right {
			right = 1
		}
		switch r.Episode.Steps[j].Stage {
		case dataset.StageRecommend:
			a.Decisions, a.RightDecisions = a.Decisions+1, a.RightDecisions+right
		case dataset.StagePool:
			a.Intents, a.RightIntents = a.Intents+1, a.RightIntents+right
		}
	}
}

// RecAcc is the share of decisions that were right (0 without any).
func (a Accuracy) RecAcc() float64 { return share(a.RightDecisions, a.Decisions) }

// IntentAcc is the share of intents that were right (0 without any).
func (a Accuracy) IntentAcc() float64 { return share(a.RightIntents, a.Intents) }

func share(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}
