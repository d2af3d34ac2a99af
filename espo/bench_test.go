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
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchIntents are the true intents of the synthetic episodes.
var benchIntents = []string{
	"a hotel in New York next week", "cheap vegetarian food delivered tonight",
	"a direct flight to Tokyo on Friday morning", "a comedy movie this weekend with friends",
	"a quiet hotel near the airport for one night", "spicy noodles for two people",
	"a window seat flight to Paris next month", "an action movie in IMAX tonight",
}

// benchEpisode returns the ground truths and the G answers per step (candidate g of
// step j at j*G + g) of a SmartSpot-shaped episode: GUI steps (clicks, typing and
// scrolls), one item-pool step and nRec decision steps. About one answer in ten is
// malformed; the others are right, wrong in type or wrong in value.
func benchEpisode(rng *rand.Rand, steps, nRec, G int) ([]GroundTruth, []string) {
	screen := [2]float64{1080, 2400}
	var gts []GroundTruth
	var ans []string
	intent := benchIntents[rng.IntN(len(benchIntents))]
	nGUI := steps - 1 - nRec
	for j := range steps {
		var gt GroundTruth
		switch {
		case j < nGUI && j%3 != 1:
			x, y := 0.1+0.6*rng.Float64(), 0.1+0.6*rng.Float64()
			gt = GroundTruth{Stage: StageGUI, Action: Action{Type: ActionClick, Point: [2]float64{x * 1080, y * 2400}, Text: NoText},
				Box: [4]float64{x - 0.05, y - 0.02, x + 0.05, y + 0.02}, Screen: screen}
		case j < nGUI && j%6 == 1:
			gt = GroundTruth{Stage: StageGUI, Action: Action{Type: ActionType, Point: NoPoint, Text: "hotel New York next week"}}
		case j < nGUI:
			gt = GroundTruth{Stage: StageGUI, Action: Action{Type: ActionScroll, Point: NoPoint, Text: "down"}}
		case j == nGUI:
			gt = GroundTruth{Stage: StagePool, Action: Action{Type: ActionPoolFound, Point: NoPoint, Text: intent}, Intent: intent}
		default:
			gt = GroundTruth{Stage: StageRecommend, Action: Action{Type: ActionRecommendation, Point: NoPoint, Text: []string{"Yes", "No"}[rng.IntN(2)]}}
		}
		gts = append(gts, gt)
		for range G {
			a := gt.Action
			switch rng.IntN(10) {
			case 0:
				ans = append(ans, "<think>hmm</think><answer>[{'action': 'click', 'point': [1, 2]}]</answer>")
				continue
			case 1, 2:
				a.Type = []string{ActionClick, ActionType, ActionScroll, ActionRecommendation}[rng.IntN(4)]
			case 3, 4:
				a.Point[0] += 300
				a.Text = []string{"up", "cheap flight", "No", "hotels in Boston"}[rng.IntN(4)]
			}
			ans = append(ans, FormatAnswer("The user wants this; the screen shows the next control to use.", a))
		}
	}
	return gts, ans
}

// benchData is a data set of episodes with their answers.
type benchData struct {
	G       int
	truths  [][]GroundTruth
	answers [][]string
	maxS    int
}

func makeBenchData(episodes, G int, steps func(e int) (int, int)) *benchData {
	rng := rand.New(rand.NewPCG(1, 1))
	d := &benchData{G: G}
	for e := range episodes {
		s, rec := steps(e)
		gts, ans := benchEpisode(rng, s, rec, G)
		d.truths = append(d.truths, gts)
		d.answers = append(d.answers, ans)
		d.maxS = max(d.maxS, s)
	}
	return d
}

// smartSpot is 102 episodes, 1,713 steps: 81 of 17 steps and 21 of 16, each with
// 4 to 7 decision steps and one item-pool step.
func smartSpot(G int) *benchData {
	return makeBenchData(102, G, func(e int) (int, int) { return 16 + min(1, max(0, 81-e)), 4 + e%4 })
}

// scoreAndFuse is the trainer's per-episode work: score every candidate into
// caller-provided buffers and fuse the advantages.
func scoreAndFuse(b *testing.B, d *benchData, rw *Rewarder, cfg AdvantageConfig, ep *EpisodeRewards, adv []float64) {
	G := d.G
	for e, gts := range d.truths {
		S := len(gts)
		ep.Stages, ep.Step, ep.Stage = ep.Stages[:S], ep.Step[:S*G], ep.Stage[:S*G]
		ans := d.answers[e]
		for j := range gts {
			ep.Stages[j] = gts[j].Stage
			for g := range G {
				s := rw.Score(&gts[j], ans[j*G+g])
				ep.Step[j*G+g], ep.Stage[j*G+g] = s.Step(), s.Stage
			}
		}
		if _, err := Advantages(adv[:S*G], *ep, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func (d *benchData) candidates() int {
	n := 0
	for _, a := range d.answers {
		n += len(a)
	}
	return n
}

func benchRewardsAdvantages(b *testing.B, d *benchData) {
	rw, err := NewRewarder(DefaultRewardConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	G := d.G
	ep := EpisodeRewards{G: G, Stages: make([]Stage, d.maxS), Step: make([]float64, d.maxS*G), Stage: make([]float64, d.maxS*G)}
	adv := make([]float64, d.maxS*G)
	cfg := DefaultAdvantageConfig()
	b.ReportAllocs()
	for b.Loop() {
		scoreAndFuse(b, d, rw, cfg, &ep, adv)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(d.candidates()), "ns/candidate")
}

// BenchmarkRewardsAdvantagesSmartSpot parses, scores and fuses one SmartSpot-sized
// epoch: 102 episodes, 1,713 steps, G = 5 (8,565 candidates).
func BenchmarkRewardsAdvantagesSmartSpot(b *testing.B) {
	benchRewardsAdvantages(b, smartSpot(5))
}

// BenchmarkRewardsAdvantagesLarge does the same for 10,000 episodes of 17 steps with
// G = 8 (1,360,000 candidates).
func BenchmarkRewardsAdvantagesLarge(b *testing.B) {
	benchRewardsAdvantages(b, makeBenchData(10000, 8, func(e int) (int, int) { return 17, 4 + e%4 }))
}

// BenchmarkAdvantages measures Advantages alone over precomputed rewards of the
// large batch, in both COUT modes.
func BenchmarkAdvantages(b *testing.B) {
	const E, S, G = 10000, 17, 8
	rng := rand.New(rand.NewPCG(2, 2))
	eps := make([]EpisodeRewards, E)
	for e := range eps {
		ep := EpisodeRewards{G: G, Stages: make([]Stage, S), Step: make([]float64, S*G), Stage: make([]float64, S*G)}
		nRec := 4 + e%4
		for j := range S {
			switch {
			case j < S-1-nRec:
				ep.Stages[j] = StageGUI
			case j == S-1-nRec:
				ep.Stages[j] = StagePool
			default:
				ep.Stages[j] = StageRecommend
			}
			for g := range G {
				ep.Stage[j*G+g] = []float64{-0.5, -0.2, 0, 0.2, 0.5}[rng.IntN(5)]
				ep.Step[j*G+g] = ep.Stage[j*G+g] + 0.5*float64(rng.IntN(2))
			}
		}
		eps[e] = ep
	}
	adv := make([]float64, S*G)
	for _, mode := range []COUTMode{COUTEpisode, COUTRollout} {
		b.Run(string(mode), func(b *testing.B) {
			cfg := DefaultAdvantageConfig()
			cfg.Mode = mode
			b.ReportAllocs()
			for b.Loop() {
				for _, ep := range eps {
					if _, err := Advantages(adv, ep, cfg); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(E*S*G), "ns/candidate")
		})
	}
}

func BenchmarkParseAnswer(b *testing.B) {
	s := FormatAnswer("The user wants a hotel; the search box is at the top.", Action{Type: ActionType, Point: NoPoint, Text: "hotel New York"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnswer(s); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTokens returns n tokens in sequences of 64 (the last one shorter), with
// ratios spread over the clip range and beyond.
func benchTokens(n int) Tokens {
	rng := rand.New(rand.NewPCG(3, 3))
	tk := Tokens{LogP: make([]float64, n), OldLogP: make([]float64, n), RefLogP: make([]float64, n)}
	for i := range tk.LogP {
		lp := -rng.Float64() * 4
		tk.LogP[i], tk.OldLogP[i], tk.RefLogP[i] = lp, lp+rng.NormFloat64()*0.2, lp+rng.NormFloat64()*0.3
	}
	for left := n; left > 0; left -= 64 {
		tk.Lens = append(tk.Lens, min(64, left))
		tk.Adv = append(tk.Adv, rng.NormFloat64())
	}
	return tk
}

var lossSizes = []int{1e3, 1e5, 1e7}

// BenchmarkLossWeights computes the loss weights of n tokens with the defaults;
// compare with BenchmarkLossFloor at the same size.
func BenchmarkLossWeights(b *testing.B) {
	for _, n := range lossSizes {
		tk := benchTokens(n)
		dst := make([]float64, n)
		cfg := DefaultLossConfig()
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(32 * n))
			for b.Loop() {
				if _, err := LossWeights(dst, tk, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
		})
	}
}

// BenchmarkLossFloor is the memory-bandwidth floor of BenchmarkLossWeights: a plain
// loop that reads the same arrays (three log-probabilities per token, an advantage
// per sequence) and writes one weight per token.
func BenchmarkLossFloor(b *testing.B) {
	for _, n := range lossSizes {
		tk := benchTokens(n)
		dst := make([]float64, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(32 * n))
			for b.Loop() {
				off := 0
				for s, l := range tk.Lens {
					a := tk.Adv[s]
					lp, old, ref, w := tk.LogP[off:off+l], tk.OldLogP[off:off+l], tk.RefLogP[off:off+l], dst[off:off+l]
					for i, x := range lp {
						w[i] = a * (x + old[i] + ref[i])
					}
					off += l
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
		})
	}
}
