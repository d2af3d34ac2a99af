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

package worker

import "github.com/espo-dev/espo-operator/trainer/workerpb"

// The conversions between the Go types of a Member and the messages of the worker
// protocol. Slices are shared, not copied, both ways.

func promptMsgs(ps []Prompt) []*workerpb.Prompt {
	out := make([]*workerpb.Prompt, len(ps))
	for i, p := range ps {
		out[i] = p.msg
	}
	return out
}

func answerMsg(a Answer) *workerpb.Answer {
	return &workerpb.Answer{Text: a.Text, TokenIds: a.Tokens}
}

func answerOf(m *workerpb.Answer) Answer {
	return Answer{Text: m.GetText(), Tokens: m.GetTokenIds()}
}

func scoredMsgs(items []Scored) []*workerpb.Scored {
	out := make([]*workerpb.Scored, len(items))
	for i, it := range items {
		out[i] = &workerpb.Scored{Prompt: it.Prompt.msg, Answer: answerMsg(it.Answer)}
	}
	return out
}

func weightedMsgs(items []Weighted) []*workerpb.Weighted {
	out := make([]*workerpb.Weighted, len(items))
	for i, it := range items {
		out[i] = &workerpb.Weighted{Prompt: it.Prompt.msg, Answer: answerMsg(it.Answer),
			SequenceWeight: it.SequenceWeight, TokenWeights: it.TokenWeights}
	}
	return out
}

// samplesOf returns the samples of each prompt's candidates.
func samplesOf(cs []*workerpb.Candidates) [][]Sample {
	out := make([][]Sample, len(cs))
	for i, c := range cs {
		out[i] = make([]Sample, len(c.GetSamples()))
		for g, s := range c.GetSamples() {
			out[i][g] = Sample{Answer: answerOf(s.GetAnswer()), LogProbs: s.GetLogprobs(), SamplerLogProbs: s.GetSamplerLogprobs()}
		}
	}
	return out
}

// candidatesMsgs returns each prompt's samples as the protocol's candidates, the
// inverse of samplesOf.
func candidatesMsgs(ss [][]Sample) []*workerpb.Candidates {
	out := make([]*workerpb.Candidates, len(ss))
	for i, c := range ss {
		out[i] = &workerpb.Candidates{Samples: make([]*workerpb.Sample, len(c))}
		for g, s := range c {
			out[i].Samples[g] = &workerpb.Sample{Answer: answerMsg(s.Answer), Logprobs: s.LogProbs, SamplerLogprobs: s.SamplerLogProbs}
		}
	}
	return out
}

func tokenLogProbsOf(ms []*workerpb.TokenLogProbs) []TokenLogProbs {
	out := make([]TokenLogProbs, len(ms))
	for i, m := range ms {
		out[i] = TokenLogProbs{Tokens: m.GetTokenIds(), Current: m.GetCurrent(), Reference: m.GetReference()}
	}
	return out
}

func infoMsg(d Description) *workerpb.InfoResponse {
	return &workerpb.InfoResponse{Model: d.Model, Device: d.Device, Parameters: d.Parameters,
		ReducesGradients: d.ReducesGradients, Steps: d.Steps, ModelConfigSha256: d.ModelConfigSHA256, Sharded: d.Sharded}
}

func descriptionOf(m *workerpb.InfoResponse) Description {
	return Description{Model: m.GetModel(), Device: m.GetDevice(), Parameters: m.GetParameters(),
		ReducesGradients: m.GetReducesGradients(), Steps: m.GetSteps(), ModelConfigSHA256: m.GetModelConfigSha256(),
		Encoder: m.GetEncoder(), EncoderSHA256: m.GetEncoderSha256(), Sharded: m.GetSharded()}
}

func sampleOptionsOf(m *workerpb.GenerateRequest) SampleOptions {
	return SampleOptions{Samples: int(m.GetSamples()), Temperature: m.GetTemperature(), Greedy: m.GetGreedy(),
		Seed: m.GetSeed(), MaxTokens: int(m.GetMaxTokens())}
}

func generateRequest(ps []Prompt, o SampleOptions) *workerpb.GenerateRequest {
	return &workerpb.GenerateRequest{Prompts: promptMsgs(ps), Samples: int32(o.Samples), Temperature: o.Temperature,
		Greedy: o.Greedy, Seed: o.Seed, MaxTokens: int32(o.MaxTokens)}
}

func stepOptionsOf(m *workerpb.StepRequest) StepOptions {
	return StepOptions{LearningRate: m.GetLearningRate(), WeightDecay: m.GetWeightDecay(),
		Beta1: m.GetBeta1(), Beta2: m.GetBeta2(), Epsilon: m.GetEpsilon(),
		MaxGradNorm: m.GetMaxGradNorm(), Gradient: m.GetGradient()}
}

func stepRequest(o StepOptions) *workerpb.StepRequest {
	return &workerpb.StepRequest{LearningRate: o.LearningRate, WeightDecay: o.WeightDecay,
		Beta1: o.Beta1, Beta2: o.Beta2, Epsilon: o.Epsilon, MaxGradNorm: o.MaxGradNorm, Gradient: o.Gradient}
}
