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

package worker_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

func generated(t testing.TB, n int) []dataset.Episode {
	t.Helper()
	eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: n, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestPromptFromStep(t *testing.T) {
	for _, ep := range generated(t, 6) {
		for j, s := range ep.Steps {
			p := worker.PromptFromStep(&ep, j)
			if p.EpisodeId != ep.ID || p.StepIndex != int32(j) || p.Channel != ep.Channel || p.Instruction != ep.Instruction {
				t.Fatalf("%s step %d: header %v", ep.ID, j, p)
			}
			if p.Stage.String() != "STAGE_"+strings.ToUpper(string(s.Stage)) {
				t.Errorf("stage %v, want %s", p.Stage, s.Stage)
			}
			if len(p.Elements) != len(s.Screen.Elements) || len(p.History) != j {
				t.Fatalf("%d elements and %d history entries", len(p.Elements), len(p.History))
			}
			if (p.Item != nil) != (s.Candidate != nil) {
				t.Errorf("item %v for candidate %v", p.Item, s.Candidate)
			}
			for k, a := range p.History {
				checkHistory(t, &ep.Steps[k], a)
			}
			// Nothing of the hidden requirement or preferences reaches the prompt.
			text := prototext.Format(p)
			if strings.Contains(text, ep.Requirement) {
				t.Fatalf("%s step %d: the prompt holds the requirement", ep.ID, j)
			}
		}
	}
}

// checkHistory compares a history entry with the demonstrated step.
func checkHistory(t *testing.T, s *dataset.Step, a *workerpb.Action) {
	t.Helper()
	if a.Type != s.Answer.Action || a.ElementId != s.Answer.Target || a.Point[0] != s.Answer.Point[0] {
		t.Errorf("history %v, step answer %+v", a, s.Answer)
	}
	switch {
	case s.Stage == dataset.StagePool && a.InputText != espo.NoText:
		t.Errorf("pool step in history carries %q", a.InputText)
	case s.Stage != dataset.StagePool && a.InputText != s.Answer.InputText:
		t.Errorf("history text %q, want %q", a.InputText, s.Answer.InputText)
	}
	if s.Answer.Target != "" {
		for _, e := range s.Screen.Elements {
			if e.ID == s.Answer.Target && (a.ElementText != e.Text || a.ElementRole != e.Role || len(a.ElementAttributes) != len(e.Attrs)) {
				t.Errorf("history element %q %q %v, want %+v", a.ElementRole, a.ElementText, a.ElementAttributes, e)
			}
		}
	}
}

// TestObservationKeyIsTheScreen: a prompt's observation key is the current screen's,
// the same under another episode id or history, different on another screen.
func TestObservationKeyIsTheScreen(t *testing.T) {
	eps := generated(t, 2)
	ep := eps[0]
	other := ep
	other.ID = "another-" + ep.ID
	other.Steps = slices.Clone(ep.Steps)
	other.Steps[0].Answer.InputText = "a history of its own"
	if a, b := worker.NewPrompt(&ep, 1).ObservationKey(), worker.NewPrompt(&other, 1).ObservationKey(); a != b {
		t.Errorf("one screen under two episode ids and histories: keys %x and %x", a, b)
	}
	if worker.NewPrompt(&ep, 0).ObservationKey() == worker.NewPrompt(&ep, 1).ObservationKey() {
		t.Error("two screens of an episode share a key")
	}
	if worker.NewPrompt(&ep, 0).ObservationKey() == worker.NewPrompt(&eps[1], 0).ObservationKey() {
		t.Error("the first screens of two episodes share a key")
	}
}
