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
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// DefaultMaxSteps is the step cap of an episode when Options.MaxSteps is zero:
// room for the expert's longest episode (about 30 steps) and some detours.
const DefaultMaxSteps = 40

// Options configure a simulated environment.
type Options struct {
	// Channels are the channels episodes are drawn from (dataset.Channels() when
	// empty); the episode of seed s is in Channels[s % len(Channels)].
	Channels []string
	// Difficulty is dataset.DifficultyStandard (the default, also when empty) or
	// dataset.DifficultyHard: the generator's users of that difficulty, summary
	// cards that write the values into their text, and near misses that miss a
	// preference the instruction does not name.
	Difficulty string
	// Seed is the seed of the world: with it, an episode seed names one episode.
	Seed uint64
	// MaxSteps caps the steps of an episode, every stage counted
	// (DefaultMaxSteps when zero).
	MaxSteps int
}

// Simulated is the simulated SmartSpot app: an Env whose episodes are the
// generator's users (trainer/dataset) living in an app with a home page, a
// profile with saved items and past orders, a search, a results page with filter
// chips and option pages, item pages, and then the item pool and the
// recommendations. What the user wants shows only where the agent looks: in the
// instruction, in the saved items (the attributes they all share) and in the
// past orders (kept ones fit, returned ones miss a preference).
//
// The results the agent leaves the GUI stage with (by clicking "Choose from
// these results") are the pool: their first items, as many as the generator's
// episode has recommend steps, are the candidates. So the filters set decide
// which items reach the pool.
type Simulated struct {
	opts  Options
	apps  []*dataset.App
	vocab espo.SlotVocab
	st    *state
}

var _ Env = (*Simulated)(nil)

// The errors of misuse.
var (
	ErrNotReset = errors.New("environment: Step before Reset")
	ErrDone     = errors.New("environment: Step after the episode is done")
)

// NewSimulated returns a simulated environment with the given options; it fails
// on an unknown channel or difficulty or a negative step cap.
func NewSimulated(opts Options) (*Simulated, error) {
	if len(opts.Channels) == 0 {
		opts.Channels = dataset.Channels()
	}
	switch opts.Difficulty {
	case "":
		opts.Difficulty = dataset.DifficultyStandard
	case dataset.DifficultyStandard, dataset.DifficultyHard:
	default:
		return nil, fmt.Errorf("environment: unknown difficulty %q", opts.Difficulty)
	}
	if opts.MaxSteps < 0 {
		return nil, fmt.Errorf("environment: step cap %d", opts.MaxSteps)
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	s := &Simulated{opts: opts, vocab: espo.SlotVocab{}}
	for _, ch := range opts.Channels {
		a, err := appOf(ch)
		if err != nil {
			return nil, err
		}
		s.apps = append(s.apps, a)
		for _, at := range a.Attributes {
			for _, v := range at.Values {
				if !slices.Contains(s.vocab[at.Key], v) {
					s.vocab[at.Key] = append(s.vocab[at.Key], v)
				}
			}
		}
	}
	return s, nil
}

// Vocab returns the slot values of the environment's apps (attribute: values),
// the vocabulary the pool step's intent is judged with. It is shared: do not
// change it.
func (s *Simulated) Vocab() espo.SlotVocab { return s.vocab }

// hard reports whether the environment draws hard episodes.
func (s *Simulated) hard() bool { return s.opts.Difficulty == dataset.DifficultyHard }

// Reset starts the episode of episodeSeed: its channel is
// Channels[episodeSeed % len(Channels)] and its user the generator's episode for
// a seed drawn from Options.Seed and episodeSeed. The first observation is the
// app's home page.
func (s *Simulated) Reset(ctx context.Context, episodeSeed uint64) (Observation, error) {
	if err := ctx.Err(); err != nil {
		return Observation{}, err
	}
	a := s.apps[episodeSeed%uint64(len(s.apps))]
	genSeed := rand.New(rand.NewPCG(s.opts.Seed, episodeSeed)).Uint64()
	u, err := newUser(a, genSeed, s.hard())
	if err != nil {
		return Observation{}, err
	}
	s.st = newState(u, s.hard())
	return s.observe(), nil
}

// Step applies the policy's answer to the current observation; see Env.
func (s *Simulated) Step(ctx context.Context, answer string) (Observation, StepResult, error) {
	if err := ctx.Err(); err != nil {
		return Observation{}, StepResult{}, err
	}
	st := s.st
	switch {
	case st == nil:
		return Observation{}, StepResult{}, ErrNotReset
	case st.done:
		return Observation{}, StepResult{}, ErrDone
	}
	res := StepResult{Reference: st.expert()}
	res.GroundTruth = st.groundTruth(res.Reference)
	act, err := espo.ParseAnswer(answer)
	res.ParseErr = err
	taken := dataset.Answer{}
	if err == nil {
		taken = st.apply(act, &res, s.vocab)
	}
	st.history = append(st.history, taken)
	st.step++
	if st.step >= s.opts.MaxSteps {
		st.done = true
	}
	res.Done = st.done
	return s.observe(), res, nil
}

// Expert returns the expert's answer to the current observation, in the GUI-R1
// format a policy writes: the action of a policy that knows the hidden user (see
// state.expert). It is "" before Reset and after the episode is done.
func (s *Simulated) Expert() string {
	if s.st == nil || s.st.done {
		return ""
	}
	a := s.st.expert()
	return espo.FormatAnswer("", a.Espo())
}

// observe returns the current observation.
func (s *Simulated) observe() Observation {
	st := s.st
	obs := Observation{
		Channel:     st.user.app.Channel,
		Instruction: st.user.instruction,
		Step:        st.step,
		Stage:       st.stage,
		Screen:      st.screen(),
		History:     slices.Clone(st.history),
	}
	if c := st.candidate(); c != nil {
		cp := *c
		obs.Candidate = &cp
	}
	return obs
}
