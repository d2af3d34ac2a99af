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
	"reflect"
	"slices"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// TestDemonstrationsAreRecordedEpisodes: the expert's rollouts of every channel and
// both difficulties are episodes the dataset accepts (dataset.Validate finds no
// problem), the same seed records the same episode, their pool step's answer is the
// hidden requirement, and every step's prompt is the one a recorded episode gives.
func TestDemonstrationsAreRecordedEpisodes(t *testing.T) {
	ctx := context.Background()
	for _, difficulty := range []string{dataset.DifficultyStandard, dataset.DifficultyHard} {
		sim := newEnv(t, Options{Difficulty: difficulty, Seed: 5})
		for seed := range uint64(12) {
			ep, err := Demonstration(ctx, sim, seed, "demo")
			if err != nil {
				t.Fatal(err)
			}
			if problems := dataset.Validate(&ep); len(problems) > 0 {
				t.Fatalf("%s seed %d: the demonstration is not a valid episode: %v", difficulty, seed, problems)
			}
			again, _ := Demonstration(ctx, sim, seed, "demo")
			if !reflect.DeepEqual(ep, again) {
				t.Fatalf("%s seed %d: two demonstrations of one seed differ", difficulty, seed)
			}
			pools := 0
			for j := range ep.Steps {
				s := &ep.Steps[j]
				if s.Stage == dataset.StagePool {
					pools++
					if s.Answer.InputText != ep.Requirement || ep.Requirement == "" || len(ep.Preferences) == 0 {
						t.Errorf("%s seed %d: pool answer %q, requirement %q, preferences %v", difficulty, seed,
							s.Answer.InputText, ep.Requirement, ep.Preferences)
					}
				}
				if p := worker.PromptFromStep(&ep, j); p.GetStepIndex() != int32(j) || len(p.GetHistory()) != j {
					t.Fatalf("%s seed %d step %d: prompt %v", difficulty, seed, j, p)
				}
			}
			if pools != 1 {
				t.Errorf("%s seed %d: %d pool steps, want 1", difficulty, seed, pools)
			}
		}
	}
}

// TestRunRecordsWhatTheEnvironmentRead: a rollout's steps hold the screens the policy
// was shown and, as answers, the actions the environment read; the expert's rollout
// is right on every judged step and its answers are the references (the element of a
// click included; a typed text's answer names none).
func TestRunRecordsWhatTheEnvironmentRead(t *testing.T) {
	ctx := context.Background()
	sim := newEnv(t, Options{Difficulty: dataset.DifficultyHard, Seed: 9})
	var shown []dataset.Screen
	r, err := Run(ctx, sim, 3, "expert", func(_ context.Context, obs *Observation, ep *dataset.Episode) (string, error) {
		if !reflect.DeepEqual(ep.Steps[len(ep.Steps)-1].Screen, obs.Screen) {
			t.Fatalf("step %d: the episode's last step is not the observation", len(ep.Steps)-1)
		}
		shown = append(shown, obs.Screen)
		return sim.Expert(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var acc Accuracy
	acc.Add(r)
	if len(r.Results) != len(r.Episode.Steps) || len(shown) != len(r.Episode.Steps) || !r.Results[len(r.Results)-1].Done {
		t.Fatalf("%d results, %d steps, %d screens shown; want one each, the last done", len(r.Results), len(r.Episode.Steps), len(shown))
	}
	if acc.Intents != 1 || acc.Decisions == 0 || acc.RecAcc() != 1 || acc.IntentAcc() != 1 {
		t.Errorf("the expert's rollout: %+v, want every judged step right", acc)
	}
	for j, res := range r.Results {
		got, want := r.Episode.Steps[j].Answer, res.Reference
		clickTargetDiffers := want.Action == "click" && got.Target != want.Target // a typed text names no element
		if got.Action != want.Action || got.InputText != want.InputText || clickTargetDiffers {
			t.Errorf("step %d: read %+v, the expert's reference %+v", j, got, want)
		}
	}
}

// TestRunAllIsRunInLockstep: episodes lived in one batch are the episodes lived one
// by one, and each round asks for the answers of the episodes not done only.
func TestRunAllIsRunInLockstep(t *testing.T) {
	ctx := context.Background()
	opts := Options{Difficulty: dataset.DifficultyHard, Seed: 5}
	seeds := []uint64{3, 4, 5, 6}
	envs, ids := make([]Env, len(seeds)), make([]string, len(seeds))
	for i := range seeds {
		envs[i], ids[i] = newEnv(t, opts), fmt.Sprintf("r%d", i)
	}
	rounds := 0
	all, err := RunAll(ctx, envs, seeds, ids, func(_ context.Context, obs []*Observation, eps []*dataset.Episode) ([]string, error) {
		rounds++
		out := make([]string, len(obs))
		for k := range obs {
			env := envs[slices.IndexFunc(ids, func(id string) bool { return id == eps[k].ID })].(*Simulated)
			out[k] = env.Expert()
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for i, seed := range seeds {
		sim := newEnv(t, opts)
		one, err := Run(ctx, sim, seed, ids[i], func(context.Context, *Observation, *dataset.Episode) (string, error) { return sim.Expert(), nil })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one, all[i]) {
			t.Errorf("seed %d: the batched rollout differs from the single one", seed)
		}
		longest = max(longest, len(one.Episode.Steps))
	}
	if rounds != longest {
		t.Errorf("%d rounds for a longest episode of %d steps", rounds, longest)
	}
}
