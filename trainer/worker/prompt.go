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

package worker

import (
	"maps"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// PromptFromStep returns the teacher-forced prompt of step j of ep: the episode's
// id, channel and instruction, the step's index, stage and screen (elements with
// their boxes and attributes, and the screenshot path), the candidate item of a
// recommend step, and the demonstrated history of steps 0..j-1: for each, the
// action type, point and input text, and the target element's id, role, text and
// attributes as they were on that step's screen.
//
// The hidden requirement and the user's preferences are never part of a prompt.
// Since the demonstrated answer of the pool step is the requirement itself, a pool
// step in the history carries its action type only (input text "no input text").
// It panics if j is not a step of ep.
func PromptFromStep(ep *dataset.Episode, j int) *workerpb.Prompt {
	s := &ep.Steps[j]
	p := &workerpb.Prompt{
		EpisodeId:      ep.ID,
		StepIndex:      int32(j),
		Channel:        ep.Channel,
		Stage:          stageOf(s.Stage),
		Instruction:    ep.Instruction,
		Elements:       elementsOf(s.Screen.Elements),
		ScreenshotPath: s.Screen.Screenshot,
		History:        make([]*workerpb.Action, j),
	}
	if s.Candidate != nil {
		p.Item = &workerpb.Item{Id: s.Candidate.ID, Title: s.Candidate.Name, Attributes: maps.Clone(s.Candidate.Attrs)}
	}
	for k := range j {
		p.History[k] = historyAction(&ep.Steps[k])
	}
	return p
}

// historyAction is the demonstrated action of step s as the history shows it.
func historyAction(s *dataset.Step) *workerpb.Action {
	a := &workerpb.Action{
		Type:      s.Answer.Action,
		Point:     []float64{s.Answer.Point[0], s.Answer.Point[1]},
		InputText: s.Answer.InputText,
		ElementId: s.Answer.Target,
	}
	if s.Stage == dataset.StagePool {
		a.InputText = espo.NoText // the requirement: hidden
	}
	for i := range s.Screen.Elements {
		if e := &s.Screen.Elements[i]; e.ID == a.ElementId && a.ElementId != "" {
			a.ElementRole, a.ElementText, a.ElementAttributes = e.Role, e.Text, maps.Clone(e.Attrs)
			break
		}
	}
	return a
}

func elementsOf(es []dataset.Element) []*workerpb.Element {
	out := make([]*workerpb.Element, len(es))
	for i := range es {
		e := &es[i]
		out[i] = &workerpb.Element{Id: e.ID, Role: e.Role, Text: e.Text, Box: append([]float64(nil), e.Box[:]...), Attributes: maps.Clone(e.Attrs)}
	}
	return out
}

// stageOf maps a dataset stage to the protocol's.
func stageOf(s dataset.Stage) workerpb.Stage {
	switch s {
	case dataset.StageGUI:
		return workerpb.Stage_STAGE_GUI
	case dataset.StagePool:
		return workerpb.Stage_STAGE_POOL
	case dataset.StageRecommend:
		return workerpb.Stage_STAGE_RECOMMEND
	}
	return workerpb.Stage_STAGE_UNSPECIFIED
}
