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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// The SFT check's sizes: demonstrations to train on, episodes to judge on (seeds no
// demonstration used), epochs.
const (
	sftDemonstrations = 180
	sftJudged         = 120
	sftEpochs         = 12
)

// TestSFTOnDemonstrationsUsesWhatExploringShows: the CPU policy the comparison trains,
// fine-tuned on the expert's demonstrations of hard episodes, then living through
// episodes it never saw, scores at least 10 points of RecAcc above the policy that
// never explores; else the arms of a comparison in this environment could not differ
// for a reason worth reading.
func TestSFTOnDemonstrationsUsesWhatExploringShows(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the CPU policy")
	}
	ctx := context.Background()
	opts := Options{Difficulty: dataset.DifficultyHard, Seed: 21}
	sim := newEnv(t, opts)
	root := t.TempDir()
	var jsonl bytes.Buffer
	for seed := range uint64(sftDemonstrations) {
		ep, err := Demonstration(ctx, sim, seed, fmt.Sprintf("demo-%04d", seed))
		if err != nil {
			t.Fatal(err)
		}
		if err := dataset.WriteEpisode(&jsonl, &ep); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "demos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "demos", "demos.jsonl"), jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	member := worker.NewLocal(cpu.New(0))
	gang := worker.NewGang(member)
	c := &trainer.Config{DataRoot: root, OutputDir: t.TempDir()}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "demos",
		PersistentVolumeClaim: &trainingv1alpha1.VolumePath{ClaimName: "demos", Path: "demos.jsonl"}}}
	zero := int32(0)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmSFT, SFTEpochs: &zero, Epochs: sftEpochs,
		LearningRate: "0.01", Seed: 3}
	c.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 32, Architecture: trainingv1alpha1.CPUTokens}
	c.Spec.Default()
	tr, err := trainer.New(c, trainer.Options{Workers: gang, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := tr.Run(ctx); err != nil || rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("SFT on the demonstrations: %v (%+v)", err, rep)
	}

	greedy := func(ctx context.Context, _ *Observation, ep *dataset.Episode) (string, error) {
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
	blind := func(ctx context.Context, obs *Observation, ep *dataset.Episode) (string, error) {
		if obs.Stage == dataset.StageGUI {
			return neverExplore(t)(sim, *obs), nil
		}
		return greedy(ctx, obs, ep)
	}
	var sft, unexplored, never tally
	for seed := uint64(100_000); seed < 100_000+sftJudged; seed++ {
		for _, arm := range []struct {
			act Actor
			c   *tally
		}{{greedy, &sft}, {blind, &unexplored}} {
			r, err := Run(ctx, sim, seed, "judged", arm.act)
			if err != nil {
				t.Fatal(err)
			}
			arm.c.episodes++
			arm.c.Add(r)
		}
		run(t, sim, seed, neverExplore(t), &never)
	}
	t.Logf("fine-tuned on %d demonstrations: %s; the same deciding without exploring: %s; never explores: %s",
		sftDemonstrations, &sft, &unexplored, &never)
	if sft.Intents < sftJudged*9/10 {
		t.Errorf("the fine-tuned policy reached the pool in %d of %d episodes: want 90%%", sft.Intents, sftJudged)
	}
	if sft.RecAcc() < never.RecAcc()+0.10 {
		t.Errorf("SFT on the demonstrations scores RecAcc %.3f, the policy that never explores %.3f: want 10 points more",
			sft.RecAcc(), never.RecAcc())
	}
	if unexplored.RecAcc() > never.RecAcc()+0.05 {
		t.Errorf("the fine-tuned policy decides at RecAcc %.3f without exploring, the policy that never explores %.3f: "+
			"its lead does not come from the evidence", unexplored.RecAcc(), never.RecAcc())
	}
}
