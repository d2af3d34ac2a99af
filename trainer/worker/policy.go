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
	"errors"
	"io"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Policy is what a worker implements; NewServer serves it over the worker
// protocol, NewLocal as a Member in process. Both serialise the calls that change
// the state (Configure, Backward, Step, SnapshotReference, Load) against every
// other call, and call nothing but Configure, Load and Describe before the policy
// is configured, so an implementation needs no locking of its own for them;
// Generate, LogProbs, Gradient and Save may run concurrently with each other.
//
// Errors that wrap ErrInvalid are the caller's fault (a malformed answer, a
// weight count that does not match the tokens) and become InvalidArgument;
// others become Internal.
type Policy interface {
	// Configure initialises a fresh policy from seed: weights, a reference equal to
	// them, zero optimizer moments and step count, no accumulated gradient. Options
	// are the model options the policy understands; an unknown option or a bad
	// value is an error wrapping ErrInvalid.
	Configure(seed uint64, options map[string]string) error
	// Describe says what the policy is; it is called before Configure too.
	Describe() Description
	// Generate samples o.Samples answers for each prompt, in order, with one
	// log-prob per token under the policy at temperature 1. The same seed and
	// prompts give the same answers.
	Generate(prompts []*workerpb.Prompt, o SampleOptions) ([]*workerpb.Candidates, error)
	// LogProbs returns the token ids of each answer with their per-token log-probs
	// under the current policy (unless o.ReferenceOnly) and, when o.Reference,
	// under the reference policy. An answer with token ids is scored as those
	// tokens; one with text only is tokenized.
	LogProbs(items []*workerpb.Scored, o ScoreOptions) ([]*workerpb.TokenLogProbs, error)
	// Backward adds the gradient of -sum_i sum_t w_{i,t} logp_{i,t} to the
	// accumulated gradient and returns sum_i sum_t w_{i,t} logp_{i,t} (before the
	// update) and the number of tokens.
	Backward(items []*workerpb.Weighted) (objective float64, tokens int64, err error)
	// Gradient returns a copy of the accumulated gradient, one value per parameter.
	Gradient() []float32
	// Step applies one AdamW step (see StepOptions) to o.Gradient when it is not
	// empty, else to the accumulated gradient, clears the accumulated gradient,
	// and returns the global L2 norm of the gradient before clipping.
	Step(o StepOptions) (gradNorm float64, err error)
	// SnapshotReference copies the current weights into the reference policy.
	SnapshotReference() error
	// Save writes the full state: options, weights, reference, optimizer moments
	// and step count (not the accumulated gradient, which Step clears).
	Save(w io.Writer) error
	// Load replaces the whole state, options included, with one Save wrote; an
	// error leaves the state as it was.
	Load(r io.Reader) error
}

// Description is what a policy says it is (InfoResponse on the wire).
type Description struct {
	Model  string
	Device string
	// Parameters is the number of trainable parameters, the length of Gradient.
	Parameters int64
	// Steps is the number of optimizer steps taken.
	Steps int64
	// ReducesGradients is true when the policy's workers all-reduce gradients
	// among themselves inside Step.
	ReducesGradients bool
	// Sharded is true when the policy's workers hold the model sharded: every call
	// that runs the model, and Save and Export, is a collective of all of them.
	Sharded bool
	// ModelConfigSHA256 is the SHA-256 (hex) of the loaded model folder's
	// config.json; empty for a model without one.
	ModelConfigSHA256 string
	// Encoder names the sentence encoder Embed uses, and EncoderSHA256 is the
	// SHA-256 (hex) of its weights; both empty without one.
	Encoder, EncoderSHA256 string
}

// SampleOptions are the options of Generate, as GenerateRequest gives them. A
// Policy gets them with the defaults filled in.
type SampleOptions struct {
	// Samples is the number of candidates per prompt (G); 0 means 1.
	Samples int
	// Temperature divides the logits before sampling; 0 means 1.
	Temperature float64
	// Greedy takes the most likely choice at every token instead of sampling.
	Greedy bool
	// Seed keys the sampling.
	Seed uint64
	// MaxTokens caps the number of tokens of an answer; 0 means no cap.
	MaxTokens int
}

// ScoreOptions are the options of LogProbs, as LogProbsRequest gives them. The
// zero value scores under the current policy only.
type ScoreOptions struct {
	// Reference also scores under the reference policy.
	Reference bool
	// ReferenceOnly skips the current policy: TokenLogProbs.Current stays empty.
	ReferenceOnly bool
}

// StepOptions are the options of one AdamW step; a Policy gets them with the
// defaults filled in (DefaultBeta1, DefaultBeta2 and DefaultEpsilon for zeros).
// With g the gradient, clipped to global norm MaxGradNorm (when positive) by
// g <- g * min(1, MaxGradNorm / (|g| + 1e-6)), and t the step number counting
// this one:
//
//	m     <- Beta1 m + (1 - Beta1) g
//	v     <- Beta2 v + (1 - Beta2) g^2
//	theta <- theta - LearningRate * WeightDecay * theta
//	theta <- theta - LearningRate * (m / (1 - Beta1^t)) / (sqrt(v / (1 - Beta2^t)) + Epsilon)
//
// which is PyTorch's AdamW (decoupled weight decay, bias correction).
type StepOptions struct {
	LearningRate, WeightDecay float64
	Beta1, Beta2, Epsilon     float64
	MaxGradNorm               float64
	// Gradient, when not empty, is applied instead of the accumulated gradient.
	Gradient []float32
}

// The default AdamW coefficients, used when a step leaves them 0.
const (
	DefaultBeta1   = 0.9
	DefaultBeta2   = 0.999
	DefaultEpsilon = 1e-8
)

// ErrNoExport marks an Export call to a member whose policy is no Hugging Face model:
// the in-process CPU policy, or a worker that does not implement Export.
var ErrNoExport = errors.New("worker: no Hugging Face model to export")

// ErrNoEncoder marks an Embed call to a member that has no sentence encoder: the
// in-process CPU policy, or a worker that does not implement Embed.
var ErrNoEncoder = errors.New("the worker has no sentence encoder")

// ErrInvalid marks errors caused by the request rather than the worker.
var ErrInvalid = errors.New("invalid request")

// ErrNotConfigured is returned by calls made before Configure or Load.
var ErrNotConfigured = errors.New("worker: not configured: call Configure (or Load) first")
