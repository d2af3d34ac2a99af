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
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"
)

// Hand-computed constants. A group of four with rewards {1, 1, 0, 0} has mean 0.5,
// sum of squared deviations 4 * 0.25 = 1, unbiased variance 1/3, std 1/sqrt(3), so
// A = +-0.5 * sqrt(3) = +-sqrt(3)/2 (less a relative 1e-6 * sqrt(3) for eps). The
// group {1, 1, 1, 0} has mean 0.75, squared deviations 3 * 0.0625 + 0.5625 = 0.75,
// variance 0.25, std 0.5: A = {0.5, 0.5, 0.5, -1.5}.
const (
	h     = 0.8660254037844386 // sqrt(3)/2
	sig02 = 0.5498339973124778 // sigmoid(0.2)  = 1 / (1 + e^-0.2)
	sig03 = 0.4255574831883410 // sigmoid(-0.3)
	sig07 = 0.6681877721681662 // sigmoid(0.7)
	sig75 = 0.6791786991753930 // sigmoid(0.75)
	sig1  = 0.7310585786300049 // sigmoid(1)
	tol   = 1e-5               // covers eps = 1e-6 in the denominators
)

// goldenEpisode is an episode of G = 4 candidates whose stage rewards are:
//
//	j0 gui        both, both, neither, neither  R_gui  .5  .5 -.5 -.5  mean 0
//	j1 gui        type only x4                  R_gui  .2  .2  .2  .2  mean .2
//	j2 pool       hit, hit, malformed x2        Intent .5  .5   0   0  mean .25
//	j3 recommend  right x3, wrong               R_dec  .5  .5  .5 -.5  mean .25
//	j4 recommend  right x4                      R_dec  .5  .5  .5  .5  mean .5
//
// R_format is 0.5 except for the two malformed answers (0). Steps are listed by
// index; drop removes some.
func goldenEpisode(drop ...int) EpisodeRewards {
	stages := []Stage{StageGUI, StageGUI, StagePool, StageRecommend, StageRecommend}
	stage := [][]float64{{.5, .5, -.5, -.5}, {.2, .2, .2, .2}, {.5, .5, 0, 0}, {.5, .5, .5, -.5}, {.5, .5, .5, .5}}
	format := [][]float64{{.5, .5, .5, .5}, {.5, .5, .5, .5}, {.5, .5, 0, 0}, {.5, .5, .5, .5}, {.5, .5, .5, .5}}
	ep := EpisodeRewards{G: 4}
	for j := range stages {
		if slices.Contains(drop, j) {
			continue
		}
		ep.Stages = append(ep.Stages, stages[j])
		for g := range 4 {
			ep.Stage = append(ep.Stage, stage[j][g])
			ep.Step = append(ep.Step, format[j][g]+stage[j][g])
		}
	}
	return ep
}

// goldenAStep is A_step of each step of goldenEpisode, from R_step = format + stage:
//
//	j0 {1, 1, 0, 0}           +-sqrt(3)/2
//	j1 {.7, .7, .7, .7}       0 (zero variance)
//	j2 {1, 1, 0, 0}           +-sqrt(3)/2
//	j3 {1, 1, 1, 0}           .5 .5 .5 -1.5
//	j4 {1, 1, 1, 1}           0
var goldenAStep = [][]float64{{h, h, -h, -h}, {0, 0, 0, 0}, {h, h, -h, -h}, {.5, .5, .5, -1.5}, {0, 0, 0, 0}}

func TestAdvantagesGolden(t *testing.T) {
	def := DefaultAdvantageConfig()
	with := func(f func(*AdvantageConfig)) AdvantageConfig { c := def; f(&c); return c }
	for _, tc := range []struct {
		name string
		drop []int
		cfg  AdvantageConfig
		cout COUT
		// aCOUT is w * A_COUT per candidate g.
		aCOUT [4]float64
	}{{
		// GUI: sum of means 0 + .2 = .2 over R_gui_max = .5 * 2 = 1: phi = sigmoid(.2).
		// Decisions: .25 + .5 = .75 over R_dec_max = 1: psi = sigmoid(.75). Intent .25.
		// R_COUT = (.549834 + .679179) * .25 = .307253, added to every candidate.
		name:  "full episode",
		cfg:   def,
		cout:  COUT{Phi: sig02, Psi: sig75, Intent: .25, Reward: (sig02 + sig75) * .25},
		aCOUT: [4]float64{.3072532, .3072532, .3072532, .3072532},
	}, {
		// No item-pool step: R_COUT = 0 whatever the gates; A_episode = A_step.
		name: "no intent step",
		drop: []int{2},
		cfg:  def,
		cout: COUT{Phi: sig02, Psi: sig75},
	}, {
		// No decision steps: psi is the empty gate sigmoid(0) = .5, so
		// R_COUT = (.549834 + .5) * .25 = .262458.
		name:  "no decision steps",
		drop:  []int{3, 4},
		cfg:   def,
		cout:  COUT{Phi: sig02, Psi: .5, Intent: .25, Reward: (sig02 + .5) * .25},
		aCOUT: [4]float64{.2624585, .2624585, .2624585, .2624585},
	}, {
		// The same with the empty gate 0: the psi term drops, R_COUT = .549834 * .25.
		name:  "no decision steps, term dropped",
		drop:  []int{3, 4},
		cfg:   with(func(c *AdvantageConfig) { c.EmptyGate = 0 }),
		cout:  COUT{Phi: sig02, Psi: 0, Intent: .25, Reward: sig02 * .25},
		aCOUT: [4]float64{.1374585, .1374585, .1374585, .1374585},
	}, {
		// No GUI steps: phi = .5, R_COUT = (.5 + .679179) * .25 = .294795.
		name:  "no GUI steps",
		drop:  []int{0, 1},
		cfg:   def,
		cout:  COUT{Phi: .5, Psi: sig75, Intent: .25, Reward: (.5 + sig75) * .25},
		aCOUT: [4]float64{.2947947, .2947947, .2947947, .2947947},
	}, {
		name:  "ablation phi only",
		cfg:   with(func(c *AdvantageConfig) { c.Gates = GatesGUI }),
		cout:  COUT{Phi: sig02, Psi: sig75, Intent: .25, Reward: sig02 * .25},
		aCOUT: [4]float64{.1374585, .1374585, .1374585, .1374585},
	}, {
		name:  "ablation psi only",
		cfg:   with(func(c *AdvantageConfig) { c.Gates = GatesDecision }),
		cout:  COUT{Phi: sig02, Psi: sig75, Intent: .25, Reward: sig75 * .25},
		aCOUT: [4]float64{.1697947, .1697947, .1697947, .1697947},
	}, {
		name: "ablation w = 0",
		cfg:  with(func(c *AdvantageConfig) { c.W = 0 }),
		cout: COUT{Phi: sig02, Psi: sig75, Intent: .25, Reward: (sig02 + sig75) * .25},
	}, {
		// Temperature k = 2 doubles the gates' arguments: sigmoid(.4), sigmoid(1.5);
		// w = 0.5 halves the COUT advantage.
		name:  "k = 2, w = 0.5",
		cfg:   with(func(c *AdvantageConfig) { c.K, c.W = 2, .5 }),
		cout:  COUT{Phi: 0.598687660112452, Psi: 0.8175744761936437, Intent: .25, Reward: (0.598687660112452 + 0.8175744761936437) * .25},
		aCOUT: [4]float64{.1770327, .1770327, .1770327, .1770327},
	}, {
		// Rollout g takes candidate g of every step:
		//   g0, g1  gui .5 + .2 = .7: phi sigmoid(.7) = .668188; dec .5 + .5 = 1:
		//           psi sigmoid(1) = .731059; intent .5; R = 1.399247 * .5 = .699623
		//   g2      gui -.5 + .2 = -.3: phi sigmoid(-.3) = .425557; dec 1: psi .731059;
		//           intent 0; R = 0
		//   g3      gui -.3: phi .425557; dec -.5 + .5 = 0: psi .5; intent 0; R = 0
		// R_COUT = {a, a, 0, 0} normalises to +-sqrt(3)/2. Reported: the means
		// phi (2 * .668188 + 2 * .425557) / 4, psi (3 * .731059 + .5) / 4,
		// intent .25, R (2 * .699623) / 4.
		name: "rollout mode",
		cfg:  with(func(c *AdvantageConfig) { c.Mode = COUTRollout }),
		cout: COUT{Phi: (sig07 + sig03) / 2, Psi: (3*sig1 + .5) / 4, Intent: .25,
			Reward: (sig07 + sig1) * .5 / 2},
		aCOUT: [4]float64{h, h, -h, -h},
	}, {
		// Without the intent step every rollout has R_COUT = 0: zero variance, 0.
		name: "rollout mode, no intent step",
		drop: []int{2},
		cfg:  with(func(c *AdvantageConfig) { c.Mode = COUTRollout }),
		cout: COUT{Phi: (sig07 + sig03) / 2, Psi: (3*sig1 + .5) / 4},
	}} {
		ep := goldenEpisode(tc.drop...)
		dst := make([]float64, len(ep.Step))
		c, err := Advantages(dst, ep, tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !closeCOUT(c, tc.cout) {
			t.Errorf("%s: COUT = %+v, want %+v", tc.name, c, tc.cout)
		}
		k := 0
		for j := range goldenAStep {
			if slices.Contains(tc.drop, j) {
				continue
			}
			for g := range 4 {
				if want := goldenAStep[j][g] + tc.aCOUT[g]; math.Abs(dst[k*4+g]-want) > tol {
					t.Errorf("%s: A_episode(j%d, %d) = %v, want %v", tc.name, j, g, dst[k*4+g], want)
				}
			}
			k++
		}
		if tc.cfg.Mode == COUTEpisode && !closeCOUT(EpisodeCOUT(ep, tc.cfg), tc.cout) {
			t.Errorf("%s: EpisodeCOUT disagrees with Advantages", tc.name)
		}
	}
	ep := goldenEpisode()
	if c := RolloutCOUT(ep, 0, def); !closeCOUT(c, COUT{Phi: sig07, Psi: sig1, Intent: .5, Reward: (sig07 + sig1) * .5}) {
		t.Errorf("RolloutCOUT(0) = %+v", c)
	}
}

func closeCOUT(a, b COUT) bool {
	return math.Abs(a.Phi-b.Phi) < 1e-12 && math.Abs(a.Psi-b.Psi) < 1e-12 &&
		math.Abs(a.Intent-b.Intent) < 1e-12 && math.Abs(a.Reward-b.Reward) < 1e-12
}

// TestStepAdvantagesVerl cross-checks StepAdvantages with the GRPO outcome
// advantage of verl (compute_grpo_outcome_advantage) and EasyR1, written out in Go:
// scores are grouped by prompt id in any order; a group of one gets mean 0 and
// std 1; otherwise mean and torch.std (unbiased) of the group, and
// score = (score - mean) / (std + eps) with eps = 1e-6.
func TestStepAdvantagesVerl(t *testing.T) {
	verl := func(scores []float64, index []int, eps float64) []float64 {
		id2score := map[int][]float64{}
		for i, s := range scores {
			id2score[index[i]] = append(id2score[index[i]], s)
		}
		id2mean, id2std := map[int]float64{}, map[int]float64{}
		for id, s := range id2score {
			if len(s) == 1 {
				id2mean[id], id2std[id] = 0, 1
				continue
			}
			var m float64
			for _, v := range s {
				m += v
			}
			m /= float64(len(s))
			var ss float64
			for _, v := range s {
				ss += (v - m) * (v - m)
			}
			id2mean[id], id2std[id] = m, math.Sqrt(ss/float64(len(s)-1))
		}
		out := make([]float64, len(scores))
		for i, s := range scores {
			out[i] = (s - id2mean[index[i]]) / (id2std[index[i]] + eps)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		G, groups := 2+rng.IntN(15), 1+rng.IntN(20)
		rewards := make([]float64, G*groups)
		for i := range rewards {
			switch trial % 3 {
			case 0: // the paper's discrete rewards
				rewards[i] = []float64{-0.5, 0, 0.3, 0.7, 1}[rng.IntN(5)]
			case 1:
				rewards[i] = rng.NormFloat64() * 10
			default: // some groups of equal rewards
				rewards[i] = float64(rng.IntN(2)) * 0.5
			}
		}
		got := make([]float64, len(rewards))
		if err := StepAdvantages(got, rewards, G, 1e-6); err != nil {
			t.Fatal(err)
		}
		// verl sees the rollouts in a shuffled batch, grouped by uid.
		perm := rng.Perm(len(rewards))
		scores, index := make([]float64, len(rewards)), make([]int, len(rewards))
		for i, p := range perm {
			scores[i], index[i] = rewards[p], p/G
		}
		want := verl(scores, index, 1e-6)
		for i, p := range perm {
			// verl's zero-variance groups give rounding noise / eps, up to ~1e-10.
			if math.Abs(got[p]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
				t.Fatalf("trial %d: advantage %d = %v, verl gives %v", trial, p, got[p], want[i])
			}
		}
	}
}

func TestStepAdvantagesContract(t *testing.T) {
	if err := StepAdvantages(make([]float64, 3), make([]float64, 3), 1, 1e-6); err != ErrGroupSize {
		t.Errorf("G = 1: %v", err)
	}
	for _, f := range []func(){
		func() { _ = StepAdvantages(make([]float64, 3), make([]float64, 4), 2, 1e-6) },
		func() { _ = StepAdvantages(make([]float64, 3), make([]float64, 3), 2, 1e-6) },
		func() { _, _ = Advantages(make([]float64, 3), goldenEpisode(), DefaultAdvantageConfig()) },
		func() {
			EpisodeCOUT(EpisodeRewards{G: 2, Stages: []Stage{StageGUI}, Step: []float64{1}}, DefaultAdvantageConfig())
		},
		func() { RolloutCOUT(goldenEpisode(), 4, DefaultAdvantageConfig()) },
	} {
		if !panics(f) {
			t.Error("no panic on a length mismatch")
		}
	}
	// Rewards of 0.1 + 0.1 + 0.1 have a mean of 0.10000000000000002: the group is
	// still seen as having zero variance.
	dst := []float64{9, 9, 9}
	if err := StepAdvantages(dst, []float64{.1, .1, .1}, 3, 1e-6); err != nil || dst[0] != 0 || dst[1] != 0 || dst[2] != 0 {
		t.Errorf("zero-variance group: %v, %v", dst, err)
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// randomGroup returns G rewards drawn from the paper's discrete values or
// continuous ones.
func randomGroup(rng *rand.Rand) []float64 {
	r := make([]float64, 2+rng.IntN(15))
	for i := range r {
		if rng.IntN(2) == 0 {
			r[i] = []float64{-0.5, 0, 0.3, 0.7, 1}[rng.IntN(5)]
		} else {
			r[i] = rng.NormFloat64()
		}
	}
	return r
}

func TestAdvantageProperties(t *testing.T) {
	cfg := &quick.Config{MaxCount: 500}
	group := func(seed uint64) ([]float64, []float64, *rand.Rand) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := randomGroup(rng)
		a := make([]float64, len(r))
		if err := StepAdvantages(a, r, len(r), 1e-6); err != nil {
			t.Fatal(err)
		}
		return r, a, rng
	}
	sumZero := func(seed uint64) bool {
		_, a, _ := group(seed)
		var s float64
		for _, v := range a {
			s += v
		}
		return math.Abs(s) < 1e-12*float64(len(a))
	}
	permutes := func(seed uint64) bool {
		r, a, rng := group(seed)
		perm := rng.Perm(len(r))
		pr := make([]float64, len(r))
		for i, p := range perm {
			pr[i] = r[p]
		}
		pa := make([]float64, len(r))
		_ = StepAdvantages(pa, pr, len(r), 1e-6)
		for i, p := range perm {
			if math.Abs(pa[i]-a[p]) > 1e-12 {
				return false
			}
		}
		return true
	}
	scales := func(seed uint64) bool {
		r, a, rng := group(seed)
		c := math.Exp(rng.Float64()*8 - 2) // 0.14 .. 403
		cr := make([]float64, len(r))
		for i := range r {
			cr[i] = c * r[i]
		}
		// (c r - c m) / (c s + c eps) = (r - m) / (s + eps) exactly; with eps fixed
		// the two differ by at most |A| eps |1 - 1/c| / s.
		ca, cae := make([]float64, len(r)), make([]float64, len(r))
		_ = StepAdvantages(ca, cr, len(r), 1e-6*c)
		_ = StepAdvantages(cae, cr, len(r), 1e-6)
		s := stdDev(r)
		for i := range a {
			if math.Abs(ca[i]-a[i]) > 1e-12*(1+math.Abs(a[i])) ||
				math.Abs(cae[i]-a[i]) > 1e-12+math.Abs(a[i])*1e-6*math.Abs(1-1/c)/s {
				return false
			}
		}
		return true
	}
	// Fused advantages: in episode mode each step's candidates sum to G * w * R_COUT;
	// in rollout mode to 0; permuting the candidates of every step alike permutes
	// the fused advantages in both modes.
	fused := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 8))
		G, S := 2+rng.IntN(7), 1+rng.IntN(20)
		ep := EpisodeRewards{G: G}
		for range S {
			ep.Stages = append(ep.Stages, Stage(1+rng.IntN(3)))
			for range G {
				st := []float64{-0.5, -0.2, 0, 0.2, 0.5}[rng.IntN(5)]
				ep.Stage = append(ep.Stage, st)
				ep.Step = append(ep.Step, st+0.5*float64(rng.IntN(2)))
			}
		}
		perm := rng.Perm(G)
		pep := EpisodeRewards{G: G, Stages: ep.Stages, Step: make([]float64, S*G), Stage: make([]float64, S*G)}
		for j := range S {
			for g, p := range perm {
				pep.Step[j*G+g], pep.Stage[j*G+g] = ep.Step[j*G+p], ep.Stage[j*G+p]
			}
		}
		for _, mode := range []COUTMode{COUTEpisode, COUTRollout} {
			c := DefaultAdvantageConfig()
			c.Mode, c.W = mode, 0.5+rng.Float64()
			a, pa := make([]float64, S*G), make([]float64, S*G)
			cout, err := Advantages(a, ep, c)
			if err != nil {
				return false
			}
			if _, err := Advantages(pa, pep, c); err != nil {
				return false
			}
			for j := range S {
				var s float64
				for g := range G {
					s += a[j*G+g]
					if math.Abs(pa[j*G+g]-a[j*G+perm[g]]) > 1e-12 {
						return false
					}
				}
				want := 0.0
				if mode == COUTEpisode {
					want = float64(G) * c.W * cout.Reward
				}
				if math.Abs(s-want) > 1e-9 {
					return false
				}
			}
		}
		return true
	}
	for name, f := range map[string]func(uint64) bool{
		"sum zero": sumZero, "permutation": permutes, "scale": scales, "fused": fused,
	} {
		if err := quick.Check(f, cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// stdDev is the unbiased standard deviation of x.
func stdDev(x []float64) float64 {
	m := mean(x)
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

func TestAdvantagesAllocs(t *testing.T) {
	ep := goldenEpisode()
	dst := make([]float64, len(ep.Step))
	for _, mode := range []COUTMode{COUTEpisode, COUTRollout} {
		c := DefaultAdvantageConfig()
		c.Mode = mode
		if n := testing.AllocsPerRun(100, func() { _, _ = Advantages(dst, ep, c) }); n != 0 {
			t.Errorf("Advantages in %s mode allocates %v times", mode, n)
		}
	}
	// G above the stack buffers still works in rollout mode.
	G := maxStackG + 6
	big := EpisodeRewards{G: G, Stages: []Stage{StagePool, StageGUI}, Step: make([]float64, 2*G), Stage: make([]float64, 2*G)}
	for g := range G {
		big.Stage[g] = 0.5 * float64(g%2)
		big.Step[g] = big.Stage[g]
	}
	c := DefaultAdvantageConfig()
	c.Mode = COUTRollout
	dst = make([]float64, 2*G)
	if _, err := Advantages(dst, big, c); err != nil || dst[G+1] <= 0 || dst[G] >= 0 {
		t.Errorf("rollout mode with G = %d: %v, %v", G, dst[G:G+2], err)
	}
}

// TestCOUTAdvantagesCredit checks what each mode's A_COUT can say about candidates:
// episode mode gives every rollout the same value (no credit), rollout mode values
// that differ by rollout and sum to zero; Advantages equals StepAdvantages fused with
// them.
func TestCOUTAdvantagesCredit(t *testing.T) {
	ep := goldenEpisode()
	for _, mode := range []COUTMode{COUTEpisode, COUTRollout} {
		cfg := DefaultAdvantageConfig()
		cfg.Mode = mode
		a := make([]float64, ep.G)
		if _, err := COUTAdvantages(a, ep, cfg); err != nil {
			t.Fatal(err)
		}
		var sum float64
		distinct := map[float64]bool{}
		for _, v := range a {
			sum += v
			distinct[v] = true
		}
		switch {
		case mode == COUTEpisode && len(distinct) != 1:
			t.Errorf("episode mode: A_COUT %v differs between rollouts", a)
		case mode == COUTRollout && (len(distinct) < 2 || math.Abs(sum) > 1e-9):
			t.Errorf("rollout mode: A_COUT %v should differ between rollouts and sum to 0", a)
		}
		want := make([]float64, len(ep.Step))
		if err := StepAdvantages(want, ep.Step, ep.G, cfg.Eps); err != nil {
			t.Fatal(err)
		}
		FuseAdvantages(want, a, cfg.W)
		got := make([]float64, len(ep.Step))
		if _, err := Advantages(got, ep, cfg); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: Advantages[%d] = %v, StepAdvantages + FuseAdvantages = %v", mode, i, got[i], want[i])
			}
		}
	}
	for name, f := range map[string]func(){
		"COUTAdvantages length": func() { _, _ = COUTAdvantages(make([]float64, ep.G+1), ep, DefaultAdvantageConfig()) },
		"FuseAdvantages length": func() { FuseAdvantages(make([]float64, 5), make([]float64, 2), 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestAdvantageConfigFor: the gates' normalisers follow the configured rewards of a
// right step, so a direct user who changes the rewards keeps sums in [-1, 1].
func TestAdvantageConfigFor(t *testing.T) {
	r := DefaultRewardConfig()
	r.GUIBoth, r.GUITypeOnly, r.GUIValueOnly, r.GUINeither = 1, 0.4, -0.4, -1
	r.DecisionRight, r.DecisionWrong = 2, -2
	c := AdvantageConfigFor(r)
	if c.GUIMax != 1 || c.DecisionMax != 2 {
		t.Errorf("GUIMax %v, DecisionMax %v; want 1 and 2", c.GUIMax, c.DecisionMax)
	}
	if c.Validate() != nil {
		t.Error(c.Validate())
	}
	// A perfect episode under those rewards saturates both gates equally.
	ep := EpisodeRewards{G: 2, Stages: []Stage{StageGUI, StagePool, StageRecommend},
		Step: make([]float64, 6), Stage: []float64{1, 1, 0.5, 0.5, 2, 2}}
	got := EpisodeCOUT(ep, c)
	if want := 1 / (1 + math.Exp(-1)); math.Abs(got.Phi-want) > 1e-15 || math.Abs(got.Psi-want) > 1e-15 {
		t.Errorf("phi %v, psi %v; want both sigmoid(1) = %v", got.Phi, got.Psi, want)
	}
	if DefaultAdvantageConfig() != AdvantageConfigFor(DefaultRewardConfig()) {
		t.Error("DefaultAdvantageConfig is not AdvantageConfigFor(DefaultRewardConfig())")
	}
}
