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

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerKind is the kind of policy worker, the process that holds the model and
// computes its log-probs and gradients.
// +kubebuilder:validation:Enum=cpu;cuda;external
type WorkerKind string

// The worker kinds.
const (
	// WorkerCPU is the pure-Go reference policy, in the operator's own image.
	WorkerCPU WorkerKind = "cpu"
	// WorkerCUDA is the project's PyTorch worker for Hugging Face models, one process
	// per GPU.
	WorkerCUDA WorkerKind = "cuda"
	// WorkerExternal is a worker the job does not run, reached at an endpoint.
	WorkerExternal WorkerKind = "external"
)

// ModelSpec is the policy being trained and the worker that computes it. (The rules
// test has(self.worker) only because the API server checks them against the empty
// default, before worker is defaulted; an unset worker counts as cpu, its default.)
//
// +kubebuilder:validation:XValidation:rule="!has(self.worker) || self.worker != 'external' || has(self.endpoint)",message="endpoint is required when worker is external",fieldPath=".endpoint"
// +kubebuilder:validation:XValidation:rule="self.worker == 'external' || !has(self.endpoint)",message="endpoint may be set only when worker is external",fieldPath=".endpoint"
// +kubebuilder:validation:XValidation:rule="self.worker != 'external' || (!has(self.image) && !has(self.command))",message="image and command may not be set when worker is external: the job does not run that worker"
// +kubebuilder:validation:XValidation:rule="self.worker == 'cpu' || !has(self.cpu)",message="cpu may be set only when worker is cpu",fieldPath=".cpu"
// +kubebuilder:validation:XValidation:rule="!has(self.worker) || self.worker != 'cuda' || has(self.pretrained) || has(self.initialCheckpoint)",message="a cuda worker needs pretrained or initialCheckpoint: the weights to start from",fieldPath=".pretrained"
// +kubebuilder:validation:XValidation:rule="!has(self.pretrained) || (has(self.worker) && self.worker != 'cpu')",message="pretrained may be set only when worker is cuda or external: the cpu policy loads no model (it starts from its seeded initialisation, or initialCheckpoint); set worker: cuda or remove pretrained",fieldPath=".pretrained"
// +kubebuilder:validation:XValidation:rule="!has(self.weights) || (has(self.worker) && self.worker == 'cuda')",message="weights may be set only when worker is cuda: the claim is mounted into the job's cuda worker containers, which the cpu policy and an external worker do not read; set worker: cuda or remove weights",fieldPath=".weights"
// +kubebuilder:validation:XValidation:rule="!has(self.dtype) || (has(self.worker) && self.worker != 'cpu')",message="dtype may be set only when worker is cuda or external: the cpu policy computes in float64; set worker: cuda or remove dtype",fieldPath=".dtype"
// +kubebuilder:validation:XValidation:rule="!has(self.lora) || (has(self.worker) && self.worker != 'cpu')",message="lora may be set only when worker is cuda or external: the cpu policy has no LoRA adapters; set worker: cuda or remove lora",fieldPath=".lora"
// +kubebuilder:validation:XValidation:rule="!has(self.gradientCheckpointing) || (has(self.worker) && self.worker != 'cpu')",message="gradientCheckpointing may be set only when worker is cuda or external; set worker: cuda or remove gradientCheckpointing",fieldPath=".gradientCheckpointing"
// +kubebuilder:validation:XValidation:rule="!has(self.attnImplementation) || (has(self.worker) && self.worker != 'cpu')",message="attnImplementation may be set only when worker is cuda or external; set worker: cuda or remove attnImplementation",fieldPath=".attnImplementation"
// +kubebuilder:validation:XValidation:rule="!has(self.maxNewTokens) || (has(self.worker) && self.worker != 'cpu')",message="maxNewTokens may be set only when worker is cuda or external: the cpu policy's answers are bounded by cpu.maxIntentWords; set worker: cuda or remove maxNewTokens",fieldPath=".maxNewTokens"
// +kubebuilder:validation:XValidation:rule="!has(self.maxPromptTokens) || (has(self.worker) && self.worker != 'cpu')",message="maxPromptTokens may be set only when worker is cuda or external; set worker: cuda or remove maxPromptTokens",fieldPath=".maxPromptTokens"
// +kubebuilder:validation:XValidation:rule="!has(self.rollout) || !has(self.rollout.engine) || self.rollout.engine != 'vllm' || (has(self.worker) && self.worker == 'cuda')",message="rollout.engine vllm runs only beside the project's PyTorch worker: set worker: cuda, or remove rollout (the cpu policy and an external worker sample their own answers)",fieldPath=".rollout.engine"
// +kubebuilder:validation:XValidation:rule="!has(self.rollout) || !has(self.rollout.maxModelLen) || !has(self.maxPromptTokens) || self.rollout.maxModelLen >= self.maxPromptTokens + (has(self.maxNewTokens) ? self.maxNewTokens : 256)",message="rollout.maxModelLen must be at least maxPromptTokens + maxNewTokens (an unset maxNewTokens counts as the worker's default, 256), or the engine refuses the longest prompt with its answer: raise maxModelLen or leave it unset",fieldPath=".rollout.maxModelLen"
// +kubebuilder:validation:XValidation:rule="!has(self.weights) || !has(self.pretrained) || (!self.pretrained.startsWith('/') && !self.pretrained.matches('(^|/)[.][.](/|$)'))",message="with weights, pretrained is a folder inside the weights claim's path (such as Qwen2.5-VL-3B-Instruct), mounted at /models: write it relative to the claim, without a leading '/' or '..'",fieldPath=".pretrained"
// +kubebuilder:validation:XValidation:rule="!has(self.attnImplementation) || !(self.attnImplementation in ['flash_attention_2', 'flash_attention_3']) || !has(self.dtype) || self.dtype != 'float32'",message="attnImplementation flash_attention_2 and flash_attention_3 compute in bfloat16 or float16 only, and dtype is float32: set dtype bfloat16 (the default) or float16, or attnImplementation sdpa",fieldPath=".attnImplementation"
// +kubebuilder:validation:XValidation:rule="!has(self.sharding) || self.sharding == 'replicated' || (has(self.worker) && self.worker == 'cuda')",message="sharding: sharded and hybrid split the project's PyTorch workers' model among them: set worker: cuda, or remove sharding (the cpu policy and an external worker hold their own model)",fieldPath=".sharding"
type ModelSpec struct {
	// Worker is the kind of policy worker: cpu (default; the Go reference policy),
	// cuda (PyTorch, Hugging Face models) or external (reached at endpoint).
	// +optional
	// +kubebuilder:default=cpu
	Worker WorkerKind `json:"worker,omitempty"`

	// Pretrained is the model a cuda worker loads from local files: a folder under
	// weights when that is set (for example "Qwen2.5-VL-3B-Instruct"), else a path in
	// the worker's image or a model id in its Hugging Face cache.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self != ''",message="pretrained must not be empty: name the model's folder, or remove pretrained"
	Pretrained string `json:"pretrained,omitempty"`

	// Weights is a claim holding pretrained models for a cuda worker, mounted read-only
	// at /models (ModelsMountPath) in every worker container; pretrained is then a
	// folder under the claim's path (the worker loads local files only, never a hub).
	// +optional
	Weights *VolumePath `json:"weights,omitempty"`

	// InitialCheckpoint starts the policy from a checkpoint written by an earlier job
	// instead of from Pretrained (or the CPU policy's seeded initialisation).
	// +optional
	InitialCheckpoint *VolumePath `json:"initialCheckpoint,omitempty"`

	// Image of the worker container. Default: the operator's image for cpu, the
	// operator's configured PyTorch worker image for cuda.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self != ''",message="model.image must not be empty: name an image, or remove image for the default"
	Image string `json:"image,omitempty"`

	// Command of the worker container, replacing the image's entrypoint. The worker
	// must serve the worker protocol on the address in $ESPO_WORKER_LISTEN.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self[0] != ''",message="the first item of command is the program the worker container runs, and it is empty: name the program (for example python), or remove command for the image's entrypoint"
	Command []string `json:"command,omitempty"`

	// Endpoint of an external worker, host:port with a port of 1-65535; required when
	// worker is external.
	// +optional
	Endpoint HostPort `json:"endpoint,omitempty"`

	// CPU holds the hyper-parameters of the CPU reference policy; only with worker
	// cpu. Unset: the defaults below.
	// +optional
	CPU *CPUPolicySpec `json:"cpu,omitempty"`

	// The fields below are the model settings of the PyTorch worker (cuda), sent to
	// every worker in Configure as the options named in each comment; an external
	// worker receives them too (it speaks the same protocol) and must understand them
	// or refuse them. The cpu policy has none of them: with worker cpu they are
	// refused. Unset, the worker's own default applies: its command-line flag, which
	// defaults to the environment variable ESPO_WORKER_<OPTION> (set through
	// trainer.env); a field set here wins over that variable.

	// DType is the compute dtype of the forward and backward passes on CUDA
	// (autocast; trainable weights stay float32): bfloat16, float16 or float32.
	// Option dtype. Unset: the worker's default, bfloat16.
	// +optional
	DType ModelDType `json:"dtype,omitempty"`

	// LoRA trains low-rank adapters on the frozen pretrained weights instead of every
	// weight (options lora_r, lora_alpha, lora_dropout, lora_targets). Unset: full
	// fine-tuning, unless the worker's environment sets ESPO_WORKER_LORA_R.
	// +optional
	LoRA *LoRASpec `json:"lora,omitempty"`

	// GradientCheckpointing recomputes activations in the backward pass instead of
	// keeping them: less GPU memory for about a third more compute. Option
	// gradient_checkpointing ("true" or "false"). Unset: the worker's default, off.
	// +optional
	GradientCheckpointing *bool `json:"gradientCheckpointing,omitempty"`

	// AttnImplementation is the attention kernel transformers loads the model with:
	// eager, sdpa (PyTorch's scaled_dot_product_attention), flex_attention (PyTorch's
	// flex attention), flash_attention_2 or flash_attention_3 (these two need a worker
	// image with the flash-attn package, which the project's image does not hold, a
	// GPU it supports (Hopper for 3) and a model that supports it). Option
	// attn_implementation. Unset: transformers' choice for the model (sdpa where the
	// model supports it).
	// +optional
	AttnImplementation AttnImplementation `json:"attnImplementation,omitempty"`

	// MaxNewTokens caps the tokens of each sampled answer, 1 to 32768. Option
	// max_new_tokens. Unset: the worker's default, 256 (96 for the test model tiny).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	MaxNewTokens int32 `json:"maxNewTokens,omitempty"`

	// MaxPromptTokens keeps only the last N tokens of a text-only prompt, at least 1
	// (at most 1048576). Option max_prompt_tokens. Unset: the whole prompt (256
	// tokens for the test model tiny).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxPromptTokens int32 `json:"maxPromptTokens,omitempty"`

	// Rollout is the engine that samples the candidate answers of the PyTorch worker
	// (cuda): its own Hugging Face generate (huggingface, the default) or a vLLM
	// engine beside it (vllm), with the engine's settings (options rollout_engine and
	// vllm_*). Unset: huggingface. With vllm the trainer corrects the gradient for
	// the difference between the engine's log-probs and the trainer's
	// (spec.algorithm.samplerCorrection).
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`

	// Sharding is how the PyTorch workers of every pod hold the model (option
	// sharding): replicated (the default), each the whole model, its gradient and
	// its AdamW moments, the gradients all-reduced at each step; sharded, FSDP2 over
	// all of them, each holding 1/N of the parameters, gradients and moments,
	// gathering one decoder layer at a time (and the whole model to sample with the
	// model's own generate); or hybrid, FSDP2 within each pod and replicated across
	// pods (HSDP): each worker holds 1/workersPerReplica, the layers are gathered over
	// the pod's own links, and only gradients cross between pods. Sharded trains what
	// one GPU cannot hold with AdamW (about 16 bytes a parameter replicated);
	// docs/user-guide.md has a table by model size and worker count. A sharded or
	// hybrid job's checkpoints hold every worker's shards (every pod mounts the
	// checkpoint claim), and resume at any worker count and either sharding. Only
	// with worker cuda.
	// +optional
	Sharding ModelSharding `json:"sharding,omitempty"`
}

// ModelSharding is how the PyTorch workers hold the model.
// +kubebuilder:validation:Enum=replicated;sharded;hybrid
type ModelSharding string

// The shardings of spec.model.sharding.
const (
	// ShardingReplicated: every worker holds the whole model.
	ShardingReplicated ModelSharding = "replicated"
	// ShardingSharded: FSDP2 over every worker of every pod.
	ShardingSharded ModelSharding = "sharded"
	// ShardingHybrid: FSDP2 over the workers of each pod, replicated across pods.
	ShardingHybrid ModelSharding = "hybrid"
)

// Shards reports whether the workers split the model among them: sharded or hybrid.
func (m *ModelSpec) Shards() bool {
	return m.Sharding == ShardingSharded || m.Sharding == ShardingHybrid
}

// RolloutEngine is what samples the candidate answers of a PyTorch worker.
// +kubebuilder:validation:Enum=huggingface;vllm
type RolloutEngine string

// The rollout engines.
const (
	// RolloutHuggingFace samples with the training model's own generate, in the
	// worker process: the sampler is the policy.
	RolloutHuggingFace RolloutEngine = "huggingface"
	// RolloutVLLM samples with a vLLM engine that the PyTorch worker runs as a child
	// process on the same GPU, serving the policy's current weights.
	RolloutVLLM RolloutEngine = "vllm"
)

// The defaults of the vllm engine, applied by the worker when a field is unset (the
// API server stores none, so that the trainer sends only what a job sets).
const (
	// DefaultVLLMGPUMemoryUtilization is the fraction of the GPU's memory vLLM may
	// take: the trainer's weights, gradients and optimizer state share the GPU.
	DefaultVLLMGPUMemoryUtilization Decimal = "0.3"
	// DefaultVLLMCPUKVCacheGiB is the KV cache of vLLM's CPU backend, in GiB.
	DefaultVLLMCPUKVCacheGiB = 4
)

// RolloutSpec is the engine that samples a PyTorch worker's candidate answers.
// The vllm settings are sent to the worker as Configure options, each only when
// set; with engine huggingface they are refused, as it would ignore them.
//
// +kubebuilder:validation:XValidation:rule="(has(self.engine) && self.engine == 'vllm') || (!has(self.gpuMemoryUtilization) && !has(self.maxModelLen) && !has(self.enforceEager) && !has(self.cpuKVCacheGiB))",message="gpuMemoryUtilization, maxModelLen, enforceEager and cpuKVCacheGiB are settings of the vllm engine, which the huggingface engine would ignore: set engine: vllm or remove them"
type RolloutSpec struct {
	// Engine samples the candidate answers. huggingface (default): the training
	// model's generate in the worker process. vllm: a vLLM engine that the PyTorch
	// worker starts as a child process on its GPU and keeps at the current weights,
	// a serving-grade sampler (paged attention, continuous batching) that is much
	// faster than generate for G answers of a long prompt. Its log-probs differ a
	// little from the trainer's (other kernels and precision), so the trainer
	// re-weights each token by truncated importance sampling
	// (spec.algorithm.samplerCorrection) and reports the mismatch in
	// status.training.samplerMismatch. Needs worker: cuda. Option rollout_engine,
	// sent only for vllm.
	// +optional
	// +kubebuilder:default=huggingface
	Engine RolloutEngine `json:"engine,omitempty"`

	// GPUMemoryUtilization is the fraction of the GPU's memory the vllm engine may
	// take for its weights and KV cache, greater than 0 and at most 1 ("0.3"). The
	// trainer's model, gradients and optimizer state share the GPU, so leave them
	// room. Option vllm_gpu_memory_utilization. Unset: "0.3".
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 1.0)",message="gpuMemoryUtilization must be greater than 0 and at most 1: the fraction of the GPU's memory vLLM may take, such as \"0.3\""
	GPUMemoryUtilization Decimal `json:"gpuMemoryUtilization,omitempty"`

	// MaxModelLen is the longest sequence, prompt and answer, the vllm engine
	// serves, at least 1: it sizes the KV cache of one sequence. It must be at
	// least maxPromptTokens + maxNewTokens when maxPromptTokens is set. Option
	// vllm_max_model_len. Unset: maxPromptTokens + maxNewTokens when both are set,
	// else the model's own (max_position_embeddings).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxModelLen int32 `json:"maxModelLen,omitempty"`

	// EnforceEager skips vLLM's CUDA graph capture: the engine starts faster and
	// takes less memory, and decodes more slowly. Option vllm_enforce_eager ("true"
	// or "false"). Unset: false (graphs are captured).
	// +optional
	EnforceEager *bool `json:"enforceEager,omitempty"`

	// CPUKVCacheGiB is the KV-cache size, in GiB, of vLLM's CPU backend, for a
	// PyTorch worker run on a CPU (tests, a machine without a GPU); 1 to 1024. On a
	// GPU gpuMemoryUtilization sizes the cache instead. Option vllm_cpu_kv_cache_gib.
	// Unset: 4.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	CPUKVCacheGiB int32 `json:"cpuKVCacheGiB,omitempty"`
}

// Engine returns the rollout engine of the job's policy worker: spec.model.rollout's
// engine, huggingface when unset.
func (m *ModelSpec) Engine() RolloutEngine {
	if m.Rollout == nil || m.Rollout.Engine == "" {
		return RolloutHuggingFace
	}
	return m.Rollout.Engine
}

// ModelDType is the compute dtype of a PyTorch worker.
// +kubebuilder:validation:Enum=bfloat16;float16;float32
type ModelDType string

// The compute dtypes.
const (
	DTypeBFloat16 ModelDType = "bfloat16"
	DTypeFloat16  ModelDType = "float16"
	DTypeFloat32  ModelDType = "float32"
)

// AttnImplementation is a transformers attention implementation (the
// attn_implementation argument of from_pretrained).
// +kubebuilder:validation:Enum=eager;sdpa;flex_attention;flash_attention_2;flash_attention_3
type AttnImplementation string

// The attention implementations.
const (
	AttnEager           AttnImplementation = "eager"
	AttnSDPA            AttnImplementation = "sdpa"
	AttnFlexAttention   AttnImplementation = "flex_attention"
	AttnFlashAttention2 AttnImplementation = "flash_attention_2"
	AttnFlashAttention3 AttnImplementation = "flash_attention_3"
)

// LoRASpec configures LoRA adapters (peft): each targeted linear layer W gains a
// trainable update (alpha/rank)·B·A of rank rank, B starting at zero, while W stays
// frozen. The reference policy is then the base model until the trainer snapshots
// the adapters.
type LoRASpec struct {
	// Rank is the rank r of each adapter, 1 to 1024 (16 is a common choice). Option
	// lora_r. To train every weight instead, leave lora unset.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Rank int32 `json:"rank"`

	// Alpha scales the adapters' update by alpha/rank, 1 to 4096. Option lora_alpha.
	// Unset: the worker's default, 2 × rank.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Alpha int32 `json:"alpha,omitempty"`

	// Dropout is the dropout probability on the adapters' input, at least 0 and less
	// than 1 ("0.05"). Option lora_dropout. Unset: the worker's default, 0.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) < 1.0)",message="must be at least 0 and less than 1"
	Dropout Decimal `json:"dropout,omitempty"`

	// TargetModules are the names of the modules that get adapters, matched as peft
	// matches a list: a module whose name is one of them or ends in "." and one of
	// them (q_proj, v_proj). Option lora_targets, joined with commas. Unset: every
	// linear layer but the output head (peft's "all-linear").
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_.]+$`
	TargetModules []string `json:"targetModules,omitempty"`
}

// CPUPolicySpec is the shape of the pure-Go reference policy: hashed features of
// each decision's options and context, one tanh hidden layer, a softmax per decision.
type CPUPolicySpec struct {
	// Architecture is what the policy reads. tokens: only what a screen shows (the
	// words of the instruction, the history's actions and the elements they touched,
	// the screen and the candidate's page), learning which history words matter and
	// that equal words match through tied word embeddings and a learned attention.
	// features (default): also the structured attributes of elements and the
	// candidate item, with hand-built evidence features that compare the choices the
	// history made with the candidate's attributes; an upper bound that no model
	// reading pixels or text has.
	// +optional
	// +kubebuilder:default=features
	Architecture CPUArchitecture `json:"architecture,omitempty"`

	// HiddenSize is the width of the policy's hidden layer. Default 32.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	HiddenSize int32 `json:"hiddenSize,omitempty"`

	// FeatureBits is log2 of the rows of the hashed feature table: 15 gives 32,768
	// rows and, with the default hidden size, about a million parameters. Default 15.
	// +optional
	// +kubebuilder:default=15
	// +kubebuilder:validation:Minimum=4
	// +kubebuilder:validation:Maximum=24
	FeatureBits int32 `json:"featureBits,omitempty"`

	// MaxIntentWords caps the words of the intent text the policy writes on the
	// item-pool step. Default 40.
	// +optional
	// +kubebuilder:default=40
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxIntentWords int32 `json:"maxIntentWords,omitempty"`
}

// CPUArchitecture is what the CPU reference policy reads.
// +kubebuilder:validation:Enum=features;tokens
type CPUArchitecture string

// The CPU policy architectures.
const (
	// CPUFeatures reads structured attributes through hand-built evidence features.
	CPUFeatures CPUArchitecture = "features"
	// CPUTokens reads the words a screen shows, through learned attention.
	CPUTokens CPUArchitecture = "tokens"
)

// TrainerSpec describes the trainer pods. Rank 0 runs the training loop; every rank
// hosts WorkersPerReplica policy workers that work data-parallel on whole episodes.
// The scheduling fields (nodeSelector, tolerations, labels, annotations,
// schedulingGates) are the ones Kueue sets while the job is suspended.
type TrainerSpec struct {
	// Replicas is the number of trainer pods, at least 1 (at most 128). Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	Replicas int32 `json:"replicas,omitempty"`

	// WorkersPerReplica is the number of policy workers in each pod; with cuda, one per
	// GPU. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	WorkersPerReplica int32 `json:"workersPerReplica,omitempty"`

	// Image of the trainer container. Default: the operator's own image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self != ''",message="trainer.image must not be empty: name an image, or remove image for the operator's own"
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the job's containers. Default: Kubernetes' (IfNotPresent,
	// or Always for :latest).
	// +optional
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets for the job's images.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Resources of each pod's worker container, where the model runs: GPU requests
	// such as nvidia.com/gpu belong here. The trainer container itself needs little.
	// (Defaulted to {}, because Go clients always write it: so an update through the
	// Go types is no change.)
	// +optional
	// +kubebuilder:default={}
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Env is extra environment for every container of the trainer pods (for example
	// NCCL or HF_HOME settings).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Labels are added to the trainer pods' labels (the job's own labels win).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the trainer pods' annotations.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// NodeSelector restricts the trainer pods to nodes with these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the trainer pods.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the trainer pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// SchedulingGates hold the trainer pods unscheduled until removed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`

	// PriorityClassName of the trainer pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// SchedulerName of the trainer pods. Default: the cluster's default scheduler.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SchedulerName string `json:"schedulerName,omitempty"`

	// Scheduling makes the trainer pods a gang that a gang scheduler places all at
	// once or not at all. Default: no gang (each pod is scheduled on its own).
	// +optional
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`

	// TerminationGracePeriodSeconds is how long a trainer pod has to stop after
	// SIGTERM (a suspend, a preemption, a gang restart) before it is killed. The
	// trainer uses it to finish the step in flight and checkpoint it, its workers to
	// serve that step; give it more than a step and a checkpoint take. Default:
	// Kubernetes' 30 seconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// ServiceAccountName runs the trainer pods under this service account instead of
	// the one the job creates. It must be allowed to get and patch this ESPOJob's
	// status, or the job's progress is not reported.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// StatusInterval is the least time between two progress reports of the trainer
	// (status.training) after training steps; a change of stage or epoch, an
	// evaluation and the end are reported at once. At least 1s. Default 10s.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="statusInterval must be at least 1s: set it to a duration such as 10s"
	StatusInterval *metav1.Duration `json:"statusInterval,omitempty"`
}
