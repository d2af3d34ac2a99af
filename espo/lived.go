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
	"slices"
)

// Rollout holds the rewards of one episode lived through an environment: one
// answer per step, sampled by the policy from the observation the rollout's own
// earlier answers led to. The G rollouts of a group start from one episode seed,
// so their first observations are identical, and they part where their answers
// part.
type Rollout struct {
	// Stages holds the stage of each step.
	Stages []Stage
	// Step holds R_step of each step's answer (Score.Step).
	Step []float64
	// Stage holds the stage reward of each step's answer (Score.Stage).
	Stage []float64
	// States holds a key per step: steps (of any rollout of the group) with equal
	// keys were shown the same observation (the trainer keys a step by its screen,
	// stage and candidate, not by the history that led there).
	States []uint64
}

func (r *Rollout) checkLen() {
	if n := len(r.Stages); len(r.Step) != n || len(r.Stage) != n || len(r.States) != n {
		panic("espo: rollout reward length mismatch")
	}
}

// LivedAdvantages writes the ESPO advantage of every step of G rollouts lived
// through an environment, step t of rollout g to dst[g][t]:
//
//	A(g, t)   = A_step(g, t) + w * A_COUT(g)
//	A_step    = (R_step(g, t) - mean_S R_step) / (std_S R_step + eps)
//	            over S, the steps of the group with the state of (g, t), when
//	            |S| >= 2; 0 when the state is the step's alone or S's rewards
//	            are all equal
//	A_COUT(g) = R_COUT(g)                                         episode mode
//	A_COUT(g) = (R_COUT(g) - mean R_COUT(.)) / (std R_COUT(.) + eps)  rollout mode
//
// where R_COUT(g) is the COUT reward of rollout g alone (EpisodeCOUT of its own
// stage rewards: phi from its GUI steps, psi from its decisions, Intent from its
// item-pool step) and std is the unbiased (n-1) standard deviation.
//
// The step baseline is GiGPO's anchor-state grouping: for the answer a of a
// step, the other members of S belong to rollouts sampled independently of a, so
// a baseline b formed from their rewards does not depend on a and
// E[(R(a) - b) grad log pi(a|h)] = E[R(a) grad log pi(a|h)]; the group mean
// (which holds a's own reward) scales that by (|S|-1)/|S| and the std by another
// positive factor, as in GRPO. (Two visits of one rollout to the same observation
// share a group, and there the later reward may depend on the earlier answer, as
// in GiGPO.) A step of a state no other step reached has no baseline
// and gets no step advantage: it is credited through A_COUT only. Rollouts
// differ in their answers, so R_COUT(g) differs between them and, unlike
// teacher-forced episode mode, carries credit in both modes: a GUI step is
// credited for the intent and the decisions it led to. Episode mode adds
// each rollout's raw R_COUT (the paper's A_episode); rollout mode normalises
// it over the group.
//
// It returns the mean COUT over the rollouts, ErrGroupSize for fewer than 2
// rollouts and an error for an unknown mode or gates. It panics if the lengths
// of dst and rollouts disagree.
func LivedAdvantages(dst [][]float64, rollouts []Rollout, cfg AdvantageConfig) (COUT, error) {
	checkDst(dst, rollouts)
	a := make([]float64, len(rollouts))
	c, err := LivedCOUTAdvantages(a, rollouts, cfg)
	if err != nil {
		return COUT{}, err
	}
	anchorStepAdvantages(dst, rollouts, cfg.Eps)
	for g := range dst {
		if v := cfg.W * a[g]; v != 0 {
			for t := range dst[g] {
				dst[g][t] += v
			}
		}
	}
	return c, nil
}

// LivedCOUTAdvantages writes A_COUT(g) of LivedAdvantages to dst[g], one value per
// rollout, and returns the mean COUT over the rollouts; ErrGroupSize for fewer
// than 2 rollouts, an error for an unknown mode or gates. It panics if len(dst) is
// not the number of rollouts or a rollout's lengths disagree.
func LivedCOUTAdvantages(dst []float64, rollouts []Rollout, cfg AdvantageConfig) (COUT, error) {
	if len(dst) != len(rollouts) {
		panic("espo: COUT advantage length mismatch")
	}
	if err := checkModeGates(&cfg); err != nil {
		return COUT{}, err
	}
	if len(rollouts) < 2 {
		return COUT{}, ErrGroupSize
	}
	for g := range rollouts {
		rollouts[g].checkLen()
	}
	return livedCOUT(dst, rollouts, &cfg), nil
}

// livedCOUT writes each rollout's A_COUT to dst and returns the mean COUT.
func livedCOUT(dst []float64, rollouts []Rollout, cfg *AdvantageConfig) COUT {
	r := make([]float64, len(rollouts))
	var sum COUT
	for g := range rollouts {
		ro := &rollouts[g]
		c := cout(&EpisodeRewards{G: 1, Stages: ro.Stages, Step: ro.Step, Stage: ro.Stage}, cfg, -1)
		r[g] = c.Reward
		sum.Phi, sum.Psi, sum.Intent, sum.Reward = sum.Phi+c.Phi, sum.Psi+c.Psi, sum.Intent+c.Intent, sum.Reward+c.Reward
	}
	if cfg.Mode == COUTRollout {
		normalise(dst, r, cfg.Eps)
	} else {
		copy(dst, r)
	}
	n := float64(len(rollouts))
	return COUT{Phi: sum.Phi / n, Psi: sum.Psi / n, Intent: sum.Intent / n, Reward: sum.Reward / n}
}

// AnchorStepAdvantages writes A_step of LivedAdvantages to dst[g][t]: each
// step's R_step normalised over the steps of the group that share its state, 0
// for a state reached once. It returns ErrGroupSize for fewer than 2 rollouts and
// panics if the lengths of dst and rollouts disagree.
func AnchorStepAdvantages(dst [][]float64, rollouts []Rollout, eps float64) error {
	checkDst(dst, rollouts)
	if len(rollouts) < 2 {
		return ErrGroupSize
	}
	if !(eps > 0) || !finite(eps) {
		return errors.New("espo: eps must be positive and finite")
	}
	anchorStepAdvantages(dst, rollouts, eps)
	return nil
}

// checkDst panics unless dst holds a slice per rollout as long as the rollout and
// every rollout's lengths agree.
func checkDst(dst [][]float64, rollouts []Rollout) {
	if len(dst) != len(rollouts) {
		panic("espo: advantage length mismatch")
	}
	for g := range rollouts {
		rollouts[g].checkLen()
		if len(dst[g]) != len(rollouts[g].Stages) {
			panic("espo: advantage length mismatch")
		}
	}
}

// anchorStepAdvantages groups the steps by state, in the order states first
// appear (rollout by rollout, step by step), and normalises each group.
func anchorStepAdvantages(dst [][]float64, rollouts []Rollout, eps float64) {
	type at struct{ g, t int }
	index := map[uint64]int{}
	var groups [][]at
	for g := range rollouts {
		for t, s := range rollouts[g].States {
			k, ok := index[s]
			if !ok {
				k = len(groups)
				index[s] = k
				groups = append(groups, nil)
			}
			groups[k] = append(groups[k], at{g, t})
		}
	}
	var r, a []float64
	for _, members := range groups {
		if len(members) < 2 {
			dst[members[0].g][members[0].t] = 0
			continue
		}
		r, a = slices.Grow(r[:0], len(members))[:len(members)], slices.Grow(a[:0], len(members))[:len(members)]
		for i, m := range members {
			r[i] = rollouts[m.g].Step[m.t]
		}
		normalise(a, r, eps)
		for i, m := range members {
			dst[m.g][m.t] = a[i]
		}
	}
}

// OutcomeAdvantages writes the outcome-only advantage of every step of G rollouts,
// the same for every step of a rollout:
//
//	R_out(g)  = sum of Stage(g, t) over the item-pool and recommend steps of g
//	A(g, t)   = (R_out(g) - mean R_out(.)) / (std R_out(.) + eps)
//
// what the episode stated and decided, judged once at its end and credited to
// every step alike (0 for every step when the outcomes are all equal). A rollout
// that never reached the pool has R_out = 0. It returns ErrGroupSize for fewer
// than 2 rollouts and panics if the lengths of dst and rollouts disagree.
func OutcomeAdvantages(dst [][]float64, rollouts []Rollout, eps float64) error {
	checkDst(dst, rollouts)
	if len(rollouts) < 2 {
		return ErrGroupSize
	}
	r := make([]float64, len(rollouts))
	for g := range rollouts {
		ro := &rollouts[g]
		for t, st := range ro.Stages {
			if st == StagePool || st == StageRecommend {
				r[g] += ro.Stage[t]
			}
		}
	}
	a := make([]float64, len(r))
	normalise(a, r, eps)
	for g := range dst {
		for t := range dst[g] {
			dst[g][t] = a[g]
		}
	}
	return nil
}

// GiGPOAdvantages writes GiGPO's advantage of every step of G rollouts: the
// outcome advantage plus the anchor-state step advantage, with no COUT term,
//
//	A(g, t) = A_out(g) + A_step(g, t)
//
// with A_out of OutcomeAdvantages and A_step of AnchorStepAdvantages. It returns
// ErrGroupSize for fewer than 2 rollouts and panics if the lengths of dst and
// rollouts disagree.
func GiGPOAdvantages(dst [][]float64, rollouts []Rollout, eps float64) error {
	step := make([][]float64, len(dst))
	for g := range dst {
		step[g] = make([]float64, len(dst[g]))
	}
	if err := AnchorStepAdvantages(step, rollouts, eps); err != nil {
		return err
	}
	if err := OutcomeAdvantages(dst, rollouts, eps); err != nil {
		return err
	}
	for g := range dst {
		for t := range dst[g] {
			dst[g][t] += step[g][t]
		}
	}
	return nil
}
