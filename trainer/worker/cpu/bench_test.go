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

package cpu

import (
	"bytes"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// benchEpisode is a hotel episode of 17 steps, the mean length of SmartSpot.
func benchEpisode(b *testing.B) *dataset.Episode {
	ep := &episodes(b, 2, 0)[1]
	if len(ep.Steps) != 17 {
		b.Fatalf("the benchmark episode has %d steps, want 17", len(ep.Steps))
	}
	return ep
}

// benchPolicy returns a fresh policy, or one after two epochs of SFT on 12
// episodes (which answers like a trained policy: intent texts on pool steps
// only).
func benchPolicy(b *testing.B, arch string, sft bool) *Policy {
	p := configured(b, 1, map[string]string{"arch": arch})
	if sft {
		for range 2 {
			sftEpoch(b, p, episodes(b, 12, 5), 3e-3)
		}
	}
	return p
}

func benchmarkGenerate(b *testing.B, arch string, sft bool) {
	ps := prompts(benchEpisode(b))
	p := benchPolicy(b, arch, sft)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Generate(ps, sampleOptions(5, uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// archs are the architectures every benchmark runs in.
var archs = []string{ArchFeatures, ArchTokens}

// BenchmarkGenerate samples G = 5 answers for every step of one 17-step episode.
func BenchmarkGenerate(b *testing.B) {
	for _, arch := range archs {
		b.Run(arch+"/fresh", func(b *testing.B) { benchmarkGenerate(b, arch, false) })
		b.Run(arch+"/sft", func(b *testing.B) { benchmarkGenerate(b, arch, true) })
	}
}

// BenchmarkBackwardStep accumulates the gradient of G = 5 sampled answers per
// step of one 17-step episode, with token weights, then takes an AdamW step:
// the worker's share of one ESPO training step besides Generate and LogProbs.
func BenchmarkBackwardStep(b *testing.B) {
	for _, arch := range archs {
		b.Run(arch, func(b *testing.B) { benchmarkBackwardStep(b, arch) })
	}
}

func benchmarkBackwardStep(b *testing.B, arch string) {
	ps, p, cands := benchSamples(b, arch)
	var items []*workerpb.Weighted
	for i, c := range cands {
		for _, s := range c.Samples {
			w := make([]float64, len(s.Logprobs))
			for k := range w {
				w[k] = 0.01 * float64(k%3-1)
			}
			items = append(items, &workerpb.Weighted{Prompt: ps[i], Answer: s.Answer, TokenWeights: w})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := p.Backward(items); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Step(worker.StepOptions{LearningRate: 1e-3, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, MaxGradNorm: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogProbs scores G = 5 answers per step of one episode under the
// current and the reference weights.
func BenchmarkLogProbs(b *testing.B) {
	for _, arch := range archs {
		b.Run(arch, func(b *testing.B) { benchmarkLogProbs(b, arch) })
	}
}

func benchmarkLogProbs(b *testing.B, arch string) {
	ps, p, cands := benchSamples(b, arch)
	scored := scoredSamples(ps, cands)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.LogProbs(scored, worker.ScoreOptions{Reference: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSamples returns the benchmark episode's prompts, the SFT policy and G = 5
// samples of it per prompt.
func benchSamples(b *testing.B, arch string) ([]*workerpb.Prompt, *Policy, []*workerpb.Candidates) {
	ps := prompts(benchEpisode(b))
	p := benchPolicy(b, arch, true)
	cands, err := p.Generate(ps, sampleOptions(5, 1))
	if err != nil {
		b.Fatal(err)
	}
	return ps, p, cands
}

// BenchmarkSaveLoad writes and reads the state of a policy with the default
// options (1,048,640 parameters, four vectors of them) through memory.
func BenchmarkSaveLoad(b *testing.B) {
	p := configured(b, 1, nil)
	var buf bytes.Buffer
	b.Run("save", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := p.Save(&buf); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("load", func(b *testing.B) {
		q := New(1)
		b.ReportAllocs()
		for b.Loop() {
			if err := q.Load(bytes.NewReader(buf.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
}
