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

package environment_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// The SFT check's sizes: demonstrations per epoch (each epoch the expert's episodes
// of new seeds), epochs, and episodes to judge on (seeds no demonstration used).
const (
	sftDemonstrations = 180
	sftEpochs         = 12
	sftJudged         = 120
)

// TestSFTOnDemonstrationsUsesWhatExploringShows: the CPU policy the comparison trains,
// fine-tuned by an SFT job in the simulated app (the expert's demonstrations of hard
// episodes), then living through episodes it never saw, scores at least 10 points
// of RecAcc above the policy that never explores; else the arms of a comparison in
// this environment could not differ for a reason worth reading.
func TestSFTOnDemonstrationsUsesWhatExploringShows(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the CPU policy")
	}
	ctx := context.Background()
	var channels []trainingv1alpha1.Channel
	for _, ch := range dataset.Channels() {
		channels = append(channels, trainingv1alpha1.Channel(ch))
	}
	zero := int32(0)
	c := &trainer.Config{OutputDir: t.TempDir()}
	c.Spec.Datasets.Environment = &trainingv1alpha1.EnvironmentSource{Episodes: sftDemonstrations, ValidationEpisodes: &zero,
		TestEpisodes: &zero, Simulated: &trainingv1alpha1.SimulatedEnvironment{Channels: channels,
			Difficulty: trainingv1alpha1.DifficultyHard, Seed: 21}}
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmSFT, SFTEpochs: &zero, Epochs: sftEpochs,
		SFTLearningRate: "0.01", Seed: 3}
	c.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 32, Architecture: trainingv1alpha1.CPUTokens}
	c.Spec.Default()
	gang := worker.NewGang(worker.NewLocal(cpu.New(0)))
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: gang, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := tr.Run(ctx); err != nil || rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("SFT on the demonstrations: %v (%+v)", err, rep)
	}
	sim, err := environment.NewSimulated(environment.Options{Difficulty: dataset.DifficultyHard, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}

	greedy := func(ctx context.Context, _ *environment.Observation, ep *dataset.Episode) (string, error) {
		out, err := gang.Generate(ctx, []worker.Rollouts{{Prompts: []worker.Prompt{worker.NewPrompt(ep, len(ep.Steps)-1)},
			Options: worker.SampleOptions{Samples: 1, Greedy: true}}})
		if err != nil {
			return "", err
		}
		return out[0][0].Answer.Text, nil
	}
	// The control: the same fine-tuned policy decides, but the policy that never
	// explores browses, so no saved card is in the history; its RecAcc must fall
	// back to that of the policy that never explores, or the fine-tuned policy's
	// lead does not come from what exploring shows.
	never := environment.Policy(environment.NeverExplore).Actor(sim)
	blind := func(ctx context.Context, obs *environment.Observation, ep *dataset.Episode) (string, error) {
		if obs.Stage == dataset.StageGUI {
			return never(ctx, obs, ep)
		}
		return greedy(ctx, obs, ep)
	}
	var sft, unexplored, neverAcc environment.Tally
	for seed := uint64(100_000); seed < 100_000+sftJudged; seed++ {
		for _, arm := range []struct {
			act environment.Actor
			c   *environment.Tally
		}{{greedy, &sft}, {blind, &unexplored}} {
			r, err := environment.Run(ctx, sim, seed, "judged", arm.act)
			if err != nil {
				t.Fatal(err)
			}
			arm.c.Count(r)
		}
		r, err := environment.Run(ctx, sim, seed, "never", never)
		if err != nil {
			t.Fatal(err)
		}
		neverAcc.Count(r)
	}
	t.Logf("fine-tuned on %d demonstrations: %s; the same deciding without exploring: %s; never explores: %s",
		sftDemonstrations*sftEpochs, &sft, &unexplored, &neverAcc)
	if sft.Intents < sftJudged*9/10 {
		t.Errorf("the fine-tuned policy reached the pool in %d of %d episodes: want 90%%", sft.Intents, sftJudged)
	}
	if sft.RecAcc() < neverAcc.RecAcc()+0.10 {
		t.Errorf("SFT on the demonstrations scores RecAcc %.3f, the policy that never explores %.3f: want 10 points more",
			sft.RecAcc(), neverAcc.RecAcc())
	}
	if unexplored.RecAcc() > neverAcc.RecAcc()+0.05 {
		t.Errorf("the fine-tuned policy decides at RecAcc %.3f without exploring, the policy that never explores %.3f: "+
			"its lead does not come from the evidence", unexplored.RecAcc(), neverAcc.RecAcc())
	}
}
