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

// COUTMode says how one episode-level COUT value is formed from G candidates per
// step (open in the paper).
type COUTMode string

const (
	// COUTEpisode averages each step's stage rewards over its G candidates, applies
	// the COUT formulas once per episode and adds R_COUT to every advantage of the
	// episode. It is the default.
	COUTEpisode COUTMode = "episode"
	// COUTRollout takes candidate g of every step as rollout g, computes R_COUT per
	// rollout, normalises the G values like a GRPO group and adds rollout g's value to
	// the advantages of candidate g at every step (after GiGPO's episode advantage).
	COUTRollout COUTMode = "rollout"
)

// Gates selects the terms of R_COUT, for the ablations.
type Gates string

const (
	// GatesBoth is R_COUT = phi * Intent_acc + psi * Intent_acc, the full method.
	GatesBoth Gates = "both"
	// GatesGUI keeps only the GUI-action term phi * Intent_acc.
	GatesGUI Gates = "gui"
	// GatesDecision keeps only the decision term psi * Intent_acc.
	GatesDecision Gates = "decision"
)

// AdvantageConfig holds the parameters of the COUT reward and of advantage fusion;
// DefaultAdvantageConfig returns the paper's. The ablation "w = 0" is W = 0.
type AdvantageConfig struct {
	// Mode is how R_COUT is formed from G candidates per step.
	Mode COUTMode
	// Gates selects the terms of R_COUT.
	Gates Gates
	// K is the temperature k of the gates.
	K float64
	// GUIMax and DecisionMax are the largest R_gui and R_dec of one step: the
	// normalisers are R_gui_max = GUIMax * (number of GUI steps) and
	// R_dec_max = DecisionMax * (number of decision steps).
	GUIMax, DecisionMax float64
	// EmptyGate is the value of a gate over no steps, phi of an episode without GUI
	// steps or psi of one without decision steps. The default, 0.5 = sigmoid(0),
	// takes the empty sum as 0: no evidence either way. 0 drops the term.
	EmptyGate float64
	// W is the weight w of A_COUT in A_episode.
	W float64
	// Eps is the epsilon of the group normalisation.
	Eps float64
}

// DefaultAdvantageConfig returns the paper's values and this project's defaults for
// its open choices (docs/algorithm.md): mode episode, both gates, k = 1,
// R_gui_max = 0.5 per GUI step, R_dec_max = 0.5 per decision step, an empty gate of
// sigmoid(0) = 0.5, w = 1 and eps = 1e-6. It is AdvantageConfigFor(DefaultRewardConfig()).
func DefaultAdvantageConfig() AdvantageConfig {
	return AdvantageConfigFor(DefaultRewardConfig())
}

// AdvantageConfigFor returns the defaults of DefaultAdvantageConfig with the gates'
// normalisers taken from the stage rewards r gives:
//
//	GUIMax = r.GUIBoth, DecisionMax = r.DecisionRight
//
// the rewards of a right GUI action and of a right decision, so that the normalised
// sums of the gates lie in [-1, 1] whenever no reward of a step exceeds the right
// one in size.
func AdvantageConfigFor(r RewardConfig) AdvantageConfig {
	return AdvantageConfig{
		Mode:        COUTEpisode,
		Gates:       GatesBoth,
		K:           1,
		GUIMax:      r.GUIBoth,
		DecisionMax: r.DecisionRight,
		EmptyGate:   0.5,
		W:           1,
		Eps:         1e-6,
	}
}

// Validate reports whether c is usable: a known mode and gates, finite K and W,
// positive GUIMax and DecisionMax, EmptyGate in [0,1] and Eps > 0.
func (c AdvantageConfig) Validate() error {
	if c.Mode != COUTEpisode && c.Mode != COUTRollout {
		return fmt.Errorf("espo: unknown COUT mode %q, want episode or rollout", c.Mode)
	}
	if c.Gates != GatesBoth && c.Gates != GatesGUI && c.Gates != GatesDecision {
		return fmt.Errorf("espo: unknown COUT gates %q, want both, gui or decision", c.Gates)
	}
	switch {
	case !finite(c.K) || !finite(c.W):
		return errors.New("espo: k and w must be finite")
	case !(c.GUIMax > 0) || !(c.DecisionMax > 0) || !finite(c.GUIMax) || !finite(c.DecisionMax):
		return errors.New("espo: R_gui_max and R_dec_max per step must be positive and finite")
	case !(c.EmptyGate >= 0 && c.EmptyGate <= 1):
		return errors.New("espo: the empty gate must lie in [0,1]")
	case !(c.Eps > 0) || !finite(c.Eps):
		return errors.New("espo: eps must be positive and finite")
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// ErrGroupSize is returned for groups of fewer than 2 candidates, whose standard
// deviation is not defined.
var ErrGroupSize = errors.New("espo: a group needs at least 2 candidates (G >= 2)")

// EpisodeRewards holds the rewards of one episode of S steps with G candidates
// each, candidate g of step j at index j*G + g.
type EpisodeRewards struct {
	// G is the number of candidates per step.
	G int
	// Stages holds the stage of each step; its length is S.
	Stages []Stage
	// Step holds R_step, the step reward of each candidate (Score.Step).
	Step []float64
	// Stage holds the stage reward of each candidate (Score.Stage): R_gui,
	// Intent_acc or R_dec by the stage of its step.
	Stage []float64
}

// checkLen panics unless Step and Stage hold S*G values.
func (ep *EpisodeRewards) checkLen() {
	n := len(ep.Stages) * ep.G
	if ep.G < 0 || len(ep.Step) != n || len(ep.Stage) != n {
		panic("espo: episode reward length mismatch")
	}
}

// COUT is the Chain-of-User-Thought reward of an episode and its parts. In rollout
// mode Advantages reports the mean of each over the G rollouts.
type COUT struct {
	Phi, Psi, Intent, Reward float64
}

// EpisodeCOUT returns the COUT reward of an episode in episode mode:
//
//	r(j)      = mean_g Stage(j, g)
//	phi       = sigmoid(k * sum_{j gui} r(j) / (GUIMax * #gui))        EmptyGate if #gui = 0
//	psi       = sigmoid(k * sum_{j rec} r(j) / (DecisionMax * #rec))   EmptyGate if #rec = 0
//	Intent    = mean_{j pool} r(j)                                     0 if #pool = 0
//	R_COUT    = phi * Intent + psi * Intent
//
// with sigmoid(x) = 1 / (1 + e^-x), and only the phi or the psi term for Gates gui
// or decision. An episode without an item-pool step has R_COUT = 0. It panics if the
// lengths of ep disagree.
func EpisodeCOUT(ep EpisodeRewards, cfg AdvantageConfig) COUT {
	ep.checkLen()
	return cout(&ep, &cfg, -1)
}

// RolloutCOUT returns the COUT reward of rollout g, the EpisodeCOUT formulas with
// r(j) = Stage(j, g). It panics if g is out of range or the lengths of ep disagree.
func RolloutCOUT(ep EpisodeRewards, g int, cfg AdvantageConfig) COUT {
	ep.checkLen()
	if g < 0 || g >= ep.G {
		panic("espo: rollout index out of range")
	}
	return cout(&ep, &cfg, g)
}

// cout computes the COUT reward from each step's mean stage reward (g < 0) or from
// candidate g's.
func cout(ep *EpisodeRewards, cfg *AdvantageConfig, g int) COUT {
	var gui, dec, intent float64
	var nGUI, nDec, nPool int
	G := ep.G
	for j, st := range ep.Stages {
		var r float64
		if g >= 0 {
			r = ep.Stage[j*G+g]
		} else {
			r = mean(ep.Stage[j*G : j*G+G])
		}
		switch st {
		case StageGUI:
			gui += r
			nGUI++
		case StagePool:
			intent += r
			nPool++
		case StageRecommend:
			dec += r
			nDec++
		}
	}
	c := COUT{
		Phi: gate(gui, nGUI, cfg.GUIMax, cfg),
		Psi: gate(dec, nDec, cfg.DecisionMax, cfg),
	}
	if nPool == 0 {
		return c
	}
	c.Intent = intent / float64(nPool)
	switch cfg.Gates {
	case GatesGUI:
		c.Reward = c.Phi * c.Intent
	case GatesDecision:
		c.Reward = c.Psi * c.Intent
	default:
		c.Reward = c.Phi*c.Intent + c.Psi*c.Intent
	}
	return c
}

// gate returns sigmoid(k * sum / (perStep * n)), or the empty gate when n = 0.
func gate(sum float64, n int, perStep float64, cfg *AdvantageConfig) float64 {
	if n == 0 {
		return cfg.EmptyGate
	}
	return 1 / (1 + math.Exp(-cfg.K*sum/(perStep*float64(n))))
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// StepAdvantages writes the group-normalised advantage of every candidate to dst,
// the GRPO advantage of verl and EasyR1: for each group of G consecutive rewards
//
//	A_step(j, g) = (R(j, g) - mean_g R(j, .)) / (std_g R(j, .) + eps)
//
// with the unbiased (n-1) standard deviation, and A_step = 0 for a group whose
// rewards are all equal. It returns ErrGroupSize if G < 2, and panics if len(dst)
// != len(rewards) or len(rewards) is not a multiple of G. It allocates nothing.
func StepAdvantages(dst, rewards []float64, G int, eps float64) error {
	if len(dst) != len(rewards) {
		panic("espo: advantage length mismatch")
	}
	if G < 2 {
		return ErrGroupSize
	}
	if len(rewards)%G != 0 {
		panic("espo: rewards are not a whole number of groups")
	}
	for i := 0; i < len(rewards); i += G {
		normalise(dst[i:i+G], rewards[i:i+G], eps)
	}
	return nil
}

// normalise writes (r - mean) / (std + eps) to dst, or zeros if all r are equal.
func normalise(dst, r []float64, eps float64) {
	var sum float64
	same := true
	r0 := r[0]
	for _, v := range r {
		sum += v
		same = same && v == r0
	}
	if same {
		clear(dst)
		return
	}
	m := sum / float64(len(r))
	var ss float64
	for _, v := range r {
		d := v - m
		ss += d * d
	}
	inv := 1 / (math.Sqrt(ss/float64(len(r)-1)) + eps)
	for i, v := range r {
		dst[i] = (v - m) * inv
	}
}

// maxStackG is the largest G for which rollout mode allocates nothing.
const maxStackG = 64

// Advantages writes the fused ESPO advantage of every candidate of the episode to
// dst, candidate g of step j at index j*G + g:
//
//	A_episode(j, g) = A_step(j, g) + w * A_COUT(g)
//
// with A_step from StepAdvantages over each step's R_step and A_COUT from
// COUTAdvantages. It returns the episode's COUT (in rollout mode, the means over the
// rollouts) and ErrGroupSize if G < 2 or an error if cfg has an unknown mode or
// gates. It panics if the lengths of dst and ep disagree. It allocates nothing (for
// G <= 64).
func Advantages(dst []float64, ep EpisodeRewards, cfg AdvantageConfig) (COUT, error) {
	ep.checkLen()
	if len(dst) != len(ep.Step) {
		panic("espo: advantage length mismatch")
	}
	if err := checkModeGates(&cfg); err != nil {
		return COUT{}, err
	}
	if err := StepAdvantages(dst, ep.Step, ep.G, cfg.Eps); err != nil {
		return COUT{}, err
	}
	var buf [maxStackG]float64
	a := buf[:]
	if ep.G > maxStackG {
		a = make([]float64, ep.G)
	}
	a = a[:ep.G]
	c, err := COUTAdvantages(a, ep, cfg)
	if err != nil {
		return COUT{}, err
	}
	FuseAdvantages(dst, a, cfg.W)
	return c, nil
}

// checkModeGates returns cfg.Validate's error when the mode or the gates are unknown.
func checkModeGates(cfg *AdvantageConfig) error {
	if cfg.Mode != COUTEpisode && cfg.Mode != COUTRollout ||
		cfg.Gates != GatesBoth && cfg.Gates != GatesGUI && cfg.Gates != GatesDecision {
		return cfg.Validate()
	}
	return nil
}

// COUTAdvantages writes A_COUT(g), the COUT advantage of rollout g, to dst[g]:
//
//	episode mode   A_COUT(g) = R_COUT of EpisodeCOUT, the same for every g
//	rollout mode   A_COUT(g) = (R_COUT(g) - mean R_COUT(.)) / (std R_COUT(.) + eps)
//
// over the G rollouts of RolloutCOUT, 0 if they are all equal. It returns the
// episode's COUT (in rollout mode, the means over the rollouts), ErrGroupSize if
// G < 2 and an error if cfg has an unknown mode or gates. It panics if len(dst) != G
// or the lengths of ep disagree. It allocates nothing (for G <= 64).
//
// Only rollout mode can carry credit. Under teacher forcing the G candidates of a
// step are drawn from pi(.|prompt) and, for any constant c,
//
//	E[ sum_g c * grad log pi(y_g) ] = c * G * E_y~pi[ grad log pi(y) ] = c * G * grad sum_y pi(y) = 0
//
// so an advantage added equally to every candidate, as episode mode's R_COUT is,
// has zero expected policy gradient: it only sharpens whatever was sampled, and
// through per-token normalisation favours short or long answers by its sign. It
// cannot tell a better candidate from a worse one. In rollout mode A_COUT(g)
// differs between candidates: rollout g is credited for its own GUI actions,
// intent and decisions.
func COUTAdvantages(dst []float64, ep EpisodeRewards, cfg AdvantageConfig) (COUT, error) {
	ep.checkLen()
	if len(dst) != ep.G {
		panic("espo: COUT advantage length mismatch")
	}
	if err := checkModeGates(&cfg); err != nil {
		return COUT{}, err
	}
	if ep.G < 2 {
		return COUT{}, ErrGroupSize
	}
	if cfg.Mode == COUTEpisode {
		c := cout(&ep, &cfg, -1)
		for g := range dst {
			dst[g] = c.Reward
		}
		return c, nil
	}
	var rbuf [maxStackG]float64
	r := rbuf[:]
	if ep.G > maxStackG {
		r = make([]float64, ep.G)
	}
	r = r[:ep.G]
	var sum COUT
	for g := range r {
		c := cout(&ep, &cfg, g)
		r[g] = c.Reward
		sum.Phi += c.Phi
		sum.Psi += c.Psi
		sum.Intent += c.Intent
		sum.Reward += c.Reward
	}
	normalise(dst, r, cfg.Eps)
	n := float64(ep.G)
	return COUT{Phi: sum.Phi / n, Psi: sum.Psi / n, Intent: sum.Intent / n, Reward: sum.Reward / n}, nil
}

// FuseAdvantages adds w * cout[g] to the advantage of candidate g of every step:
//
//	dst[j*G + g] += w * cout[g],   G = len(cout)
//
// It panics if len(dst) is not a multiple of len(cout). It allocates nothing.
func FuseAdvantages(dst, cout []float64, w float64) {
	G := len(cout)
	if G == 0 || len(dst)%G != 0 {
		panic("espo: advantages are not a whole number of groups")
	}
	for i := 0; i < len(dst); i += G {
		row := dst[i : i+G]
		for g, v := range cout {
			if a := w * v; a != 0 {
				row[g] += a
			}
		}
	}
}
