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

package v1alpha1

import "strconv"

// AlgorithmName is the training method of the main epochs.
// +kubebuilder:validation:Enum=espo;grpo;sft
type AlgorithmName string

// The training methods.
const (
	// AlgorithmESPO is episode-wise policy optimization: episodic sampler, stage
	// rewards fused with the COUT episode reward.
	AlgorithmESPO AlgorithmName = "espo"
	// AlgorithmGRPO is plain step-wise GRPO: steps shuffled independently, no COUT.
	AlgorithmGRPO AlgorithmName = "grpo"
	// AlgorithmSFT is supervised fine-tuning only (cross-entropy on the demonstrations).
	AlgorithmSFT AlgorithmName = "sft"
)

// KLEstimator is the estimator of the KL divergence to the reference policy.
// +kubebuilder:validation:Enum=k1;k2;k3
type KLEstimator string

// The KL estimators, with r = logp_ref - logp.
const (
	// KLK1 is -r.
	KLK1 KLEstimator = "k1"
	// KLK2 is r^2 / 2.
	KLK2 KLEstimator = "k2"
	// KLK3 is exp(r) - r - 1 ("low_var_kl"), clamped to [-10, 10].
	KLK3 KLEstimator = "k3"
)

// LossAggregation is how per-token losses are averaged into the objective.
// +kubebuilder:validation:Enum=token-mean;seq-mean-token-mean;seq-mean-token-sum
type LossAggregation string

// The loss aggregation modes.
const (
	// LossTokenMean averages over all tokens of all candidates.
	LossTokenMean LossAggregation = "token-mean"
	// LossSeqMeanTokenMean averages tokens within a candidate, then candidates (the
	// ESPO paper's choice).
	LossSeqMeanTokenMean LossAggregation = "seq-mean-token-mean"
	// LossSeqMeanTokenSum sums tokens within a candidate, then averages candidates.
	LossSeqMeanTokenSum LossAggregation = "seq-mean-token-sum"
)

// AlgorithmSpec is the training recipe. The defaults are the ESPO paper's (EasyR1's)
// settings: 1 epoch of SFT, 6 epochs of ESPO, G = 5, one episode per batch.
// +kubebuilder:validation:XValidation:rule="!has(self.maxStepsPerBatch) || !has(self.episodesPerBatch) || self.episodesPerBatch == 1",message="episodesPerBatch and maxStepsPerBatch are two ways to size a batch: set one (leave episodesPerBatch at 1 with maxStepsPerBatch)"
type AlgorithmSpec struct {
	// Name is the method of the main epochs: espo (default), grpo or sft.
	// +optional
	// +kubebuilder:default=espo
	Name AlgorithmName `json:"name,omitempty"`

	// SFTEpochs is the number of supervised cold-start epochs before the main ones;
	// 0 skips the cold start. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	SFTEpochs *int32 `json:"sftEpochs,omitempty"`

	// Epochs is the number of epochs of the chosen method. Default 6.
	// +optional
	// +kubebuilder:default=6
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Epochs int32 `json:"epochs,omitempty"`

	// GroupSize is G, the number of candidate answers sampled per step; advantages are
	// normalised within each group, so it is at least 2. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=64
	GroupSize int32 `json:"groupSize,omitempty"`

	// EpisodesPerBatch is the number of whole episodes per optimizer step. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	EpisodesPerBatch int32 `json:"episodesPerBatch,omitempty"`

	// MaxStepsPerBatch, when set, sizes batches by steps instead of episodes: each
	// batch takes as many whole episodes, in their shuffled order, as fit in this
	// many steps, and an episode longer than that forms a batch alone. It bounds the
	// candidates of one optimizer step (maxStepsPerBatch x groupSize), which is what
	// GPU memory limits. Leave episodesPerBatch at 1 when you set it. grpo keeps as
	// many batches per epoch as the episodic plan of its first epoch.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	MaxStepsPerBatch *int32 `json:"maxStepsPerBatch,omitempty"`

	// LearningRate of the AdamW optimizer, in (0, 1]. Default "1e-6" (for a 3B VLM;
	// the CPU reference policy learns with larger rates, such as "1e-3").
	// +optional
	// +kubebuilder:default="1e-6"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 1.0)",message="must be greater than 0 and at most 1"
	LearningRate Decimal `json:"learningRate,omitempty"`

	// SFTLearningRate is the learning rate of the SFT epochs (the cold start, and
	// every epoch of algorithm sft), in (0, 1]. Unset: SFTLearningRateFactor (10)
	// times learningRate, at most 1: imitating the demonstrations takes steps ten
	// times those of the reinforcement epochs, as RL fine-tuning recipes do (an SFT
	// rate of 1e-5 before GRPO at 1e-6). Reinforcement at the cold start's rate
	// undoes the decisions it taught (docs/results-discussion.md).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 1.0)",message="sftLearningRate must be greater than 0 and at most 1, such as \"1e-5\""
	SFTLearningRate Decimal `json:"sftLearningRate,omitempty"`

	// MaxGradNorm clips the global gradient norm before each optimizer step; "0"
	// disables clipping. Default "1.0".
	// +optional
	// +kubebuilder:default="1.0"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0)",message="must be at least 0"
	MaxGradNorm Decimal `json:"maxGradNorm,omitempty"`

	// SamplingTemperature is the temperature at which candidate answers are sampled,
	// greater than 0. Default "1.0".
	// +optional
	// +kubebuilder:default="1.0"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 10.0)",message="must be greater than 0 and at most 10"
	SamplingTemperature Decimal `json:"samplingTemperature,omitempty"`

	// Optimizer holds the AdamW constants and the learning-rate schedule. Unset: the
	// defaults below, which are the trainer's constants before the section existed
	// (betas 0.9 and 0.999, epsilon 1e-8, weight decay 0.01, a constant rate without
	// warm-up).
	// +optional
	// +kubebuilder:default={}
	Optimizer *OptimizerSpec `json:"optimizer,omitempty"`

	// Clip bounds the importance ratio in the PPO-style objective.
	// +optional
	// +kubebuilder:default={}
	Clip ClipSpec `json:"clip,omitempty"`

	// KL is the penalty that keeps the policy near the frozen reference policy.
	// +optional
	// +kubebuilder:default={}
	KL KLSpec `json:"kl,omitempty"`

	// SamplerCorrection corrects the policy gradient for answers sampled by an
	// engine other than the policy (spec.model.rollout.engine vllm), whose
	// log-probs differ from the trainer's: truncated importance sampling. Unset: on
	// with a cap of "2" for the vllm engine, off for huggingface.
	// +optional
	SamplerCorrection *SamplerCorrectionSpec `json:"samplerCorrection,omitempty"`

	// LossAggregation is how per-token losses are averaged: token-mean,
	// seq-mean-token-mean (default, the paper's) or seq-mean-token-sum.
	// +optional
	// +kubebuilder:default=seq-mean-token-mean
	LossAggregation LossAggregation `json:"lossAggregation,omitempty"`

	// Seed drives every random choice of the run (episode order, sampling, weight
	// initialisation), so a run is reproducible and resumes identically. Default 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`
}

// LRSchedule is how the learning rate changes over the run's optimizer steps after
// the warm-up.
// +kubebuilder:validation:Enum=constant;linear;cosine
type LRSchedule string

// The learning-rate schedules (those of transformers' get_constant_schedule_with_warmup,
// get_linear_schedule_with_warmup and get_cosine_schedule_with_warmup).
const (
	// ScheduleConstant keeps the learning rate after the warm-up.
	ScheduleConstant LRSchedule = "constant"
	// ScheduleLinear decays it linearly to 0 at the run's end.
	ScheduleLinear LRSchedule = "linear"
	// ScheduleCosine decays it along half a cosine to 0 at the run's end.
	ScheduleCosine LRSchedule = "cosine"
)

// The optimizer's defaults: the AdamW constants the trainer sent before
// spec.algorithm.optimizer existed, so that a job that sets none trains as before.
const (
	DefaultBeta1       Decimal = "0.9"
	DefaultBeta2       Decimal = "0.999"
	DefaultEpsilon     Decimal = "1e-8"
	DefaultWeightDecay Decimal = "0.01"
)

// OptimizerSpec is the AdamW optimizer of every optimizer step and its learning-rate
// schedule. Step s of a run of T optimizer steps (s = 0 .. T-1, the SFT cold start's
// steps included: T is status.training.totalSteps), with W warm-up steps and the
// learning rate lr, uses
//
//	s < W:              lr * s / W
//	constant, s >= W:   lr
//	linear, s >= W:     lr * (T - s) / max(1, T - W)
//	cosine, s >= W:     lr * (1 + cos(pi * (s - W) / max(1, T - W))) / 2
//
// as the HF Trainer and TRL do (the first step of a warm-up has rate 0). The rate of
// the last step is lr / (T - W) for linear, not 0. With W >= T the run only warms up.
type OptimizerSpec struct {
	// Beta1 is AdamW's decay of the gradient's running mean, in (0, 1). Default
	// "0.9".
	// +optional
	// +kubebuilder:default="0.9"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) < 1.0)",message="optimizer.beta1 must be greater than 0 and less than 1, such as \"0.9\" (0 is not allowed: the worker protocol reads a beta of 0 as unset and would use 0.9)"
	Beta1 Decimal `json:"beta1,omitempty"`

	// Beta2 is AdamW's decay of the squared gradient's running mean, in (0, 1).
	// Default "0.999".
	// +optional
	// +kubebuilder:default="0.999"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) < 1.0)",message="optimizer.beta2 must be greater than 0 and less than 1, such as \"0.999\" (0 is not allowed: the worker protocol reads a beta of 0 as unset and would use 0.999)"
	Beta2 Decimal `json:"beta2,omitempty"`

	// Epsilon is added to AdamW's denominator, greater than 0. Default "1e-8".
	// +optional
	// +kubebuilder:default="1e-8"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0)",message="optimizer.epsilon must be greater than 0, such as \"1e-8\""
	Epsilon Decimal `json:"epsilon,omitempty"`

	// WeightDecay is AdamW's decoupled weight decay, at least 0; "0" turns it off.
	// Default "0.01".
	// +optional
	// +kubebuilder:default="0.01"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0)",message="optimizer.weightDecay must be at least 0, such as \"0.01\" (\"0\" turns it off)"
	WeightDecay Decimal `json:"weightDecay,omitempty"`

	// WarmupSteps is the number of optimizer steps over which the learning rate rises
	// linearly from 0 to learningRate, at least 0. Default 0 (no warm-up).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	WarmupSteps int32 `json:"warmupSteps,omitempty"`

	// Schedule is the learning rate after the warm-up: constant (default), linear or
	// cosine, which decay to 0 at the end of the run's optimizer steps.
	// +optional
	// +kubebuilder:default=constant
	Schedule LRSchedule `json:"schedule,omitempty"`
}

// ClipSpec bounds the importance ratio rho: clip(rho, 1 - low, 1 + high), and for
// negative advantages at most dual * |A| (dual clip).
type ClipSpec struct {
	// Low is eps_low, in (0, 1). Default "0.2".
	// +optional
	// +kubebuilder:default="0.2"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) < 1.0)",message="must be greater than 0 and less than 1"
	Low Decimal `json:"low,omitempty"`

	// High is eps_high, greater than 0 (at most 10). Default "0.3".
	// +optional
	// +kubebuilder:default="0.3"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 10.0)",message="must be greater than 0 and at most 10"
	High Decimal `json:"high,omitempty"`

	// Dual is the dual-clip constant c for negative advantages, greater than 1.
	// Default "3.0".
	// +optional
	// +kubebuilder:default="3.0"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 1.0)",message="must be greater than 1"
	Dual Decimal `json:"dual,omitempty"`
}

// KLSpec is the KL penalty beta * KL(policy || reference).
type KLSpec struct {
	// Coefficient is beta, at least 0; "0" drops the penalty. Default "0.01".
	// +optional
	// +kubebuilder:default="0.01"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0)",message="must be at least 0"
	Coefficient Decimal `json:"coefficient,omitempty"`

	// Estimator is k1, k2 or k3 (default, "low_var_kl").
	// +optional
	// +kubebuilder:default=k3
	Estimator KLEstimator `json:"estimator,omitempty"`
}

// SamplerCorrectionSpec is the truncated importance sampling (TIS) between the
// trainer's policy and the engine that sampled the answers: each token's loss
// weight is multiplied by the constant
//
//	min(exp(logp_old - logp_sampler), cap)
//
// so that the gradient is an expectation under the trainer's policy though the
// answers came from the engine (docs/algorithm.md, "Off-policy correction for a
// serving engine"). It applies where the worker reports the sampler's log-probs
// (the vllm engine); the huggingface engine's sampler is the policy itself.
type SamplerCorrectionSpec struct {
	// Cap is the truncation C of the importance weight: "0" turns the correction
	// off, otherwise at least 1. Unset: "2" with spec.model.rollout.engine vllm,
	// "0" (off) with huggingface, whose sampler is the trainer's policy
	// (AlgorithmSpec.SamplerCorrectionCap).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || double(self) == 0.0 || double(self) >= 1.0",message="samplerCorrection.cap must be 0 (off) or at least 1, such as \"2\": a cap below 1 would shrink the weight of every token the engine and the policy agree on"
	Cap Decimal `json:"cap,omitempty"`
}

// SFTLearningRateFactor is how many times learningRate the SFT epochs' rate is when
// spec.algorithm.sftLearningRate is unset.
const SFTLearningRateFactor = 10

// SFTRate is the learning rate of the SFT epochs: spec.algorithm.sftLearningRate
// when set, else min(1, SFTLearningRateFactor * learningRate), written with 15
// significant digits (so "1e-3" gives "0.01", not 10 * 0.001's float). A
// learningRate that is no number is returned as it is, for its own field's error.
func (a *AlgorithmSpec) SFTRate() Decimal {
	if a.SFTLearningRate != "" {
		return a.SFTLearningRate
	}
	lr, err := a.LearningRate.Float64()
	if err != nil {
		return a.LearningRate
	}
	return Decimal(strconv.FormatFloat(min(1, SFTLearningRateFactor*lr), 'g', 15, 64))
}

// DefaultVLLMSamplerCorrectionCap is spec.algorithm.samplerCorrection.cap's default
// with the vllm engine.
const DefaultVLLMSamplerCorrectionCap Decimal = "2"

// SamplerCorrectionCap is the truncation cap of the sampler correction that the
// trainer uses for a job whose policy samples with engine: the cap set, else
// DefaultVLLMSamplerCorrectionCap for vllm and "0" (off) for huggingface. The
// default follows the engine, so the API server stores none.
func (a *AlgorithmSpec) SamplerCorrectionCap(engine RolloutEngine) Decimal {
	switch {
	case a.SamplerCorrection != nil && a.SamplerCorrection.Cap != "":
		return a.SamplerCorrection.Cap
	case engine == RolloutVLLM:
		return DefaultVLLMSamplerCorrectionCap
	}
	return "0"
}

// RewardsSpec holds every reward of ESPO. A candidate answer's step reward is
// format + (gui | intent | decision, by the step's stage); an episode's COUT reward is
// added to every step's advantage with weight cout.weight. Weights are decimals of any
// sign; the defaults are the ESPO paper's.
type RewardsSpec struct {
	// Format is R_format, given to an answer that parses in the GUI-R1 format
	// (<think>...</think><answer>[...]</answer>). Default "0.5".
	// +optional
	// +kubebuilder:default="0.5"
	Format Decimal `json:"format,omitempty"`

	// GUI rewards the GUI-execution steps (click, type, scroll, ...).
	// +optional
	// +kubebuilder:default={}
	GUI GUIRewards `json:"gui,omitempty"`

	// Intent rewards the item-pool step, where the user's need is inferred.
	// +optional
	// +kubebuilder:default={}
	Intent IntentRewards `json:"intent,omitempty"`

	// Decision rewards the personalized recommendation steps (Yes or No per item).
	// +optional
	// +kubebuilder:default={}
	Decision DecisionRewards `json:"decision,omitempty"`

	// COUT is the Chain-of-User-Thought episode reward.
	// +optional
	// +kubebuilder:default={}
	COUT COUTRewards `json:"cout,omitempty"`
}

// GUIRewards is R_gui. An action's value is right when its click point falls inside the
// target element's box, or its text or scroll value matches (token-set F1 at least
// textF1Threshold).
type GUIRewards struct {
	// Exact is the reward when type and value are both right. Default "0.5".
	// +optional
	// +kubebuilder:default="0.5"
	Exact Decimal `json:"exact,omitempty"`

	// TypeOnly is the reward when only the action type is right. Default "0.2".
	// +optional
	// +kubebuilder:default="0.2"
	TypeOnly Decimal `json:"typeOnly,omitempty"`

	// ValueOnly is the reward when only the value is right. Default "-0.2".
	// +optional
	// +kubebuilder:default="-0.2"
	ValueOnly Decimal `json:"valueOnly,omitempty"`

	// Wrong is the reward when neither is right. Default "-0.5".
	// +optional
	// +kubebuilder:default="-0.5"
	Wrong Decimal `json:"wrong,omitempty"`

	// TextF1Threshold is the token-set F1 from which a text value counts as right, in
	// [0, 1]. Default "0.5" (the GUI-R1 rule).
	// +optional
	// +kubebuilder:default="0.5"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be between 0 and 1"
	TextF1Threshold Decimal `json:"textF1Threshold,omitempty"`
}

// The intent thresholds of a job that sets none (IntentRewards.Tau).
const (
	// DefaultIntentThreshold is tau for the built-in hashed embedder and an
	// embedding service.
	DefaultIntentThreshold Decimal = "0.75"
	// DefaultEncoderIntentThreshold is tau for the workers' sentence encoder
	// (embedder.worker): on generated hard data of a seed the tests never judge,
	// all-MiniLM-L6-v2 passes 95.8% of paraphrased requirements at 0.80 and fails
	// 97.5% of requirements with their values deleted and 97.9% of another user's,
	// where 0.75 lets 10.8% of the values-deleted ones through (docs/user-guide.md).
	DefaultEncoderIntentThreshold Decimal = "0.80"
)

// Tau is the intent threshold the rewards and IntentAcc use: Threshold when set, else
// DefaultEncoderIntentThreshold with the workers' sentence encoder and
// DefaultIntentThreshold otherwise. Cosines differ from model to model, so the
// default follows the judge; the API server stores no default for the field.
func (r *IntentRewards) Tau() Decimal {
	switch {
	case r.Threshold != "":
		return r.Threshold
	case r.Embedder != nil && r.Embedder.Worker != nil:
		return DefaultEncoderIntentThreshold
	}
	return DefaultIntentThreshold
}

// IntentRewards is Intent_acc, the reward of the item-pool step.
//
// +kubebuilder:validation:XValidation:rule="!has(self.match) || self.match != 'slots' || (!has(self.threshold) && !has(self.embedder))",message="with match: slots every intent is judged slot by slot, so threshold and embedder, which judge by embedding similarity, would never be used: remove them, or set match auto or embedding"
// +kubebuilder:validation:XValidation:rule="!has(self.match) || self.match != 'embedding' || !has(self.slotScore) || self.slotScore != 'f1'",message="slotScore f1 scores intents judged slot by slot, and match: embedding judges none so: remove slotScore (or set it to all), or set match auto or slots",fieldPath=".slotScore"
type IntentRewards struct {
	// Correct is the reward when the type is pool_found and the cosine similarity of
	// the predicted and the true intent is at least Threshold. Default "0.5".
	// +optional
	// +kubebuilder:default="0.5"
	Correct Decimal `json:"correct,omitempty"`

	// Threshold is tau, the cosine similarity from which an intent counts as right, in
	// [0, 1]. Unset: the judge's own (IntentRewards.Tau): "0.80" with embedder.worker
	// (chosen for all-MiniLM-L6-v2 on generated data), else "0.75".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be between 0 and 1"
	Threshold Decimal `json:"threshold,omitempty"`

	// Embedder embeds the predicted and the true intents for their cosine similarity:
	// an embedding service (endpoint), or a sentence encoder the policy workers load
	// (worker). Unset: the built-in hashed word and character n-gram embedder, which
	// needs no service but sees shared words, not meaning.
	// +optional
	Embedder *EmbedderSpec `json:"embedder,omitempty"`

	// Match says how a predicted intent is judged. auto (default): slot by slot for
	// an episode that carries preferences, by embedding similarity for one that does
	// not. slots: slot by slot always; a run whose data has an item-pool step without
	// preferences fails at start. embedding: cosine similarity of the embeddings
	// (embedder, or the built-in one) against threshold, always. Slot by slot, an
	// intent is right when it names every preference value of the episode and no
	// other value of the same slots (values matched as whole word sequences,
	// ignoring case and punctuation, longest first, so "Economy" is not found
	// inside "Premium economy" and "$10-20" not inside "$10-200").
	// +optional
	// +kubebuilder:default=auto
	Match IntentMatch `json:"match,omitempty"`

	// SlotScore is the reward of a slot-judged intent. all (default): correct when
	// the intent is right, else 0. f1: correct times the slot F1 of the intent, a
	// dense reward (precision over the slot values the intent names, recall over the
	// episode's preferences). IntentAcc always counts right intents only.
	// +optional
	// +kubebuilder:default=all
	SlotScore IntentSlotScore `json:"slotScore,omitempty"`
}

// IntentMatch says how a predicted intent is judged.
// +kubebuilder:validation:Enum=auto;slots;embedding
type IntentMatch string

// The intent matches.
const (
	// IntentMatchAuto judges by slots where the episode carries preferences, else by
	// embedding similarity.
	IntentMatchAuto IntentMatch = "auto"
	// IntentMatchSlots judges by slots; every episode must carry preferences.
	IntentMatchSlots IntentMatch = "slots"
	// IntentMatchEmbedding judges by embedding similarity against the threshold.
	IntentMatchEmbedding IntentMatch = "embedding"
)

// IntentSlotScore is the reward of a slot-judged intent.
// +kubebuilder:validation:Enum=all;f1
type IntentSlotScore string

// The slot scores.
const (
	// IntentSlotScoreAll rewards a right intent only.
	IntentSlotScoreAll IntentSlotScore = "all"
	// IntentSlotScoreF1 rewards the slot F1 of the intent.
	IntentSlotScoreF1 IntentSlotScore = "f1"
)

// The bounds of EmbedderSpec's numbers; the CRD's markers repeat them.
const (
	// MaxEmbedderTimeoutSeconds bounds EmbedderSpec.TimeoutSeconds.
	MaxEmbedderTimeoutSeconds = 600
	// MaxEmbedderBatchSize bounds EmbedderSpec.BatchSize (the usual limit of inputs per
	// request of the OpenAI-compatible embeddings API).
	MaxEmbedderBatchSize = 2048
)

// EmbedderSpec says what embeds the intents, one of two:
//
//   - endpoint: an embedding service that speaks the OpenAI-compatible embeddings
//     API: the trainer POSTs {"model": model, "input": [texts...]} to endpoint and
//     reads {"data": [{"index": i, "embedding": [floats]}, ...]}. The service is
//     called by trainer rank 0 only, with the bearer token of APIKeySecretRef when it
//     is set, else with no credentials.
//   - worker: a sentence-transformers model folder that the PyTorch policy workers
//     load beside the policy; trainer rank 0 asks its first worker for the
//     embeddings (the worker protocol's Embed call), so no other deployment runs.
//
// +kubebuilder:validation:XValidation:rule="has(self.endpoint) != has(self.worker)",message="set exactly one of endpoint (an embedding service) and worker (a sentence encoder the policy workers load)"
// +kubebuilder:validation:XValidation:rule="!has(self.worker) || (!has(self.model) && !has(self.apiKeySecretRef))",message="model and apiKeySecretRef are an embedding service's: with worker, remove them (worker.model names the encoder)"
type EmbedderSpec struct {
	// Endpoint is the URL the trainer POSTs to, http or https, typically a Service in
	// the cluster: "http://embeddings.ml.svc:8080/v1/embeddings"; a port of 1-65535,
	// and no credentials in it (apiKeySecretRef holds a key).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="endpoint must be an http or https URL with a host, such as http://embeddings.ml.svc:8080/v1/embeddings"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[^ -~]')",message="endpoint has a character outside printable ASCII, such as a letter of another script that looks like a Latin one: retype the host in ASCII, and percent-encode any other character"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]+://[^/?#]*@')",message="endpoint must not hold credentials (user:password@host): the trainer copies the endpoint into its run config, events and logs; put the key in a Secret and name it in apiKeySecretRef"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]+://[^/?#@]*:[0-9]*([/?#]|$)') || self.matches('^[^:/?#]+://[^/?#@]*:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])([/?#]|$)')",message="the port of endpoint must be between 1 and 65535"
	Endpoint string `json:"endpoint,omitempty"`

	// Worker is a sentence encoder the policy workers load; only with
	// spec.model.worker cuda or external (whose worker must answer Embed).
	// +optional
	Worker *WorkerEmbedderSpec `json:"worker,omitempty"`

	// Model is sent as the request's "model"; empty omits it (for a service that
	// serves one model).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model,omitempty"`

	// TimeoutSeconds bounds each request (each Embed call, with worker), 1..600.
	// Default 30.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// BatchSize is the most texts sent in one request (one Embed call, with
	// worker), 1..2048. Default 256.
	// +optional
	// +kubebuilder:default=256
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2048
	BatchSize int32 `json:"batchSize,omitempty"`

	// APIKeySecretRef names the key of a Secret in the job's namespace that holds the
	// service's API key: the trainer then sends "Authorization: Bearer <key>" with
	// every request. The key reaches the trainer container only, as the environment
	// variable ESPO_EMBEDDER_API_KEY taken from the Secret by the kubelet: the operator
	// never reads it. A missing Secret or key keeps the trainer pod from starting
	// (CreateContainerConfigError), and an empty value fails the run. Unset: no
	// Authorization header.
	// +optional
	APIKeySecretRef *SecretKeyRef `json:"apiKeySecretRef,omitempty"`
}

// WorkerEmbedderSpec is a sentence encoder the policy workers load.
type WorkerEmbedderSpec struct {
	// Model is the sentence-transformers model folder (modules.json with a
	// Transformer, a Pooling and optionally a Normalize module, as
	// all-MiniLM-L6-v2 has), found as spec.model.pretrained is: a folder under
	// spec.model.weights when that is set (for example "all-MiniLM-L6-v2"), else a
	// path in the worker's image. The workers load local files only.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Model string `json:"model"`
}

// SecretKeyRef names one key of a Secret in the job's namespace. It is
// corev1.SecretKeySelector without "optional", and with a required name: a reference
// the job depends on must resolve, or the pod does not start.
type SecretKeyRef struct {
	// Name is the Secret's name, in the job's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key is the key in the Secret's data whose value is used.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && !self.startsWith('..')",message="key must not be '.' or start with '..'"
	Key string `json:"key"`
}

// DecisionRewards is R_dec, the reward of a recommendation step.
type DecisionRewards struct {
	// Correct is the reward when type and value (Yes or No) are both right.
	// Default "0.5".
	// +optional
	// +kubebuilder:default="0.5"
	Correct Decimal `json:"correct,omitempty"`

	// Wrong is the reward otherwise. Default "-0.5".
	// +optional
	// +kubebuilder:default="-0.5"
	Wrong Decimal `json:"wrong,omitempty"`
}

// COUTMode is how one episode-level COUT value is formed from G candidates per step.
// +kubebuilder:validation:Enum=episode;rollout
type COUTMode string

// The COUT modes.
const (
	// COUTEpisode averages each step's rewards over its G candidates, then applies the
	// COUT formulas once per episode.
	COUTEpisode COUTMode = "episode"
	// COUTRollout forms rollout g from candidate g of every step, computes COUT per
	// rollout and normalises it over the G rollouts.
	COUTRollout COUTMode = "rollout"
)

// COUTGates selects the terms of the COUT reward (for the paper's ablations).
// +kubebuilder:validation:Enum=both;gui;decision
type COUTGates string

// The COUT gate selections.
const (
	// COUTBothGates is phi * Intent_acc + psi * Intent_acc.
	COUTBothGates COUTGates = "both"
	// COUTGUIGate keeps the GUI-action term phi * Intent_acc only.
	COUTGUIGate COUTGates = "gui"
	// COUTDecisionGate keeps the decision term psi * Intent_acc only.
	COUTDecisionGate COUTGates = "decision"
)

// COUTRewards is the Chain-of-User-Thought reward of an episode:
//
//	phi = sigmoid(k * sum R_gui / R_gui_max), psi = sigmoid(k * sum R_dec / R_dec_max)
//	R_COUT = phi * Intent_acc + psi * Intent_acc
//
// added to every step's advantage as w * R_COUT.
type COUTRewards struct {
	// Temperature is k, greater than 0. Default "1.0".
	// +optional
	// +kubebuilder:default="1.0"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0)",message="must be greater than 0"
	Temperature Decimal `json:"temperature,omitempty"`

	// Weight is w, at least 0; "0" is the paper's no-COUT ablation. Default "1.0".
	// +optional
	// +kubebuilder:default="1.0"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0)",message="must be at least 0"
	Weight Decimal `json:"weight,omitempty"`

	// Mode is how R_COUT is formed from the G candidates of each step. episode
	// (default): each step's rewards are averaged over its candidates and one R_COUT
	// is added to every candidate of the episode. Training is teacher-forced, so a
	// value added to every candidate of a step has zero expected policy gradient
	// (E[grad log pi] = 0): episode mode cannot tell a better candidate from a worse
	// one; it only sharpens what was sampled and, through per-token normalisation,
	// biases answer length. rollout: candidate g of every step forms rollout g,
	// R_COUT is computed per rollout and normalised over the G rollouts, so it credits
	// each candidate for its own rollout's GUI actions, intent and decisions. In the
	// project's comparison (docs/results.md: hard generated data, 5 seeds) neither
	// mode measurably improved on w = 0 or on a shuffled-COUT control, so the default
	// stays episode, the paper's reading, which is harmless in expectation.
	// +optional
	// +kubebuilder:default=episode
	Mode COUTMode `json:"mode,omitempty"`

	// Gates keeps both COUT terms (default), only the GUI-action term (gui) or only
	// the decision term (decision).
	// +optional
	// +kubebuilder:default=both
	Gates COUTGates `json:"gates,omitempty"`

	// EmptyGate is the value of a gate over no steps: phi of an episode without GUI
	// steps, psi of one without decision steps, in [0, 1]. The paper leaves it open;
	// the default "0.5" = sigmoid(0) reads the empty sum as no evidence either way,
	// and "0" drops that term.
	// +optional
	// +kubebuilder:default="0.5"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be in [0, 1]"
	EmptyGate Decimal `json:"emptyGate,omitempty"`
}
