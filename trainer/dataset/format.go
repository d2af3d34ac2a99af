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

// Package dataset defines the SmartSpot episode format of espo-operator (versioned
// JSONL, one episode per line), streams and validates such files, generates
// SmartSpot-shaped episodes with simulated users, and measures the shape of a file
// against the published SmartSpot table. docs/dataset-format.md describes the
// format with a full example.
//
// An episode is a demonstration with a vague instruction and a hidden requirement
// (the user's true intent), whose steps pass through three stages in order: GUI
// execution (several steps), the item pool (exactly one step, whose answer states the
// inferred intent) and personalized recommendation (one step per candidate item,
// answered Yes or No). Every step carries its screen (an element tree with boxes
// normalised to [0,1]) and its ground-truth answer in the GUI-R1 form.
package dataset

import (
	"github.com/espo-dev/espo-operator/espo"
)

// FormatVersion is the value of the "format" field of every episode this package
// reads and writes. A reader refuses other versions.
const FormatVersion = "espo.smartspot/v1"

// Stage is the stage of a step, as written in the file: "gui", "pool" or "recommend".
type Stage string

// The stages of an episode, in their order.
const (
	StageGUI       Stage = "gui"
	StagePool      Stage = "pool"
	StageRecommend Stage = "recommend"
)

// Espo returns the stage as the espo package numbers it, or 0 for an unknown stage.
func (s Stage) Espo() espo.Stage {
	st, err := espo.ParseStage(string(s))
	if err != nil {
		return 0
	}
	return st
}

// The decisions of a recommend step, its answer's input_text.
const (
	Yes = "Yes"
	No  = "No"
)

// The scroll directions, a scroll answer's input_text.
var ScrollDirections = []string{"up", "down", "left", "right"}

// Episode is one demonstration: one line of a file.
type Episode struct {
	// Format is FormatVersion.
	Format string `json:"format"`
	// ID names the episode; it is unique within a file.
	ID string `json:"id"`
	// Channel is the app category, a lower-case word such as "food" or "hotel".
	Channel string `json:"channel"`
	// Instruction is the user's vague request, what the agent is told.
	Instruction string `json:"instruction"`
	// Requirement is the hidden underlying requirement: the ground-truth intent that
	// the item-pool step must infer. It is never part of a prompt.
	Requirement string `json:"requirement"`
	// Viewport is the screen's width and height in pixels, used to read answers
	// given in pixels; absent (zero) when unknown.
	Viewport [2]int `json:"viewport,omitempty"`
	// Preferences are the simulated user's latent preferences (attribute: value),
	// written by the generator for analysis and tests. Like Requirement they are
	// hidden: never part of a prompt. Optional.
	Preferences map[string]string `json:"preferences,omitempty"`
	// Steps are the demonstrated steps, in order.
	Steps []Step `json:"steps"`
}

// Step is one demonstrated step.
type Step struct {
	// Index is the step's position in the episode, 0, 1, 2, ...
	Index int `json:"index"`
	// Stage is "gui", "pool" or "recommend".
	Stage Stage `json:"stage"`
	// Screen is what the agent sees at this step.
	Screen Screen `json:"screen"`
	// Candidate is the item to decide on; present on recommend steps only.
	Candidate *Item `json:"candidate,omitempty"`
	// Answer is the ground-truth action.
	Answer Answer `json:"answer"`
}

// Screen is one screen of the app.
type Screen struct {
	// Screenshot is the path of the screenshot image, relative to the file; optional.
	Screenshot string `json:"screenshot,omitempty"`
	// Page names the kind of page ("home", "search", "results", "options",
	// "detail"); optional, informative.
	Page string `json:"page,omitempty"`
	// Elements is the element tree, flattened in reading order.
	Elements []Element `json:"elements"`
}

// Element is one element on a screen.
type Element struct {
	// ID names the element, unique on its screen.
	ID string `json:"id"`
	// Role is what kind of element it is: "button", "search_box", "chip", "card", ...
	Role string `json:"role"`
	// Text is the element's visible text; it may be empty (an icon).
	Text string `json:"text"`
	// Box is the element's bounding box.
	Box Box `json:"box"`
	// Attrs are further properties: "selected", the attributes of an item card, ...
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Box is a bounding box {x1, y1, x2, y2} normalised to [0,1], x1 < x2 and y1 < y2,
// with the origin at the top left of the screen.
type Box [4]float64

// Contains reports whether the normalised point p lies in b, edges included.
func (b Box) Contains(p [2]float64) bool { return espo.PointInBox(p, b) }

// Center returns the middle of b.
func (b Box) Center() [2]float64 { return [2]float64{(b[0] + b[2]) / 2, (b[1] + b[3]) / 2} }

// Overlaps reports whether b and c share interior area (touching edges do not count).
func (b Box) Overlaps(c Box) bool {
	return b[0] < c[2] && c[0] < b[2] && b[1] < c[3] && c[1] < b[3]
}

// Item is a candidate item of a recommend step.
type Item struct {
	// ID names the item.
	ID string `json:"id"`
	// Name is its display name.
	Name string `json:"name"`
	// Attrs are its attributes (attribute: value), as the app shows them.
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Answer is a ground-truth answer in the GUI-R1 form.
type Answer struct {
	// Action is the action type: click, type, scroll, exit or complete on GUI steps,
	// pool_found on the pool step, recommendation on recommend steps.
	Action string `json:"action"`
	// Point is where a click lands, normalised to [0,1]; [-100, -100] (espo.NoPoint)
	// for an action that does not point.
	Point [2]float64 `json:"point"`
	// InputText is the typed text, the scroll direction, the inferred intent (pool:
	// equal to the episode's requirement) or the decision Yes or No;
	// "no input text" (espo.NoText) when the action has none.
	InputText string `json:"input_text"`
	// Target is the id of the element acted on: required for a click, optional for
	// type (the input field).
	Target string `json:"target,omitempty"`
	// Box is the target element's box, required for a click and equal to that
	// element's box on the screen.
	Box *Box `json:"box,omitempty"`
}

// Espo returns the answer as the espo package parses one: what a supervised
// target renders with espo.FormatAnswer.
func (a *Answer) Espo() espo.Action {
	return espo.Action{Type: a.Action, Point: a.Point, Text: a.InputText}
}

// GroundTruth returns what is right at step s of episode ep, for the espo package's
// rewards: the stage, the demonstrated action, the target box of a click, the
// viewport for pixel answers and, on the pool step, the requirement as the intent
// and the preferences (shared with ep, not copied; nil when ep has none) that a
// slot-judged intent must name.
func (ep *Episode) GroundTruth(s *Step) espo.GroundTruth {
	gt := espo.GroundTruth{
		Stage:  s.Stage.Espo(),
		Action: s.Answer.Espo(),
		Screen: [2]float64{float64(ep.Viewport[0]), float64(ep.Viewport[1])},
	}
	if s.Answer.Box != nil {
		gt.Box = *s.Answer.Box
	}
	if s.Stage == StagePool {
		gt.Intent = ep.Requirement
		gt.Preferences = ep.Preferences
	}
	return gt
}

// IsPointing reports whether an action type points at an element, so that its
// answer carries a point, a target and the target's box.
func IsPointing(action string) bool { return action == espo.ActionClick }

// StageActions lists the action types allowed at each stage.
var StageActions = map[Stage][]string{
	StageGUI:       {espo.ActionClick, espo.ActionType, espo.ActionScroll, espo.ActionExit, espo.ActionComplete},
	StagePool:      {espo.ActionPoolFound},
	StageRecommend: {espo.ActionRecommendation},
}
