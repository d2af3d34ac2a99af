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
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
)

var channelPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Validate checks one decoded episode against the rules of the format and returns
// its problems, each with the field path (File, Line unset); none when it is valid.
// The loader runs it on every line; the rules are listed in docs/dataset-format.md.
func Validate(ep *Episode) []Problem {
	var ps []Problem
	report := func(field, msg string) {
		ps = append(ps, Problem{Episode: ep.ID, Field: field, Message: msg})
	}
	validate(ep, report)
	return ps
}

// validate reports every problem of ep through report(field, message).
func validate(ep *Episode, report func(field, msg string)) {
	if ep.Format != FormatVersion {
		report("format", fmt.Sprintf("unsupported format version %q, want %q", ep.Format, FormatVersion))
		return
	}
	if strings.TrimSpace(ep.ID) == "" {
		report("id", "empty episode id")
	}
	if !channelPattern.MatchString(ep.Channel) {
		report("channel", fmt.Sprintf("channel %q is not a lower-case word (a-z, 0-9, _ and -)", ep.Channel))
	}
	if strings.TrimSpace(ep.Instruction) == "" {
		report("instruction", "empty instruction")
	}
	if strings.TrimSpace(ep.Requirement) == "" {
		report("requirement", "empty requirement")
	}
	if v := ep.Viewport; (v[0] != 0 || v[1] != 0) && (v[0] <= 0 || v[1] <= 0) {
		report("viewport", fmt.Sprintf("viewport %v: want two positive pixel sizes, or none", v))
	}
	validateStages(ep, report)
	for i := range ep.Steps {
		validateStep(ep, i, report)
	}
}

// validateStages checks the numbering of the steps and the order and counts of
// the stages: one or more gui steps, exactly one pool step, one or more recommend
// steps.
func validateStages(ep *Episode, report func(field, msg string)) {
	if len(ep.Steps) == 0 {
		report("steps", "an episode needs steps")
		return
	}
	order := map[Stage]int{StageGUI: 0, StagePool: 1, StageRecommend: 2}
	var count [3]int
	last := 0
	for i := range ep.Steps {
		s := &ep.Steps[i]
		field := fmt.Sprintf("steps[%d]", i)
		if s.Index != i {
			report(field+".index", fmt.Sprintf("index %d, want %d: steps are numbered 0, 1, 2, ... in order", s.Index, i))
		}
		o, ok := order[s.Stage]
		if !ok {
			report(field+".stage", fmt.Sprintf("unknown stage %q, want gui, pool or recommend", s.Stage))
			continue
		}
		if o < last {
			report(field+".stage", fmt.Sprintf("%s step after a %s step: the stages come in the order gui, pool, recommend",
				s.Stage, ep.Steps[i-1].Stage))
		}
		last = max(last, o)
		count[o]++
	}
	if count[0] == 0 {
		report("steps", "no gui step: an episode starts with at least one gui step")
	}
	if count[1] != 1 {
		report("steps", fmt.Sprintf("%d pool steps: an episode has exactly one pool step", count[1]))
	}
	if count[2] == 0 {
		report("steps", "no recommend step: an episode ends with at least one recommend step")
	}
}

// validateStep checks step i: its candidate, its screen and its answer.
func validateStep(ep *Episode, i int, report func(field, msg string)) {
	s := &ep.Steps[i]
	field := fmt.Sprintf("steps[%d]", i)
	switch {
	case s.Stage == StageRecommend && s.Candidate == nil:
		report(field+".candidate", "a recommend step needs a candidate item")
	case s.Stage != StageRecommend && s.Candidate != nil:
		report(field+".candidate", "only recommend steps have a candidate item")
	case s.Candidate != nil && (strings.TrimSpace(s.Candidate.ID) == "" || strings.TrimSpace(s.Candidate.Name) == ""):
		report(field+".candidate", "a candidate item needs an id and a name")
	}
	ids := make(map[string]int, len(s.Screen.Elements))
	for k, e := range s.Screen.Elements {
		ef := fmt.Sprintf("%s.screen.elements[%d]", field, k)
		switch j, dup := ids[e.ID]; {
		case e.ID == "":
			report(ef+".id", "empty element id")
		case dup:
			report(ef+".id", fmt.Sprintf("element id %q already used by elements[%d]", e.ID, j))
		default:
			ids[e.ID] = k
		}
		if strings.TrimSpace(e.Role) == "" {
			report(ef+".role", "empty element role")
		}
		validateBox(e.Box, ef+".box", report)
	}
	validateAnswer(ep, s, ids, field+".answer", report)
}

// validateBox checks that b lies in [0,1] and is not empty or inverted.
func validateBox(b Box, field string, report func(field, msg string)) {
	for _, v := range b {
		if v < 0 || v > 1 {
			report(field, fmt.Sprintf("box %v out of range: coordinates are normalised to [0,1]", b))
			return
		}
	}
	if b[0] >= b[2] || b[1] >= b[3] {
		report(field, fmt.Sprintf("box %v is empty or inverted: want x1 < x2 and y1 < y2", b))
	}
}

// validateAnswer checks the answer of step s, whose screen has the element ids ids.
func validateAnswer(ep *Episode, s *Step, ids map[string]int, field string, report func(field, msg string)) {
	a := &s.Answer
	allowed, ok := StageActions[s.Stage]
	if !ok {
		return // the unknown stage is reported already
	}
	if !slices.Contains(allowed, a.Action) {
		if !slices.ContainsFunc([]Stage{StageGUI, StagePool, StageRecommend}, func(st Stage) bool {
			return slices.Contains(StageActions[st], a.Action)
		}) {
			report(field+".action", fmt.Sprintf("unknown action %q", a.Action))
		} else {
			report(field+".action", fmt.Sprintf("action %q is not allowed on a %s step, want %s",
				a.Action, s.Stage, strings.Join(allowed, ", ")))
		}
		return
	}
	var target *Element
	if a.Target != "" {
		if k, ok := ids[a.Target]; ok {
			target = &s.Screen.Elements[k]
		} else {
			report(field+".target", fmt.Sprintf("target %q is not an element of the screen", a.Target))
		}
	}
	if IsPointing(a.Action) {
		switch {
		case a.Target == "":
			report(field+".target", "a click needs the id of its target element")
		case a.Box == nil:
			report(field+".box", "a click needs its target element's box")
		case target != nil && *a.Box != target.Box:
			report(field+".box", fmt.Sprintf("box %v differs from the target element's box %v", *a.Box, target.Box))
		case !a.Box.Contains(a.Point):
			report(field+".point", fmt.Sprintf("point %v lies outside the target box %v", a.Point, *a.Box))
		}
	} else {
		if a.Point != espo.NoPoint {
			report(field+".point", fmt.Sprintf("point %v on a %s action, want [-100, -100]: only a click points", a.Point, a.Action))
		}
		if a.Box != nil {
			report(field+".box", fmt.Sprintf("box on a %s action: only a click has a target box", a.Action))
		}
	}
	validateText(ep, a, field+".input_text", report)
}

// validateText checks the input_text of an answer against its action type.
func validateText(ep *Episode, a *Answer, field string, report func(field, msg string)) {
	t := a.InputText
	switch a.Action {
	case espo.ActionType:
		if strings.TrimSpace(t) == "" || t == espo.NoText {
			report(field, "a type action needs the typed text")
		}
	case espo.ActionScroll:
		if !slices.Contains(ScrollDirections, t) {
			report(field, fmt.Sprintf("scroll direction %q, want up, down, left or right", t))
		}
	case espo.ActionPoolFound:
		if t != ep.Requirement {
			report(field, "the pool step's input_text must be the episode's requirement (the true intent)")
		}
	case espo.ActionRecommendation:
		if t != Yes && t != No {
			report(field, fmt.Sprintf("decision %q, want Yes or No", t))
		}
	default:
		if t != espo.NoText {
			report(field, fmt.Sprintf("input_text %q on a %s action, want %q", t, a.Action, espo.NoText))
		}
	}
}
