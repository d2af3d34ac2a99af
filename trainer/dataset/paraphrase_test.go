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

package dataset

import (
	"slices"
	"testing"
)

// TestParaphrasesAskForTheSameInOtherWords: on both difficulties a paraphrase names
// every preference value of its episode, differs from the requirement, and is the
// same for the same options; generating paraphrases changes no episode.
func TestParaphrasesAskForTheSameInOtherWords(t *testing.T) {
	for _, difficulty := range []string{DifficultyStandard, DifficultyHard} {
		o := GenerateOptions{Episodes: 60, Seed: 3, Difficulty: difficulty}
		before, err := Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		paras, err := Paraphrases(o)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Paraphrases(o)
		after, _ := Generate(o)
		if !slices.Equal(paras, again) {
			t.Errorf("%s: the same options gave other paraphrases", difficulty)
		}
		same := 0
		for i, ep := range before {
			if after[i].Requirement != ep.Requirement {
				t.Fatalf("%s episode %d: its requirement changed after Paraphrases", difficulty, i)
			}
			if paras[i] == ep.Requirement {
				same++
			}
			for slot, v := range ep.Preferences {
				if !ContainsValue(paras[i], v) {
					t.Errorf("%s episode %d: paraphrase %q lacks %s %q", difficulty, i, paras[i], slot, v)
				}
			}
		}
		if same > 0 {
			t.Errorf("%s: %d of %d paraphrases equal their requirement", difficulty, same, len(before))
		}
	}
}
