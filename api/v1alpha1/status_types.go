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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ESPOJobStatus is the observed state of an ESPO fine-tuning job. The controller
// recomputes everything but Training from the job's pods on every reconcile; Training is
// written by the trainer (rank 0) with server-side apply under the field manager
// TrainerFieldManager, and the controller never writes it.
type ESPOJobStatus struct {
	// Phase is a one-word summary computed from the conditions and the pods, so that
	// it is right after a resume or a restart: Pending, Running, Suspended,
	// Restarting, Succeeded or Failed.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`

	// Conditions are the job's conditions, one per type: Created, Running, Suspended,
	// Restarting, Succeeded, Failed, and Ready, Reconciling and Stalled, which restate
	// the phase in the form GitOps tools (kstatus, Flux, Argo CD) read.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the metadata.generation this status was computed for. The
	// API server defaults it to 0, so that until the controller first writes the status
	// GitOps tools (kstatus, which compares it with the generation) read the job as in
	// progress, not as current.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// StartTime is when the first trainer pod of the job ran. Suspending and resuming
	// keep it; it starts the activeDeadlineSeconds clock.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Restarts counts the gang restarts of the trainer pods so far, for any cause.
	// The API server defaults it to 0, so the Restarts column prints 0, not blank.
	// +optional
	// +kubebuilder:default=0
	Restarts int32 `json:"restarts,omitempty"`

	// Disruptions counts the gang restarts caused by a disrupted pod (one with the
	// condition DisruptionTarget), also counted in Restarts; they do not count
	// against spec.runPolicy.backoffLimit (within spec.runPolicy.maxDisruptions).
	// +optional
	Disruptions int32 `json:"disruptions,omitempty"`

	// ConsecutiveFailures counts the failed attempts in a row: the gang restarts
	// after a failure since the last attempt whose trainer pods all ran for 10
	// minutes, or the last disruption. The restart after the nth waits a backoff of
	// 10 seconds doubled n-1 times, at most 6 minutes, from the lastTransitionTime of
	// the Restarting condition, whose message gives the wait.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// Active is the number of trainer pods of the current attempt that are pending or
	// running.
	// +optional
	Active int32 `json:"active,omitempty"`

	// Ready is the number of trainer pods with the Ready condition.
	// +optional
	Ready int32 `json:"ready,omitempty"`

	// Succeeded is the number of trainer pods of the current attempt that exited 0.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// Failed is the number of trainer pods of the current attempt that failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// Model names the policy the job trains, computed by the controller from
	// spec.model (the Model column of kubectl get -o wide): the cpu policy and its
	// architecture ("cpu policy (features)"), or the last element of
	// spec.model.pretrained (else the initial checkpoint's folder, else an external
	// worker's endpoint) with "(LoRA r=<rank>)" when spec.model.lora is set, for
	// example "Qwen2.5-VL-3B-Instruct (LoRA r=16)". Settings that reach the worker
	// only through its environment (ESPO_WORKER_LORA_R) do not show here.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Model string `json:"model,omitempty"`

	// Training is the trainer's progress report.
	// +optional
	Training *TrainingStatus `json:"training,omitempty"`
}

// JobPhase is the one-word state of an ESPOJob.
// +kubebuilder:validation:Enum=Pending;Running;Suspended;Restarting;Succeeded;Failed
type JobPhase string

// The phases.
const (
	// PhasePending: the job's children are being created or its pods are not all
	// running yet.
	PhasePending JobPhase = "Pending"
	// PhaseRunning: every trainer pod of the current attempt is running.
	PhaseRunning JobPhase = "Running"
	// PhaseSuspended: spec.runPolicy.suspend is true; the job has no pods.
	PhaseSuspended JobPhase = "Suspended"
	// PhaseRestarting: a pod failed and the gang is being recreated.
	PhaseRestarting JobPhase = "Restarting"
	// PhaseSucceeded: training finished (or reached its early-stopping target).
	PhaseSucceeded JobPhase = "Succeeded"
	// PhaseFailed: the job failed for good; the Failed condition says why.
	PhaseFailed JobPhase = "Failed"
)

// IsFinished reports whether p is Succeeded or Failed, the phases a job never leaves.
func (p JobPhase) IsFinished() bool { return p == PhaseSucceeded || p == PhaseFailed }

// TrainerFieldManager is the server-side apply field manager under which the trainer
// writes status.training.
const TrainerFieldManager = "espo-trainer"

// TrainingStage is the part of the run the trainer is in.
// +kubebuilder:validation:Enum=sft;espo;grpo;eval
type TrainingStage string

// The training stages.
const (
	// StageSFT is the supervised cold start (or the whole run with algorithm sft).
	StageSFT TrainingStage = "sft"
	// StageESPO is an epoch of ESPO.
	StageESPO TrainingStage = "espo"
	// StageGRPO is an epoch of step-wise GRPO.
	StageGRPO TrainingStage = "grpo"
	// StageEval is an evaluation on the validation or the test set.
	StageEval TrainingStage = "eval"
)

// TrainingOutcome is how the trainer ended the run.
// +kubebuilder:validation:Enum=Completed;TargetReached;RewardCollapsed;NonFiniteLoss;CheckpointMismatch;DatasetInvalid;SplitEmpty;ModelIncomplete;ConfigInvalid;Error
type TrainingOutcome string

// The training outcomes. The controller turns them into the Succeeded or Failed
// condition with the reason of the same name.
const (
	// OutcomeCompleted: every epoch ran and the test evaluation is done.
	OutcomeCompleted TrainingOutcome = "Completed"
	// OutcomeTargetReached: earlyStopping.target was reached.
	OutcomeTargetReached TrainingOutcome = "TargetReached"
	// OutcomeRewardCollapsed: the mean step reward stayed below earlyStopping.minReward.
	OutcomeRewardCollapsed TrainingOutcome = "RewardCollapsed"
	// OutcomeNonFiniteLoss: a loss or gradient was NaN or infinite.
	OutcomeNonFiniteLoss TrainingOutcome = "NonFiniteLoss"
	// OutcomeCheckpointMismatch: the checkpoint folder holds a checkpoint of another
	// job or of another spec (datasets, model, algorithm or rewards), which the
	// trainer refuses to resume; Message names the checkpoint, what differs and the
	// fix.
	OutcomeCheckpointMismatch TrainingOutcome = "CheckpointMismatch"
	// OutcomeDatasetInvalid: a dataset source cannot be read as episodes (a missing,
	// empty or corrupt file); Message names the source and its path in the pod. A
	// restart reads the same bytes, so the job fails at once.
	OutcomeDatasetInvalid TrainingOutcome = "DatasetInvalid"
	// OutcomeSplitEmpty: the split fractions leave the validation or the test set
	// empty; Message says how many episodes each set got. The run trains nothing.
	OutcomeSplitEmpty TrainingOutcome = "SplitEmpty"
	// OutcomeModelIncomplete: a worker refused the model folder (spec.model.pretrained)
	// because files the model needs are missing (config.json, the weights, the
	// tokenizer, the chat template, a VLM's preprocessor_config.json); Message names
	// the folder as the worker's pod sees it and every missing file. A restart reads
	// the same folder, so the job fails at once.
	OutcomeModelIncomplete TrainingOutcome = "ModelIncomplete"
	// OutcomeConfigInvalid: the spec cannot run as written on the data and volumes it
	// names (spec.rewards.intent.match slots on episodes without preferences, a
	// spec.model.initialCheckpoint folder that holds no checkpoint); Message names the
	// field, what is wrong, paths as the pod sees them, and the fix. A restart reads
	// the same spec and data, so the job fails at once.
	OutcomeConfigInvalid TrainingOutcome = "ConfigInvalid"
	// OutcomeError: the trainer stopped on an error it cannot recover from (a bad
	// dataset, an unreachable worker); Message says which.
	OutcomeError TrainingOutcome = "Error"
)

// RunProvenance is what reproduces a run. Two runs whose digests, seed, versions and
// images are all equal trained the same policy on the same episodes the same way
// (up to the floating-point nondeterminism of their devices); the first field that
// differs says what changed. The operator fills in its version and the images (in
// the run config), the trainer the rest.
type RunProvenance struct {
	// Datasets is the SHA-256 (hex) of spec.datasets and of every episode the run
	// loaded, split by split: files changed under the same path differ.
	// +optional
	Datasets string `json:"datasets,omitempty"`
	// Model is the SHA-256 of spec.model as the workers run it (the CPU policy's
	// defaults written out).
	// +optional
	Model string `json:"model,omitempty"`
	// Algorithm is the SHA-256 of spec.algorithm.
	// +optional
	Algorithm string `json:"algorithm,omitempty"`
	// Rewards is the SHA-256 of spec.rewards.
	// +optional
	Rewards string `json:"rewards,omitempty"`
	// ModelConfig is the SHA-256 of the config.json of the model folder the workers
	// loaded (spec.model.pretrained), once they are configured; empty for a model
	// without one (the CPU policy, the tiny model).
	// +optional
	ModelConfig string `json:"modelConfig,omitempty"`
	// Encoder is the SHA-256 of the weights of the sentence encoder the workers embed
	// intents with (spec.rewards.intent.embedder.worker), once they are configured.
	// +optional
	Encoder string `json:"encoder,omitempty"`
	// Seed is spec.algorithm.seed.
	// +optional
	Seed int64 `json:"seed,omitempty"`
	// TrainerVersion is the version of the trainer binary, with its commit.
	// +optional
	TrainerVersion string `json:"trainerVersion,omitempty"`
	// OperatorVersion is the version of the operator that wrote the run config.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// TrainerImage is the image of the trainer container.
	// +optional
	TrainerImage string `json:"trainerImage,omitempty"`
	// WorkerImage is the image of the worker containers; empty for an external
	// worker, which the job does not run.
	// +optional
	WorkerImage string `json:"workerImage,omitempty"`
}

// TrainingStatus is the trainer's progress report. Every metric is a Decimal with
// MetricDigits digits after the point (written with NewMetric): accuracies and rates
// as fractions in [0, 1] ("0.286"), rewards as they are ("-0.125").
type TrainingStatus struct {
	// Stage is the part of the run the trainer is in: sft, espo, grpo or eval.
	// +optional
	Stage TrainingStage `json:"stage,omitempty"`

	// Epoch is the current epoch of the stage, from 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Epoch int32 `json:"epoch,omitempty"`

	// Step is the number of optimizer steps taken so far, over all stages.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step,omitempty"`

	// TotalSteps is the number of optimizer steps of the whole run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TotalSteps int64 `json:"totalSteps,omitempty"`

	// LastUpdateTime is when the trainer last wrote this report.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`

	// Provenance is what reproduces the run and tells two runs apart: the digests of
	// the spec sections and data it trained on, its seed, and the versions and images
	// that ran it.
	// +optional
	Provenance *RunProvenance `json:"provenance,omitempty"`

	// MeanStepReward is the mean step reward R_step over the candidates of the
	// latest training steps.
	// +optional
	MeanStepReward Decimal `json:"meanStepReward,omitempty"`

	// MeanCOUTReward is the mean COUT episode reward of the latest training steps.
	// +optional
	MeanCOUTReward Decimal `json:"meanCOUTReward,omitempty"`

	// KL is the mean KL divergence to the reference policy of the latest training
	// steps.
	// +optional
	KL Decimal `json:"kl,omitempty"`

	// SamplerMismatch is the mean over the latest training step's tokens of
	// |logp_old - logp_sampler|, how far the log-probs of the engine that sampled the
	// answers (spec.model.rollout.engine vllm) are from the trainer's policy's; unset
	// when the policy samples its own answers. Small and steady is what the
	// correction expects; growing, it says that the engine and the model drift
	// apart (weights not reaching the engine, a dtype or kernel that differs).
	// +optional
	SamplerMismatch Decimal `json:"samplerMismatch,omitempty"`

	// IntentMatch is how the intents of the latest evaluation were judged: "slots",
	// "embedding" (the built-in hashed embedder), "embedding-service", or two of
	// them joined by "+" when some episodes carried preferences and others did not.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	IntentMatch string `json:"intentMatch,omitempty"`

	// Evaluation holds the metrics of the latest evaluation.
	// +optional
	Evaluation *EvaluationStatus `json:"evaluation,omitempty"`

	// BestRecommendationAccuracy is the highest recommendation accuracy of any
	// validation evaluation so far.
	// +optional
	BestRecommendationAccuracy Decimal `json:"bestRecommendationAccuracy,omitempty"`

	// LastStep is where the latest training step's wall time went, phase by phase,
	// and its throughput: what kubectl describe shows to tell at a glance which
	// phase dominates a slow job.
	// +optional
	LastStep *StepTimes `json:"lastStep,omitempty"`

	// Tracking is how the experiment trackers of spec.tracking are doing.
	// +optional
	Tracking *TrackingStatus `json:"tracking,omitempty"`

	// LastCheckpoint is the newest checkpoint written.
	// +optional
	LastCheckpoint *CheckpointStatus `json:"lastCheckpoint,omitempty"`

	// ResumedFrom is the run's own checkpoint the trainer last resumed from, set on
	// every resume (not on a start from spec.model.initialCheckpoint, which begins a
	// run): its step and path, the number of policy workers that wrote it and the
	// number that loaded it, and when. A resume on another number of workers than
	// wrote the checkpoint (writtenBy known and other than workers) is also said in
	// message, and the controller announces it with the Normal event
	// ResumedOnAnotherSize.
	// +optional
	ResumedFrom *ResumeStatus `json:"resumedFrom,omitempty"`

	// Export describes the Hugging Face folder spec.export wrote, once it is
	// complete.
	// +optional
	Export *ExportStatus `json:"export,omitempty"`

	// Outcome is set when the trainer ends the run: Completed, TargetReached,
	// RewardCollapsed, NonFiniteLoss, CheckpointMismatch, DatasetInvalid,
	// SplitEmpty, ModelIncomplete or Error.
	// +optional
	Outcome TrainingOutcome `json:"outcome,omitempty"`

	// Message explains the outcome, or the trainer's latest notable event.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// WaitingForWorker is set while the trainer waits for a worker that does not
	// answer: which worker, its address, how long the trainer has waited and the last
	// error, for example "waiting 2m10s for worker 1 (job-1.job.ns.svc:50051):
	// ... connection refused". It is refreshed at most once per
	// spec.trainer.statusInterval and cleared once every worker answers; the
	// controller shows it in the Running condition (reason WorkerUnavailable).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	WaitingForWorker string `json:"waitingForWorker,omitempty"`
}

// EvaluationSplit is the set an evaluation ran on.
// +kubebuilder:validation:Enum=validation;test
type EvaluationSplit string

// EvaluationStatus holds the metrics of one evaluation (greedy decoding), as fractions
// in [0, 1] with MetricDigits digits.
type EvaluationStatus struct {
	// Split is the set evaluated: validation (after an epoch) or test (at the end).
	// +optional
	Split EvaluationSplit `json:"split,omitempty"`

	// Epoch is the epoch after which the evaluation ran.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Epoch int32 `json:"epoch,omitempty"`

	// Step is the optimizer step after which the evaluation ran.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step,omitempty"`

	// Time is when the evaluation finished.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// GUITypeAccuracy is the share of GUI steps whose action type is right.
	// +optional
	GUITypeAccuracy Decimal `json:"guiTypeAccuracy,omitempty"`

	// ElementAccuracy is the share of GUI steps whose click point falls in the target
	// element (EleAcc).
	// +optional
	ElementAccuracy Decimal `json:"elementAccuracy,omitempty"`

	// OperationF1 is the mean token-set F1 of "type value" (Op F1).
	// +optional
	OperationF1 Decimal `json:"operationF1,omitempty"`

	// StepSuccessRate is the share of steps with element and operation both right
	// (StepSR).
	// +optional
	StepSuccessRate Decimal `json:"stepSuccessRate,omitempty"`

	// IntentAccuracy is the share of item-pool steps whose intent is right
	// (IntentAcc).
	// +optional
	IntentAccuracy Decimal `json:"intentAccuracy,omitempty"`

	// RecommendationAccuracy is the share of recommendation steps decided right
	// (RecAcc).
	// +optional
	RecommendationAccuracy Decimal `json:"recommendationAccuracy,omitempty"`

	// FormatRate is the share of answers in the GUI-R1 format.
	// +optional
	FormatRate Decimal `json:"formatRate,omitempty"`
}

// ExportKind is what an export holds: a LoRA adapter or the whole model.
// +kubebuilder:validation:Enum=lora;full
type ExportKind string

// The kinds of export.
const (
	// ExportLoRA: a peft adapter (and, with spec.export.merge, the merged model).
	ExportLoRA ExportKind = "lora"
	// ExportFull: the whole model, in safetensors shards.
	ExportFull ExportKind = "full"
)

// ExportStatus describes the Hugging Face folder the trainer exported.
type ExportStatus struct {
	// Path is the export's folder inside spec.export's claim.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// Kind is lora (a peft adapter) or full (the whole model).
	// +optional
	Kind ExportKind `json:"kind,omitempty"`

	// Merged says whether the merged model is under merged/ beside the adapter.
	// +optional
	Merged bool `json:"merged,omitempty"`

	// Step is the optimizer step of the exported weights.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step,omitempty"`

	// Metric is spec.export.bestBy, the metric the exported checkpoint was chosen
	// by; Value is its validation value at Step. Both unset for the final policy.
	// +optional
	Metric EvalMetric `json:"metric,omitempty"`
	// +optional
	Value Decimal `json:"value,omitempty"`

	// Files is the number of files the export's manifest (espo-export.json) names.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Files int64 `json:"files,omitempty"`

	// Time is when the export was complete.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// CheckpointStatus describes a checkpoint written by the trainer.
type CheckpointStatus struct {
	// Step is the optimizer step the checkpoint holds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step,omitempty"`

	// Path is the checkpoint's path inside the checkpoint claim.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// Time is when the checkpoint was written.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// ResumeStatus describes a resume of the trainer from one of the run's checkpoints.
type ResumeStatus struct {
	// Step is the optimizer step the checkpoint holds, where training went on.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step int64 `json:"step,omitempty"`

	// Path is the checkpoint's path inside the checkpoint claim.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// WrittenBy is the number of policy workers (spec.trainer.replicas times
	// workersPerReplica) of the gang that wrote the checkpoint; unset for a
	// checkpoint of a trainer that did not record it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WrittenBy int32 `json:"writtenBy,omitempty"`

	// Workers is the number of policy workers the checkpoint was loaded on, the
	// job's spec.trainer.replicas times workersPerReplica when it resumed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Workers int32 `json:"workers,omitempty"`

	// Time is when the trainer resumed.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// StepPhase is a part of a training step whose wall time the trainer measures.
// +kubebuilder:validation:Enum=sampling;environment;reference;rewards;backward;optimizer;weightSync;checkpoint
type StepPhase string

const (
	// PhaseSampling is the policy workers' sampling of the step's answers (for SFT,
	// preparing its demonstrations), without the environment's calls and the weight
	// sync counted apart.
	PhaseSampling StepPhase = "sampling"
	// PhaseEnvironment is the environment's Reset and Step calls of the step's
	// rollouts (spec.datasets.environment).
	PhaseEnvironment StepPhase = "environment"
	// PhaseReference is the scoring of the answers under the reference policy (the
	// KL term's log-probs).
	PhaseReference StepPhase = "reference"
	// PhaseRewards is the trainer's own work: the rewards, the intents' judgement,
	// the advantages and the loss weights.
	PhaseRewards StepPhase = "rewards"
	// PhaseBackward is the workers' backward passes.
	PhaseBackward StepPhase = "backward"
	// PhaseOptimizer is the optimizer step, gradients gathered and summed included.
	PhaseOptimizer StepPhase = "optimizer"
	// PhaseWeightSync is the copy of the updated weights into the rollout engine
	// (spec.model.rollout.engine vllm) before it samples.
	PhaseWeightSync StepPhase = "weightSync"
	// PhaseCheckpoint is the checkpoint written after the step, when one was.
	PhaseCheckpoint StepPhase = "checkpoint"
)

// StepPhases lists the phases of a training step in the order a step runs them.
var StepPhases = []StepPhase{PhaseSampling, PhaseEnvironment, PhaseReference, PhaseRewards, PhaseBackward,
	PhaseOptimizer, PhaseWeightSync, PhaseCheckpoint}

// StepTimes is where one training step's wall time went.
type StepTimes struct {
	// Step is the optimizer step the times are of.
	Step int64 `json:"step"`

	// Seconds is the step's wall time, its checkpoint included.
	// +optional
	Seconds Decimal `json:"seconds,omitempty"`

	// Dominant is the phase that took the largest share of the step, with the share,
	// for example "sampling 71%".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Dominant string `json:"dominant,omitempty"`

	// Phases are the seconds of each phase that took any time, in the order the step
	// runs them; the rest of Seconds is the trainer's bookkeeping.
	// +optional
	// +listType=map
	// +listMapKey=phase
	// +kubebuilder:validation:MaxItems=8
	Phases []PhaseTime `json:"phases,omitempty"`

	// Tokens is the number of answer tokens the step trained on (the workers'
	// backward passes count them); TokensPerSecond is Tokens over Seconds.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// +optional
	TokensPerSecond Decimal `json:"tokensPerSecond,omitempty"`
}

// PhaseTime is the wall time of one phase of a step.
type PhaseTime struct {
	Phase StepPhase `json:"phase"`
	// Seconds is the phase's wall time.
	Seconds Decimal `json:"seconds"`
}
