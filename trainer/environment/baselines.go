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
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Policy answers an observation of env without learned weights: the baselines
// that show whether an environment can tell methods apart (the expert must
// succeed; a policy that never explores, a random one and a template intent must
// not).
type Policy func(env *Simulated, obs Observation) string

// Actor returns p answering on env.
func (p Policy) Actor(env *Simulated) Actor {
	return func(_ context.Context, obs *Observation, _ *dataset.Episode) (string, error) {
		return p(env, *obs), nil
	}
}

// Expert is the expert: the policy that knows the hidden user (Simulated.Expert).
func Expert(env *Simulated, _ Observation) string { return env.Expert() }

// GenericIntent is what a policy without evidence says the user wants.
const GenericIntent = "I want a good option that suits me well."

// NeverExplore is the policy that never looks for evidence: it browses every item,
// takes the list to the pool at once, states GenericIntent and decides each
// candidate from its card and the instruction alone: No when the card has another
// value of an attribute whose value the instruction names, else Yes.
func NeverExplore(env *Simulated, obs Observation) string {
	switch obs.Stage {
	case dataset.StagePool:
		return answer(espo.ActionPoolFound, espo.NoPoint, GenericIntent)
	case dataset.StageRecommend:
		return answer(espo.ActionRecommendation, espo.NoPoint, cardDecision(env.Vocab(), obs.Instruction, obs.Candidate))
	}
	if obs.Screen.Page == pageHome {
		return clickText(obs, textBrowse)
	}
	return clickText(obs, textPool)
}

// cardDecision decides on an item from its attributes and the instruction.
func cardDecision(vocab espo.SlotVocab, instruction string, it *dataset.Item) string {
	for k, have := range it.Attrs {
		named, agrees := false, false
		for _, v := range vocab[k] {
			if dataset.ContainsValue(instruction, v) {
				named = true
				agrees = agrees || v == have
			}
		}
		if named && !agrees {
			return dataset.No
		}
	}
	return dataset.Yes
}

// TemplateIntent is the expert with the pool step's intent replaced by the
// requirement with every preference value deleted (dataset.TemplateOnly).
func TemplateIntent(env *Simulated, obs Observation) string {
	if obs.Stage != dataset.StagePool || env.st == nil {
		return env.Expert()
	}
	u := env.st.user
	return answer(espo.ActionPoolFound, espo.NoPoint, dataset.TemplateOnly(u.requirement, u.prefs))
}

// Random answers at random from rng: on the GUI stage a click on an element of the
// screen, a scroll or a slot value typed; on the pool step a slot value as the
// intent; on a recommend step Yes or No.
func Random(rng *rand.Rand) Policy {
	return func(env *Simulated, obs Observation) string {
		values := env.Vocab()[pick(rng, slices.Sorted(maps.Keys(env.Vocab())))]
		switch obs.Stage {
		case dataset.StagePool:
			return answer(espo.ActionPoolFound, espo.NoPoint, pick(rng, values))
		case dataset.StageRecommend:
			return answer(espo.ActionRecommendation, espo.NoPoint, pick(rng, []string{dataset.Yes, dataset.No}))
		}
		switch rng.IntN(3) {
		case 0:
			return answer(espo.ActionScroll, espo.NoPoint, pick(rng, dataset.ScrollDirections))
		case 1:
			return answer(espo.ActionType, espo.NoPoint, pick(rng, values))
		}
		return answer(espo.ActionClick, pick(rng, obs.Screen.Elements).Box.Center(), espo.NoText)
	}
}

// answer formats an action as a policy writes it.
func answer(action string, point [2]float64, text string) string {
	return espo.FormatAnswer("", espo.Action{Type: action, Point: point, Text: text})
}

// clickText is a click on the first element of obs's screen with that text, or an
// exit when there is none.
func clickText(obs Observation, text string) string {
	for i := range obs.Screen.Elements {
		if e := &obs.Screen.Elements[i]; e.Text == text {
			return answer(espo.ActionClick, e.Box.Center(), espo.NoText)
		}
	}
	return answer(espo.ActionExit, espo.NoPoint, espo.NoText)
}
