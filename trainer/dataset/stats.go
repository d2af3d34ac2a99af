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
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Reference is the published shape of a SmartSpot channel (SmartAgent, arXiv
// 2412.07472): the mean number of GUI steps, and the range of recommend steps.
type Reference struct {
	GUISteps                  float64
	GUIStepsLow, GUIStepsHigh float64 // the published range, when it is one (TRAVEL1/TRAVEL2)
	RecommendMin              float64
	RecommendMax              float64
}

// Published is the published SmartSpot table by channel. Every channel has one pool
// step; recommend steps lie in 4-7; instructions have 13-24 words and requirements
// 19-55 words (PublishedWords).
var Published = map[string]Reference{
	"food":     {GUISteps: 7.0, RecommendMin: 4, RecommendMax: 7},
	"hotel":    {GUISteps: 11.0, RecommendMin: 4, RecommendMax: 7},
	"flight":   {GUISteps: 9.2, RecommendMin: 4, RecommendMax: 7},
	"movie":    {GUISteps: 8.0, RecommendMin: 4, RecommendMax: 7},
	"medicine": {GUISteps: 6.55, RecommendMin: 4, RecommendMax: 7},
	"travel":   {GUISteps: 19.3, GUIStepsLow: 17.3, GUIStepsHigh: 21.3, RecommendMin: 4, RecommendMax: 7},
}

// PublishedWords are the published word-count ranges of instructions and
// requirements, and PublishedStepsPerEpisode the published mean episode length
// (1,713 steps in 102 episodes).
var (
	PublishedWords           = struct{ InstructionMin, InstructionMax, RequirementMin, RequirementMax int }{13, 24, 19, 55}
	PublishedStepsPerEpisode = 1713.0 / 102
)

// Shape is the measured shape of a set of episodes (one channel, or all).
type Shape struct {
	Episodes int
	// Means per episode.
	GUI, Pool, Recommend, Steps float64
	// Word counts: mean, min and max.
	InstructionWords, RequirementWords           float64
	InstructionMin, InstructionMax               int
	RequirementMin, RequirementMax               int
	YesShare                                     float64 // of recommend steps answered Yes
	sumGUI, sumPool, sumRec, sumIns, sumReq, yes int
}

func (s *Shape) add(ep *Episode) {
	ins, req := len(strings.Fields(ep.Instruction)), len(strings.Fields(ep.Requirement))
	if s.Episodes == 0 {
		s.InstructionMin, s.InstructionMax, s.RequirementMin, s.RequirementMax = ins, ins, req, req
	}
	s.Episodes++
	for i := range ep.Steps {
		switch ep.Steps[i].Stage {
		case StageGUI:
			s.sumGUI++
		case StagePool:
			s.sumPool++
		case StageRecommend:
			s.sumRec++
			if ep.Steps[i].Answer.InputText == Yes {
				s.yes++
			}
		}
	}
	s.sumIns += ins
	s.sumReq += req
	s.InstructionMin, s.InstructionMax = min(s.InstructionMin, ins), max(s.InstructionMax, ins)
	s.RequirementMin, s.RequirementMax = min(s.RequirementMin, req), max(s.RequirementMax, req)
	n := float64(s.Episodes)
	s.GUI, s.Pool, s.Recommend = float64(s.sumGUI)/n, float64(s.sumPool)/n, float64(s.sumRec)/n
	s.Steps = s.GUI + s.Pool + s.Recommend
	s.InstructionWords, s.RequirementWords = float64(s.sumIns)/n, float64(s.sumReq)/n
	if s.sumRec > 0 {
		s.YesShare = float64(s.yes) / float64(s.sumRec)
	}
}

// Stats accumulates the shape of episodes, by channel and in all.
type Stats struct {
	All       Shape
	ByChannel map[string]*Shape
}

// Add counts one episode.
func (s *Stats) Add(ep *Episode) {
	if s.ByChannel == nil {
		s.ByChannel = make(map[string]*Shape)
	}
	sh := s.ByChannel[ep.Channel]
	if sh == nil {
		sh = &Shape{}
		s.ByChannel[ep.Channel] = sh
	}
	sh.add(ep)
	s.All.add(ep)
}

// Channels returns the channels seen: the published ones in the published order,
// then any others sorted.
func (s *Stats) Channels() []string {
	var out, rest []string
	for _, c := range Channels() {
		if s.ByChannel[c] != nil {
			out = append(out, c)
		}
	}
	for c := range s.ByChannel {
		if !slices.Contains(out, c) {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// WriteTable writes the shape table: per channel and in all, the measured means
// beside the published ones.
func (s *Stats) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "channel\tepisodes\tgui\tpublished\tpool\trecommend\tpublished\tsteps\tyes\tinstruction words\trequirement words\t")
	row := func(name string, sh *Shape, pubGUI, pubRec string) {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.2f\t%.2f\t%s\t%.2f\t%.0f%%\t%.1f (%d-%d)\t%.1f (%d-%d)\t\n",
			name, sh.Episodes, sh.GUI, pubGUI, sh.Pool, sh.Recommend, pubRec, sh.Steps, 100*sh.YesShare,
			sh.InstructionWords, sh.InstructionMin, sh.InstructionMax,
			sh.RequirementWords, sh.RequirementMin, sh.RequirementMax)
	}
	for _, c := range s.Channels() {
		pubGUI, pubRec := "-", "-"
		if ref, ok := Published[c]; ok {
			pubGUI = fmt.Sprintf("%.2f", ref.GUISteps)
			if ref.GUIStepsLow > 0 {
				pubGUI = fmt.Sprintf("%.1f-%.1f", ref.GUIStepsLow, ref.GUIStepsHigh)
			}
			pubRec = fmt.Sprintf("%.0f-%.0f", ref.RecommendMin, ref.RecommendMax)
		}
		row(c, s.ByChannel[c], pubGUI, pubRec)
	}
	row("all", &s.All, "-", "4-7")
	fmt.Fprintf(tw, "published\t102\t\t\t1.00\t\t\t%.2f\t\t(%d-%d)\t(%d-%d)\t\n", PublishedStepsPerEpisode,
		PublishedWords.InstructionMin, PublishedWords.InstructionMax, PublishedWords.RequirementMin, PublishedWords.RequirementMax)
	return tw.Flush()
}
