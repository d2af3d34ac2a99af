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

// Package experience holds the sources of a run's experience: recorded episodes,
// whose steps the policy answers on their recorded histories (Recorded), and an
// environment the policy lives through, its answers changing what it sees next
// (Lived). The training loop is one for both: it asks its Source for a batch, scores
// the candidates against their ground truths, computes their advantages and takes a
// step. A source gets what it needs when it is made (its data or environment, the
// algorithm's batching, the Policy that answers), never the trainer.
//
// Adding a source takes one file: a type that implements Source, and its constructor.
package experience

import (
	"context"
	"encoding/binary"
	"hash/fnv"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Source is where a run's batches and its evaluations' episodes come from.
type Source interface {
	// Plan is the run's epochs and the number of batches of each.
	Plan() *plan.Plan
	// Demonstrations returns batch b of SFT epoch e: groups whose steps are answered
	// by their episodes' own answers.
	Demonstrations(ctx context.Context, e, b int) ([]*Group, error)
	// Candidates returns batch b of reinforcement epoch e, its candidates sampled by
	// the current policy as s says.
	Candidates(ctx context.Context, e, b int, s Sampling) (Batch, error)
	// Evaluation returns the episodes of split ("validation" or "test"), their answers
	// the references the policy is judged against, and the policy's greedy answer to
	// each of their steps; no episodes when the run has no such split.
	Evaluation(ctx context.Context, split string) ([]dataset.Episode, [][]string, error)
	// Recorded returns the episodes the source loaded, split by split: what the run's
	// checkpoints are bound to and its intents are embedded from (none for an
	// environment, whose episodes are lived).
	Recorded() *Splits
	// Vocab returns every value of each preference slot the episodes can hold: the
	// vocabulary intents are judged by.
	Vocab() espo.SlotVocab
	// Close releases what the source holds open (an environment's connection).
	Close() error
}

// Policy answers prompts: the gang of policy workers (*worker.Gang).
type Policy interface {
	Generate(ctx context.Context, reqs []worker.Rollouts) ([][]worker.Sample, error)
}

// Group is the steps of one episode that a batch holds, in order, with the prompts
// the policy saw and, in a reinforcement batch, what it answered: G candidates of
// every step of a recorded episode, or one candidate per step of a lived rollout.
// Group i of a batch is request i of every call to the gang, which deals it to one
// member.
type Group struct {
	Episode *dataset.Episode
	Steps   []int
	Prompts []worker.Prompt
	// Samples[j*G+g] is candidate g of step j.
	Samples []worker.Sample
}

// Batch is the groups of one optimizer step.
type Batch struct {
	Groups []*Group
	// Families holds, for a batch lived through an environment, the indices in
	// Groups of the G rollouts of each episode seed: each of those groups is one
	// rollout, one candidate per step, and the G rollouts are compared with each
	// other. It is nil for recorded episodes, whose groups hold G candidates of each
	// step, compared with the other candidates of their step.
	Families [][]int
}

// Sampling is how the policy samples the candidates of a reinforcement batch.
type Sampling struct {
	// G is the number of candidates of every step (of rollouts of every seed).
	G int
	// Temperature is the sampling temperature.
	Temperature float64
	// Seed is the run's seed, and Step the optimizer step the batch is sampled at:
	// with an episode's id they seed its candidates (sampleSeed).
	Seed uint64
	Step int64
}

// options returns the options of sampling n candidates of a step of the episode
// named id.
func (s Sampling) options(n int, id string) worker.SampleOptions {
	return worker.SampleOptions{Samples: n, Temperature: s.Temperature, Seed: sampleSeed(s.Seed, s.Step, id)}
}

// sampleSeed derives the sampling seed of one episode at one optimizer step: FNV-1a over
// (seed, step, episode id), so that candidates do not depend on how groups are dealt
// to workers.
func sampleSeed(seed uint64, step int64, episode string) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(step))
	h.Write(b[:])
	h.Write([]byte(episode))
	return h.Sum64()
}

// GreedyAnswers returns the policy's greedy answer to every step of every episode,
// answered on its recorded history, one request per episode.
func GreedyAnswers(ctx context.Context, p Policy, eps []dataset.Episode) ([][]string, error) {
	reqs := make([]worker.Rollouts, len(eps))
	for e := range eps {
		reqs[e].Options = worker.SampleOptions{Samples: 1, Greedy: true}
		for j := range eps[e].Steps {
			reqs[e].Prompts = append(reqs[e].Prompts, worker.NewPrompt(&eps[e], j))
		}
	}
	samples, err := p.Generate(ctx, reqs)
	if err != nil {
		return nil, err
	}
	answers := make([][]string, len(eps))
	for e, ss := range samples {
		answers[e] = make([]string, len(ss))
		for j, s := range ss {
			answers[e][j] = s.Answer.Text
		}
	}
	return answers, nil
}
