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

// Package metrics evaluates a GUI agent's answers on SmartSpot episodes with the
// metrics of SeeClick and SmartAgent: element accuracy, type accuracy, operation
// F1, step success, intent accuracy, recommendation accuracy (RecAcc) and format
// rate, micro-averaged over steps, and broken down by channel and by stage.
//
// Parsing the GUI-R1 answer, point-in-box, token-set F1 and the intent similarity
// are the espo package's (espo.ParseAnswer, espo.Rewarder.ScoreAction,
// espo.TokenF1), so evaluation judges an answer exactly as the rewards do.
package metrics

import (
	"fmt"
	"maps"
	"slices"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Options configures an Evaluator; the zero value gives the defaults of the espo
// package's rewards, so that evaluation judges answers as training rewards them.
type Options struct {
	// Tau is the cosine similarity at or above which an intent is right
	// (espo.DefaultRewardConfig().Tau, 0.75, when 0).
	Tau float64
	// TextF1 is the token-set F1 at or above which a typed text or scroll value is
	// right in Outcome.ValueOK, the GUI-R1 rule of the rewards
	// (espo.DefaultRewardConfig().TextF1, 0.5, when 0). The metrics do not use it:
	// operation F1 is continuous and step success needs F1 = 1.
	TextF1 float64
	// Embedder embeds intents for their similarity (an espo.HashEmbedder when nil).
	Embedder espo.Embedder
	// Match is how intents are judged (espo.RewardConfig.Match; auto when "").
	Match espo.IntentMatch
	// Slots holds every value of each preference slot, for intents judged by slots
	// (espo.Rewarder.SetSlotVocab). Without it (nil) auto judges every intent by
	// embedding, as there is no vocabulary to find slot values with.
	Slots espo.SlotVocab
}

// Outcome is the judgement of one answer at one step.
type Outcome struct {
	// Stage is the step's stage.
	Stage dataset.Stage
	// Parsed: the answer is in the GUI-R1 format.
	Parsed bool
	// TypeOK: the action type is right (pool_found on the pool step,
	// recommendation on recommend steps).
	TypeOK bool
	// ValueOK: the value is right by the rewards' rule (espo.Rewarder.ScoreAction):
	// the point in the box, the text F1 >= TextF1, the intent's cosine >= Tau or its
	// slots right, the decision equal.
	ValueOK bool
	// Pointing: the true action points (a click), so the step counts for element
	// accuracy; ElementOK: the predicted point lies in the target box.
	Pointing, ElementOK bool
	// OpF1 is the token-set F1 of the operations "type value" (GUI steps).
	OpF1 float64
	// Success: the step is right by its stage's rule: on a GUI step OpF1 = 1 and,
	// when it points, ElementOK (step success); on the pool step TypeOK and
	// the intent right (intent accuracy); on a recommend step TypeOK and the
	// decision equal (RecAcc).
	Success bool
	// Similarity is the cosine of the predicted and the true intent (pool step
	// judged by embedding).
	Similarity float64
	// BySlots: the pool step was judged slot by slot; SlotF1 is then the slot F1 of
	// the intent (espo.SlotMatch.F1), 0 for an answer that does not parse.
	BySlots bool
	SlotF1  float64
}

// Metrics are the metrics of a set of steps. Each metric is a mean over its own
// steps, given beside it; a metric with no steps is 0.
//
//	FormatRate  answers that parse                         over all Steps
//	TypeAcc     action type right                          over all Steps
//	EleAcc      point in the target box                    over ElementSteps (GUI clicks)
//	OpF1        token-set F1 of "type value"               over GUISteps
//	StepSR      OpF1 = 1 and element right (if it points)  over GUISteps
//	IntentAcc   pool_found and the intent right            over PoolSteps
//	            (cos(pred, intent) >= tau, or every slot right: espo.Rewarder)
//	IntentF1    slot F1 of the intent (espo.SlotMatch)      over SlotSteps (pool steps
//	            judged by slots)
//	RecAcc      recommendation with the right Yes/No       over RecommendSteps
type Metrics struct {
	Steps          int     `json:"steps"`
	FormatRate     float64 `json:"formatRate"`
	TypeAcc        float64 `json:"typeAcc"`
	ElementSteps   int     `json:"elementSteps"`
	EleAcc         float64 `json:"eleAcc"`
	GUISteps       int     `json:"guiSteps"`
	OpF1           float64 `json:"opF1"`
	StepSR         float64 `json:"stepSR"`
	PoolSteps      int     `json:"poolSteps"`
	IntentAcc      float64 `json:"intentAcc"`
	SlotSteps      int     `json:"slotSteps"`
	IntentF1       float64 `json:"intentF1"`
	RecommendSteps int     `json:"recommendSteps"`
	RecAcc         float64 `json:"recAcc"`
}

// Report holds the metrics over all steps (micro) and by channel and stage.
type Report struct {
	Micro     Metrics            `json:"micro"`
	ByChannel map[string]Metrics `json:"byChannel"`
	ByStage   map[string]Metrics `json:"byStage"`
}

// tally counts outcomes.
type tally struct {
	steps, parsed, typeOK     int
	elementSteps, elementOK   int
	guiSteps, guiOK           int
	opF1                      float64
	poolSteps, poolOK         int
	slotSteps                 int
	slotF1                    float64
	recommendSteps, recommend int
}

func (t *tally) add(o *Outcome) {
	t.steps++
	t.parsed += b2i(o.Parsed)
	t.typeOK += b2i(o.TypeOK)
	if o.Pointing {
		t.elementSteps++
		t.elementOK += b2i(o.ElementOK)
	}
	switch o.Stage {
	case dataset.StageGUI:
		t.guiSteps++
		t.guiOK += b2i(o.Success)
		t.opF1 += o.OpF1
	case dataset.StagePool:
		t.poolSteps++
		t.poolOK += b2i(o.Success)
		if o.BySlots {
			t.slotSteps++
			t.slotF1 += o.SlotF1
		}
	case dataset.StageRecommend:
		t.recommendSteps++
		t.recommend += b2i(o.Success)
	}
}

func (t *tally) merge(u *tally) {
	t.steps += u.steps
	t.parsed += u.parsed
	t.typeOK += u.typeOK
	t.elementSteps += u.elementSteps
	t.elementOK += u.elementOK
	t.guiSteps += u.guiSteps
	t.guiOK += u.guiOK
	t.opF1 += u.opF1
	t.poolSteps += u.poolSteps
	t.poolOK += u.poolOK
	t.slotSteps += u.slotSteps
	t.slotF1 += u.slotF1
	t.recommendSteps += u.recommendSteps
	t.recommend += u.recommend
}

func (t *tally) metrics() Metrics {
	return Metrics{
		Steps:          t.steps,
		FormatRate:     ratio(float64(t.parsed), t.steps),
		TypeAcc:        ratio(float64(t.typeOK), t.steps),
		ElementSteps:   t.elementSteps,
		EleAcc:         ratio(float64(t.elementOK), t.elementSteps),
		GUISteps:       t.guiSteps,
		OpF1:           ratio(t.opF1, t.guiSteps),
		StepSR:         ratio(float64(t.guiOK), t.guiSteps),
		PoolSteps:      t.poolSteps,
		IntentAcc:      ratio(float64(t.poolOK), t.poolSteps),
		SlotSteps:      t.slotSteps,
		IntentF1:       ratio(t.slotF1, t.slotSteps),
		RecommendSteps: t.recommendSteps,
		RecAcc:         ratio(float64(t.recommend), t.recommendSteps),
	}
}

func ratio(x float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return x / float64(n)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Evaluator accumulates the outcomes of answers on episodes. It is not safe for
// concurrent use: give each goroutine its own and Merge them.
type Evaluator struct {
	rw        *espo.Rewarder
	cfg       espo.RewardConfig
	micro     tally
	byChannel map[string]*tally
	byStage   map[dataset.Stage]*tally
}

// NewEvaluator returns an empty Evaluator. It panics if Tau is not in [-1, 1] or
// TextF1 not in [0, 1] (espo.RewardConfig.Validate): options come from a validated
// job configuration.
func NewEvaluator(opts Options) *Evaluator {
	rc := espo.DefaultRewardConfig()
	if opts.Tau != 0 {
		rc.Tau = opts.Tau
	}
	if opts.TextF1 != 0 {
		rc.TextF1 = opts.TextF1
	}
	rc.Match = opts.Match
	if opts.Slots == nil && opts.Match != espo.IntentMatchSlots {
		rc.Match = espo.IntentMatchEmbedding
	}
	rw, err := espo.NewRewarder(rc, opts.Embedder)
	if err != nil {
		panic("metrics: " + err.Error())
	}
	rw.SetSlotVocab(opts.Slots)
	return &Evaluator{rw: rw, cfg: rc, byChannel: map[string]*tally{}, byStage: map[dataset.Stage]*tally{}}
}

// Judge returns the outcome of answer (the model's raw output) at step j of ep,
// without counting it.
func (e *Evaluator) Judge(ep *dataset.Episode, j int, answer string) Outcome {
	s := &ep.Steps[j]
	gt := ep.GroundTruth(s)
	o := Outcome{Stage: s.Stage, Pointing: dataset.IsPointing(s.Answer.Action)}
	if s.Stage == dataset.StagePool {
		o.BySlots = e.cfg.IntentJudge(&gt) == espo.IntentMatchSlots
	}
	a, err := espo.ParseAnswer(answer)
	if err != nil {
		return o
	}
	sc := e.rw.ScoreAction(&gt, a)
	if o.BySlots && sc.TypeOK {
		o.SlotF1 = sc.Slots.F1
	}
	o.Parsed, o.TypeOK, o.ValueOK, o.Similarity = true, sc.TypeOK, sc.ValueOK, sc.Similarity
	o.ElementOK = o.Pointing && sc.ValueOK
	switch s.Stage {
	case dataset.StageGUI:
		o.OpF1 = espo.TokenF1(operation(a), operation(gt.Action))
		o.Success = o.OpF1 == 1 && (!o.Pointing || o.ElementOK)
	default:
		o.Success = sc.TypeOK && sc.ValueOK
	}
	return o
}

// operation is the "type value" string of an action, SeeClick's operation: the
// type alone when the action has no text.
func operation(a espo.Action) string {
	if a.Text == "" || a.Text == espo.NoText {
		return a.Type
	}
	return a.Type + " " + a.Text
}

// Add judges and counts the answers of one episode, answers[j] for step j.
func (e *Evaluator) Add(ep *dataset.Episode, answers []string) error {
	if len(answers) != len(ep.Steps) {
		return fmt.Errorf("metrics: episode %s: %d answers for %d steps", ep.ID, len(answers), len(ep.Steps))
	}
	for j, ans := range answers {
		o := e.Judge(ep, j, ans)
		e.count(ep.Channel, &o)
	}
	return nil
}

// count adds one outcome to the micro, channel and stage tallies.
func (e *Evaluator) count(channel string, o *Outcome) {
	e.micro.add(o)
	tallyOf(e.byChannel, channel).add(o)
	tallyOf(e.byStage, o.Stage).add(o)
}

func tallyOf[K comparable](m map[K]*tally, k K) *tally {
	t := m[k]
	if t == nil {
		t = &tally{}
		m[k] = t
	}
	return t
}

// Merge adds the counts of o to e.
func (e *Evaluator) Merge(o *Evaluator) {
	e.micro.merge(&o.micro)
	for k, t := range o.byChannel {
		tallyOf(e.byChannel, k).merge(t)
	}
	for k, t := range o.byStage {
		tallyOf(e.byStage, k).merge(t)
	}
}

// Report returns the metrics of everything counted so far.
func (e *Evaluator) Report() Report {
	r := Report{Micro: e.micro.metrics(), ByChannel: map[string]Metrics{}, ByStage: map[string]Metrics{}}
	for k, t := range e.byChannel {
		r.ByChannel[k] = t.metrics()
	}
	for k, t := range e.byStage {
		r.ByStage[string(k)] = t.metrics()
	}
	return r
}

// Channels returns the channels of a report, sorted.
func (r *Report) Channels() []string { return slices.Sorted(maps.Keys(r.ByChannel)) }
