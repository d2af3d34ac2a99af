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

package trainer

import (
	"bytes"
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// TestSyntheticSourceDifficulty checks that spec.datasets.sources[].synthetic.
// difficulty reaches the generator: hard gives the generator's hard episodes,
// and the default (standard) the standard ones, byte for byte.
func TestSyntheticSourceDifficulty(t *testing.T) {
	for _, difficulty := range []string{"", dataset.DifficultyStandard, dataset.DifficultyHard} {
		yaml := strings.Replace(minimalConfig, "seed: 7}", "seed: 7, difficulty: "+difficulty+"}", 1)
		if difficulty == "" {
			yaml = minimalConfig
		}
		s, err := LoadConfig(writeConfig(t, yaml))
		if err != nil {
			t.Fatal(err)
		}
		c := s.Config
		c.Spec.Datasets.Sources[0].Split = trainingv1alpha1.SplitTrain // loaded whole, in order
		splits, err := loadSplits(c, [3]float64{1, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		got := splits.Train
		want, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"food", "hotel"}, Episodes: 20, Seed: 7, Difficulty: difficulty})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("difficulty %q: %d episodes, want %d", difficulty, len(got), len(want))
		}
		for i := range got {
			var g, w bytes.Buffer
			if dataset.WriteEpisode(&g, &got[i]) != nil || dataset.WriteEpisode(&w, &want[i]) != nil || !bytes.Equal(g.Bytes(), w.Bytes()) {
				t.Fatalf("difficulty %q: episode %d differs from the generator's", difficulty, i)
			}
		}
		if hard := strings.Contains(got[0].ID, "-hard-"); hard != (difficulty == dataset.DifficultyHard) {
			t.Errorf("difficulty %q: episode id %s", difficulty, got[0].ID)
		}
	}
}
