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

import (
	"context"
	"hash/fnv"

	"google.golang.org/protobuf/proto"

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Member is one policy worker of a Gang, driven in Go types: a remote worker over
// gRPC (Dial) or a Policy in this process (NewLocal). Each call has the contract of
// the protocol call of the same name (docs/worker-protocol.md) and returns ctx's
// error, without calling the worker, once ctx is done. Errors of a Local member wrap
// ErrInvalid (the request's fault) or ErrNotConfigured where the protocol answers
// InvalidArgument or FailedPrecondition; a Remote member's errors carry the gRPC
// status.
type Member interface {
	// Configure initialises the policy from s and describes it. A Remote member
	// waits until its worker is reachable (a worker still starting is no error).
	Configure(ctx context.Context, s Setup) (Description, error)
	// Generate samples o.Samples answers (1 when 0) to each prompt: out[j] holds
	// those of prompts[j].
	Generate(ctx context.Context, prompts []Prompt, o SampleOptions) ([][]Sample, error)
	// LogProbs scores each answer (see ScoreOptions): out[i] is items[i]'s.
	LogProbs(ctx context.Context, items []Scored, o ScoreOptions) ([]TokenLogProbs, error)
	// Backward adds the gradient of -sum_i sum_t w_{i,t} logp_{i,t} to the
	// accumulated gradient and returns sum_i sum_t w_{i,t} logp_{i,t} (before the
	// update) and the number of answer tokens it took.
	Backward(ctx context.Context, items []Weighted) (Backwarded, error)
	// Gradient returns the accumulated gradient, one value per parameter.
	Gradient(ctx context.Context) ([]float32, error)
	// Step applies one AdamW step (StepOptions; zero coefficients take the
	// defaults) and returns the gradient's global L2 norm before clipping.
	Step(ctx context.Context, o StepOptions) (gradNorm float64, err error)
	// SnapshotReference copies the current weights into the reference policy.
	SnapshotReference(ctx context.Context) error
	// Save writes the full state to the file path, atomically.
	Save(ctx context.Context, path string) error
	// Release tells the worker that its trainer is done with it.
	Release(ctx context.Context) error
	// Embed returns the sentence embeddings of texts, one vector per text in order,
	// from the sentence encoder the member loaded (Setup.Options' embedder_model); a
	// member without one fails with ErrNoEncoder.
	Embed(ctx context.Context, texts []string) ([][]float64, error)
	// Export writes the current policy to the folder path as a Hugging Face model
	// (the LoRA adapter, with the merged model when merge is set, or the whole
	// model), atomically, with a manifest of its files' digests; a member whose
	// policy is no Hugging Face model fails with ErrNoExport.
	Export(ctx context.Context, path string, merge bool) (Exported, error)
}

// Backwarded is what a backward pass did: its objective sum_i sum_t w_{i,t}
// logp_{i,t} (before the update) and the answer tokens it took.
type Backwarded struct {
	Objective float64
	Tokens    int64
}

// Exported describes a Hugging Face folder a member exported.
type Exported struct {
	// Path is the folder; Kind is "lora" (an adapter) or "full" (the whole model);
	// Merged says whether a merged model is beside the adapter (Path/merged).
	Path   string
	Kind   string
	Merged bool
	// Step is the optimizer step the weights are of, Files the number of files the
	// manifest names.
	Step, Files int64
}

// Setup is what Configure initialises a policy from.
type Setup struct {
	// Seed keys the initial weights.
	Seed uint64
	// Options are the model options the policy understands.
	Options map[string]string
	// LoadPath, when not empty, is a state Save wrote, loaded over the fresh policy:
	// the whole state, options included, comes from it.
	LoadPath string
	// State, when not empty, is the content of a state Save wrote, loaded as the
	// file at LoadPath would be: for a worker that cannot read the file (see
	// Gang.Configure). At most MaxStateBytes; set LoadPath or State, not both.
	State []byte
}

// Prompt is what a policy reads to answer one step of an episode: the instruction,
// the step's stage and screen, the candidate item and the demonstrated history
// (PromptFromStep says what exactly). It is built once, by NewPrompt, and passed to
// every call about that step without being copied. The zero Prompt is no prompt.
type Prompt struct{ msg *workerpb.Prompt }

// NewPrompt returns the prompt of step j of ep; it panics if j is not a step of ep.
func NewPrompt(ep *dataset.Episode, j int) Prompt { return Prompt{PromptFromStep(ep, j)} }

// ObservationKey returns a key of what p shows of the current step: the channel,
// instruction, stage, screen, candidate and screenshot, without the episode id, the
// step index and the history. FNV-1a over that part's deterministic wire form:
// steps of different rollouts with equal keys answered the same screen of the same
// task (up to a hash collision), however they got there.
func (p Prompt) ObservationKey() uint64 {
	m := proto.Clone(p.msg).(*workerpb.Prompt)
	m.EpisodeId, m.StepIndex, m.History = "", 0, nil
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic("worker: a prompt does not marshal: " + err.Error())
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// Answer is a policy's answer to a prompt: text in the GUI-R1 format and, when the
// policy produced it, its token ids, which only the policy interprets. An answer
// with token ids is scored as exactly those tokens; one with text only (a
// demonstrated answer) is tokenized by the policy.
type Answer struct {
	Text   string
	Tokens []int32
}

// Sample is a sampled answer with the log-prob of each of its tokens under the
// policy (the worker's training model), and, when an engine other than the policy
// sampled it, under that engine.
type Sample struct {
	Answer Answer
	// LogProbs are the per-token log-probs (temperature 1) under the policy, one per
	// token id.
	LogProbs []float64
	// SamplerLogProbs are the per-token log-probs (temperature 1) under the serving
	// engine that sampled the answer, when that is not the policy itself (the
	// PyTorch worker's vLLM engine): one per token id, like LogProbs. Empty when the
	// policy sampled it (the huggingface engine, the CPU policy, an external worker
	// that does not set them).
	SamplerLogProbs []float64
}

// Scored is an answer to a prompt, to be scored.
type Scored struct {
	Prompt Prompt
	Answer Answer
}

// TokenLogProbs are the log-probs of an answer's tokens: under the current policy
// (empty when ScoreOptions.ReferenceOnly asked for none) and under the reference
// policy (empty unless ScoreOptions.Reference asked for them).
type TokenLogProbs struct {
	Tokens             []int32
	Current, Reference []float64
}

// Weighted is an answer to a prompt with the weights of its tokens in the loss:
// TokenWeights, one per token, or, when they are empty, SequenceWeight for every
// token.
type Weighted struct {
	Prompt         Prompt
	Answer         Answer
	SequenceWeight float64
	TokenWeights   []float64
}
