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

package espo

import (
	"errors"
	"fmt"
	"math"
)

// Stage is the stage of an episode a step belongs to.
type Stage uint8

// The stages of an episode, in their order: GUI execution, the one item-pool
// (intent prediction) step, and one personalized decision step per candidate item.
const (
	StageGUI Stage = iota + 1
	StagePool
	StageRecommend
)

var stageNames = [...]string{StageGUI: "gui", StagePool: "pool", StageRecommend: "recommend"}

// String returns "gui", "pool" or "recommend".
func (s Stage) String() string {
	if s >= StageGUI && s <= StageRecommend {
		return stageNames[s]
	}
	return fmt.Sprintf("Stage(%d)", uint8(s))
}

// ParseStage returns the Stage named "gui", "pool" or "recommend".
func ParseStage(name string) (Stage, error) {
	for s := StageGUI; s <= StageRecommend; s++ {
		if stageNames[s] == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("espo: unknown stage %q, want gui, pool or recommend", name)
}

// GroundTruth is what is right at one step: the demonstrated action, the target
// element's box for a pointing action, the screen size for answers in pixels, and
// for the item-pool step the user's true intent.
type GroundTruth struct {
	Stage  Stage
	Action Action
	// Box is the target element, normalised: x1, y1, x2, y2 in [0,1].
	Box [4]float64
	// Screen is the width and height in pixels, to normalise pixel points; zero when
	// answers are normalised.
	Screen [2]float64
	// Intent is the true intent text of the item-pool step.
	Intent string
	// Preferences are the user's true preferences (slot: value) on the item-pool
	// step, when the episode carries them: what a slot-judged intent must name.
	Preferences map[string]string
}

// IntentMatch says how the item-pool step's intent is judged.
type IntentMatch string

// The intent matches. A Score says which of IntentMatchSlots and
// IntentMatchEmbedding judged it.
const (
	// IntentMatchAuto (or "") judges by slots a step whose GroundTruth carries
	// preferences, by embedding one that does not.
	IntentMatchAuto IntentMatch = "auto"
	// IntentMatchSlots judges by slots (SlotMatcher.Match) always: a step without
	// preferences is never right.
	IntentMatchSlots IntentMatch = "slots"
	// IntentMatchEmbedding judges by the cosine of the embeddings against Tau always.
	IntentMatchEmbedding IntentMatch = "embedding"
)

// SlotScore is the reward of a slot-judged intent.
type SlotScore string

// The slot scores.
const (
	// SlotScoreAll (or "") gives Intent to a right intent, else 0.
	SlotScoreAll SlotScore = "all"
	// SlotScoreF1 gives Intent times the slot F1, a dense reward.
	SlotScoreF1 SlotScore = "f1"
)

// RewardConfig holds the stage reward values and thresholds; DefaultRewardConfig
// returns the paper's.
type RewardConfig struct {
	// Format is R_format, given to an answer that parses.
	Format float64
	// GUIBoth, GUITypeOnly, GUIValueOnly and GUINeither are R_gui when the type and
	// the value are right, only the type, only the value, or neither.
	GUIBoth, GUITypeOnly, GUIValueOnly, GUINeither float64
	// TextF1 is the token-set F1 at or above which a text or scroll value is right.
	TextF1 float64
	// Intent is Intent_acc when the intent is right; 0 otherwise.
	Intent float64
	// Tau is the cosine similarity at or above which a predicted intent is right.
	Tau float64
	// Match is how intents are judged: auto ("" too), slots or embedding.
	Match IntentMatch
	// SlotScore is the reward of a slot-judged intent: all ("" too) or f1.
	SlotScore SlotScore
	// DecisionRight and DecisionWrong are R_dec.
	DecisionRight, DecisionWrong float64
}

// DefaultRewardConfig returns the paper's reward values: R_format 0.5; R_gui +0.5,
// +0.2, -0.2, -0.5; text F1 threshold 0.5; Intent_acc 0.5 with tau 0.75 (open in
// the paper), judged by slots where the episode carries preferences (not in the
// paper) with the all-or-nothing score; R_dec +0.5 and -0.5.
func DefaultRewardConfig() RewardConfig {
	return RewardConfig{
		Format:  0.5,
		GUIBoth: 0.5, GUITypeOnly: 0.2, GUIValueOnly: -0.2, GUINeither: -0.5,
		TextF1:        0.5,
		Intent:        0.5,
		Tau:           0.75,
		Match:         IntentMatchAuto,
		SlotScore:     SlotScoreAll,
		DecisionRight: 0.5, DecisionWrong: -0.5,
	}
}

// Validate reports whether every value is finite and the thresholds lie in their
// ranges: TextF1 in [0,1], Tau in [-1,1], and Match and SlotScore are known.
func (c RewardConfig) Validate() error {
	for _, v := range [...]float64{c.Format, c.GUIBoth, c.GUITypeOnly, c.GUIValueOnly, c.GUINeither,
		c.TextF1, c.Intent, c.Tau, c.DecisionRight, c.DecisionWrong} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("espo: reward values must be finite")
		}
	}
	if c.TextF1 < 0 || c.TextF1 > 1 {
		return fmt.Errorf("espo: text F1 threshold %v not in [0,1]", c.TextF1)
	}
	if c.Tau < -1 || c.Tau > 1 {
		return fmt.Errorf("espo: intent threshold tau %v not in [-1,1]", c.Tau)
	}
	switch c.Match {
	case "", IntentMatchAuto, IntentMatchSlots, IntentMatchEmbedding:
	default:
		return fmt.Errorf("espo: unknown intent match %q, want auto, slots or embedding", c.Match)
	}
	switch c.SlotScore {
	case "", SlotScoreAll, SlotScoreF1:
	default:
		return fmt.Errorf("espo: unknown slot score %q, want all or f1", c.SlotScore)
	}
	return nil
}

// IntentJudge returns how the intent of step gt is judged: IntentMatchSlots or
// IntentMatchEmbedding on an item-pool step, by c.Match and whether gt carries
// preferences; "" on other steps.
func (c RewardConfig) IntentJudge(gt *GroundTruth) IntentMatch {
	if gt.Stage != StagePool {
		return ""
	}
	switch c.Match {
	case IntentMatchSlots:
		return IntentMatchSlots
	case IntentMatchEmbedding:
		return IntentMatchEmbedding
	}
	if len(gt.Preferences) > 0 {
		return IntentMatchSlots
	}
	return IntentMatchEmbedding
}

// Score is the reward of one candidate answer at one step.
type Score struct {
	// Format is R_format: RewardConfig.Format if the answer parsed, else 0.
	Format float64
	// Stage is the stage reward: R_gui, Intent_acc or R_dec by the step's stage.
	Stage float64
	// TypeOK and ValueOK say whether the action type and its value were right.
	TypeOK, ValueOK bool
	// Judged is how the intent was judged on the pool stage, IntentMatchSlots or
	// IntentMatchEmbedding (RewardConfig.IntentJudge); "" on other stages.
	Judged IntentMatch
	// Similarity is the cosine of the predicted and the true intent, when judged by
	// embedding.
	Similarity float64
	// Slots is the slot match of the predicted intent, when judged by slots.
	Slots SlotMatch
	// Err is the parse error of a malformed answer, nil otherwise.
	Err error
}

// Step returns the step reward R_step = R_format + stage reward.
func (s Score) Step() float64 { return s.Format + s.Stage }

// Rewarder scores candidate answers. It holds scratch space and a cache of the last
// intent's embedding, so one Rewarder must not be used by two goroutines at once;
// scoring allocates nothing in steady state.
type Rewarder struct {
	cfg         RewardConfig
	emb         Embedder
	slots       *SlotMatcher
	pred, truth []float64
	intent      string
	haveIntent  bool
}

// NewRewarder returns a Rewarder with the reward values of cfg and the given
// Embedder, or a HashEmbedder of DefaultEmbeddingDim when emb is nil. It returns an
// error when cfg is not valid.
func NewRewarder(cfg RewardConfig, emb Embedder) (*Rewarder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if emb == nil {
		emb = NewHashEmbedder(DefaultEmbeddingDim)
	}
	return &Rewarder{cfg: cfg, emb: emb, pred: make([]float64, emb.Dim()), truth: make([]float64, emb.Dim())}, nil
}

// SetSlotVocab gives the Rewarder the values of every slot, which slot-judged
// intents are searched for; it must hold every true preference value (one it lacks
// is never found). Without it no value is ever found, so no slot-judged intent is
// right.
func (r *Rewarder) SetSlotVocab(v SlotVocab) { r.slots = NewSlotMatcher(v) }

// Score parses answer and scores it against gt with ScoreAction. A malformed answer
// gets R_format = 0, is wrong in type and value, and carries the parse error.
func (r *Rewarder) Score(gt *GroundTruth, answer string) Score {
	a, err := ParseAnswer(answer)
	if err != nil {
		s := r.judge(gt, false, false)
		s.Judged = r.cfg.IntentJudge(gt)
		s.Err = err
		return s
	}
	s := r.ScoreAction(gt, a)
	return s
}

// ScoreAction scores a parsed action against gt:
//
//	R_format   = Format
//	gui        R_gui = GUIBoth | GUITypeOnly | GUIValueOnly | GUINeither
//	           type right: a.Type == gt.Action.Type
//	           value right, by the true action: for click and long_press, the point
//	           (NormalisePoint with gt.Screen) lies in gt.Box; for an action with a
//	           text (not "" nor NoText), TokenF1(a.Text, gt.Action.Text) >= TextF1
//	           (within f1Tolerance, so an F1 of exactly TextF1 passes despite rounding);
//	           for an action with neither (exit, complete), the value is right when
//	           the type is
//	pool       judged as RewardConfig.IntentJudge says:
//	           by embedding: Intent_acc = Intent if a.Type == "pool_found" and
//	             cos(embed(a.Text), embed(gt.Intent)) >= Tau, else 0
//	           by slots (m = SlotMatcher.Match(a.Text, gt.Preferences)):
//	             SlotScore all: Intent_acc = Intent if a.Type == "pool_found" and
//	             m.Right, else 0; f1: Intent * m.F1 if a.Type == "pool_found", else 0
//	recommend  R_dec = DecisionRight if a.Type == "recommendation" and
//	           a.Text == gt.Action.Text ("Yes" or "No", exact), else DecisionWrong
//
// Types and values compare exactly, after ParseAnswer trimmed white space. A
// GroundTruth with an unknown stage scores 0.
func (r *Rewarder) ScoreAction(gt *GroundTruth, a Action) Score {
	var typeOK, valueOK bool
	var sim float64
	switch gt.Stage {
	case StageGUI:
		typeOK = a.Type == gt.Action.Type
		switch {
		case isPointing(gt.Action.Type):
			q, ok := NormalisePoint(a.Point, gt.Screen)
			valueOK = ok && PointInBox(q, gt.Box)
		case hasText(gt.Action.Text):
			valueOK = TokenF1(a.Text, gt.Action.Text) >= r.cfg.TextF1-f1Tolerance
		default:
			valueOK = typeOK
		}
	case StagePool:
		return r.scoreIntent(gt, a)
	case StageRecommend:
		typeOK = a.Type == ActionRecommendation
		valueOK = a.Text == gt.Action.Text
	}
	s := r.judge(gt, typeOK, valueOK)
	s.Format = r.cfg.Format
	s.Similarity = sim
	return s
}

// scoreIntent scores a parsed action on an item-pool step (see ScoreAction).
func (r *Rewarder) scoreIntent(gt *GroundTruth, a Action) Score {
	typeOK := a.Type == ActionPoolFound
	judged := r.cfg.IntentJudge(gt)
	if judged == IntentMatchEmbedding {
		sim := r.similarity(a.Text, gt.Intent)
		s := r.judge(gt, typeOK, sim >= r.cfg.Tau)
		s.Format, s.Judged, s.Similarity = r.cfg.Format, judged, sim
		return s
	}
	if r.slots == nil {
		r.slots = NewSlotMatcher(nil)
	}
	m := r.slots.Match(a.Text, gt.Preferences)
	s := r.judge(gt, typeOK, m.Right)
	s.Format, s.Judged, s.Slots = r.cfg.Format, judged, m
	if typeOK && r.cfg.SlotScore == SlotScoreF1 {
		s.Stage = r.cfg.Intent * m.F1
	}
	return s
}

// judge returns the Score, without R_format, of an answer whose type and value are
// right or not.
func (r *Rewarder) judge(gt *GroundTruth, typeOK, valueOK bool) Score {
	c := &r.cfg
	s := Score{TypeOK: typeOK, ValueOK: valueOK}
	switch gt.Stage {
	case StageGUI:
		switch {
		case typeOK && valueOK:
			s.Stage = c.GUIBoth
		case typeOK:
			s.Stage = c.GUITypeOnly
		case valueOK:
			s.Stage = c.GUIValueOnly
		default:
			s.Stage = c.GUINeither
		}
	case StagePool:
		if typeOK && valueOK {
			s.Stage = c.Intent
		}
	case StageRecommend:
		s.Stage = c.DecisionWrong
		if typeOK && valueOK {
			s.Stage = c.DecisionRight
		}
	}
	return s
}

// similarity returns the cosine of the embeddings of pred and intent, caching the
// embedding of the last intent.
func (r *Rewarder) similarity(pred, intent string) float64 {
	if !r.haveIntent || r.intent != intent {
		r.emb.Embed(r.truth, intent)
		r.intent, r.haveIntent = intent, true
	}
	r.emb.Embed(r.pred, pred)
	return Cosine(r.pred, r.truth)
}

// f1Tolerance absorbs the rounding of TokenF1: 7 tokens shared of 8 predicted and
// 20 true is an F1 of exactly 0.5, computed as 0.4999999999999999.
const f1Tolerance = 1e-9

func isPointing(typ string) bool { return typ == ActionClick || typ == "long_press" }

func hasText(text string) bool { return text != "" && text != NoText }
