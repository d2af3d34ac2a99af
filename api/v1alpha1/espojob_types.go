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

// MaxNameLength is the longest metadata.name of an ESPOJob. The job's children are
// named after it ("<job>-trainer-<rank>" pods, "<job>-config" ConfigMap, a headless
// Service "<job>"), and a Service name and a pod's hostname must be DNS labels of at
// most 63 characters: 40 leaves room for every suffix. The CEL rule on ESPOJob repeats
// the number.
const MaxNameLength = 40

// ESPOJob runs ESPO reinforcement fine-tuning of a personalized GUI agent policy:
// an optional SFT cold start, then epochs of ESPO (or GRPO, or SFT) over episodes of
// GUI steps, on one or more trainer pods that each host policy workers.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=espo;ej,categories=all;espo
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Suspended, Restarting, Succeeded or Failed"
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.status.training.stage`,description="Training stage the trainer is in: sft, espo, grpo or eval"
// +kubebuilder:printcolumn:name="Epoch",type=integer,JSONPath=`.status.training.epoch`,description="Current epoch of the stage, from 1"
// +kubebuilder:printcolumn:name="Step",type=integer,JSONPath=`.status.training.step`,description="Optimizer steps taken so far, over all stages"
// +kubebuilder:printcolumn:name="GUI-Acc",type=string,JSONPath=`.status.training.evaluation.guiTypeAccuracy`,description="GUI action-type accuracy of the latest evaluation"
// +kubebuilder:printcolumn:name="Intent-Acc",type=string,JSONPath=`.status.training.evaluation.intentAccuracy`,description="Intent accuracy of the latest evaluation"
// +kubebuilder:printcolumn:name="Rec-Acc",type=string,JSONPath=`.status.training.evaluation.recommendationAccuracy`,description="Recommendation accuracy of the latest evaluation"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ele-Acc",type=string,priority=1,JSONPath=`.status.training.evaluation.elementAccuracy`,description="Element accuracy of the latest evaluation"
// +kubebuilder:printcolumn:name="Reward",type=string,priority=1,JSONPath=`.status.training.meanStepReward`,description="Mean step reward of the latest training steps"
// +kubebuilder:printcolumn:name="Restarts",type=integer,priority=1,JSONPath=`.status.restarts`,description="Gang restarts of the trainer pods"
// +kubebuilder:printcolumn:name="Model",type=string,priority=1,JSONPath=`.status.model`,description="The policy trained, and its LoRA rank when it trains LoRA adapters"
// +kubebuilder:printcolumn:name="Engine",type=string,priority=1,JSONPath=`.spec.model.rollout.engine`,description="The engine that samples the PyTorch worker's answers: huggingface or vllm (empty: huggingface)"
// +kubebuilder:printcolumn:name="Tokens/s",type=string,priority=1,JSONPath=`.status.training.lastStep.tokensPerSecond`,description="Answer tokens trained per second of wall time at the latest training step"
// +kubebuilder:printcolumn:name="Export",type=string,priority=1,JSONPath=`.status.training.export.path`,description="The Hugging Face folder the trained policy was exported to, inside spec.export's claim"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters, so that the names of the job's pods, Service and ConfigMap stay valid"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter), because the job's headless Service takes its name"
type ESPOJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to train, how, and on which pods.
	// +required
	Spec ESPOJobSpec `json:"spec"`
	// Status is computed by the controller, except status.training, which the trainer
	// writes. The API server serves a job the controller has not written yet with
	// the defaults of its fields (observedGeneration 0, restarts 0).
	// +optional
	// +kubebuilder:default={}
	Status ESPOJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ESPOJobList is a list of ESPOJobs.
type ESPOJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ESPOJob `json:"items"`
}

// ESPOJobSpec is the desired state of an ESPO fine-tuning job.
//
// datasets, model, algorithm and rewards are immutable: a run is defined by them, and
// its checkpoints are only valid for them. trainer, checkpoint and earlyStopping may
// change only while the job is suspended (or in the update that suspends or resumes it),
// which is when Kueue edits the pod template; the trainer pods are recreated from the
// new values on resume. runPolicy may change at any time.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.runPolicy.suspend || self.runPolicy.suspend || self.trainer == oldSelf.trainer",message="trainer may change only while the job is suspended (spec.runPolicy.suspend: true)"
// +kubebuilder:validation:XValidation:rule="oldSelf.runPolicy.suspend || self.runPolicy.suspend || (has(self.checkpoint) == has(oldSelf.checkpoint) && (!has(self.checkpoint) || self.checkpoint == oldSelf.checkpoint))",message="checkpoint may change only while the job is suspended (spec.runPolicy.suspend: true)"
// +kubebuilder:validation:XValidation:rule="oldSelf.runPolicy.suspend || self.runPolicy.suspend || (has(self.earlyStopping) == has(oldSelf.earlyStopping) && (!has(self.earlyStopping) || self.earlyStopping == oldSelf.earlyStopping))",message="earlyStopping may change only while the job is suspended (spec.runPolicy.suspend: true)"
// +kubebuilder:validation:XValidation:rule="!has(self.model) || !has(self.model.worker) || self.model.worker != 'external' || !has(self.trainer) || ((!has(self.trainer.replicas) || self.trainer.replicas == 1) && (!has(self.trainer.workersPerReplica) || self.trainer.workersPerReplica == 1))",message="with worker: external, trainer.replicas and trainer.workersPerReplica must be 1: the trainer drives the one worker at model.endpoint, and more pods or workers would be CPU policies whose gradients it added to the external model's",fieldPath=".trainer"
// +kubebuilder:validation:XValidation:rule="!has(self.runPolicy) || !has(self.runPolicy.progressDeadlineSeconds) || !has(self.trainer) || !has(self.trainer.statusInterval) || self.runPolicy.progressDeadlineSeconds * 1000 > 2 * duration(self.trainer.statusInterval).getMilliseconds()",message="runPolicy.progressDeadlineSeconds must be more than twice trainer.statusInterval, the longest a moving job goes between two progress reports: raise it or lower statusInterval",fieldPath=".runPolicy.progressDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.datasets.environment) || !has(self.datasets.environment.endpoint) || (has(self.algorithm) && has(self.algorithm.sftEpochs) && self.algorithm.sftEpochs == 0 && (!has(self.algorithm.name) || self.algorithm.name != 'sft'))",message="an environment endpoint gives no demonstrations to fine-tune on: set algorithm.sftEpochs: 0 and algorithm.name espo or grpo, and start from a fine-tuned model",fieldPath=".algorithm"
// +kubebuilder:validation:XValidation:rule="!has(self.datasets.environment) || !has(self.algorithm) || !has(self.algorithm.maxStepsPerBatch)",message="algorithm.maxStepsPerBatch sizes batches of recorded steps; with datasets.environment a batch is episodesPerBatch episodes of G rollouts: remove maxStepsPerBatch",fieldPath=".algorithm.maxStepsPerBatch"
// +kubebuilder:validation:XValidation:rule="!has(self.rewards) || !has(self.rewards.intent) || !has(self.rewards.intent.embedder) || !has(self.rewards.intent.embedder.worker) || (has(self.model) && has(self.model.worker) && self.model.worker != 'cpu')",message="rewards.intent.embedder.worker needs model.worker cuda or external: the CPU policy loads no sentence encoder; set model.worker: cuda, or name an embedding service in embedder.endpoint",fieldPath=".rewards.intent.embedder.worker"
// +kubebuilder:validation:XValidation:rule="oldSelf.runPolicy.suspend || self.runPolicy.suspend || (has(self.export) == has(oldSelf.export) && (!has(self.export) || self.export == oldSelf.export))",message="export may change only while the job is suspended (spec.runPolicy.suspend: true)"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || self.model.worker == 'cuda'",message="export writes the PyTorch worker's model as a Hugging Face folder: set model.worker: cuda, or remove export (the cpu policy is no Hugging Face model, and an external worker would write on its own machine)",fieldPath=".export"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.merge) || !self.export.merge || has(self.model.lora)",message="export.merge merges a LoRA adapter into its base model: set model.lora, or remove merge (a full fine-tune is exported whole)",fieldPath=".export.merge"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.bestBy) || has(self.checkpoint)",message="export.bestBy exports the best checkpoint by that metric: set spec.checkpoint, where the trainer keeps the best checkpoint until it is exported",fieldPath=".export.bestBy"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.bestBy) || (has(self.datasets.environment) ? (!has(self.datasets.environment.validationEpisodes) || self.datasets.environment.validationEpisodes > 0) : (!self.datasets.split.validation.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || double(self.datasets.split.validation) > 0.0 || self.datasets.sources.exists(s, s.split == 'validation')))",message="export.bestBy compares validation evaluations, and this run has none: give datasets.split.validation a share, a source with split: validation, or environment.validationEpisodes above 0; or remove bestBy to export the final policy",fieldPath=".export.bestBy"
// +kubebuilder:validation:XValidation:rule="!has(self.model.weights) || !has(self.rewards.intent.embedder) || !has(self.rewards.intent.embedder.worker) || (!self.rewards.intent.embedder.worker.model.startsWith('/') && !self.rewards.intent.embedder.worker.model.matches('(^|/)[.][.](/|$)'))",message="with model.weights, embedder.worker.model is a folder inside the weights claim's path (such as all-MiniLM-L6-v2), mounted at /models: write it relative to the claim, without a leading '/' or '..'",fieldPath=".rewards.intent.embedder.worker.model"
// +kubebuilder:validation:XValidation:rule="!has(self.algorithm.samplerCorrection) || !has(self.algorithm.samplerCorrection.cap) || !self.algorithm.samplerCorrection.cap.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || double(self.algorithm.samplerCorrection.cap) == 0.0 || (has(self.model.worker) && self.model.worker == 'external') || (has(self.model.worker) && self.model.worker == 'cuda' && has(self.model.rollout) && has(self.model.rollout.engine) && self.model.rollout.engine == 'vllm')",message="algorithm.samplerCorrection corrects for answers sampled by another engine than the policy (model.rollout.engine vllm, or an external worker that reports its sampler's log-probs), and this job's policy samples its own answers: remove samplerCorrection, or set model.rollout.engine: vllm",fieldPath=".algorithm.samplerCorrection.cap"
// +kubebuilder:validation:XValidation:rule="!has(self.datasets.environment) || (!has(self.rewards.intent.embedder) && !has(self.rewards.intent.threshold) && (!has(self.rewards.intent.match) || self.rewards.intent.match != 'embedding'))",message="with datasets.environment, intents are judged slot by slot against the preferences the environment reports, so rewards.intent.embedder, threshold and match: embedding do not apply: remove them (match auto or slots)",fieldPath=".rewards.intent"
// +kubebuilder:validation:XValidation:rule="!has(self.earlyStopping) || (has(self.datasets.environment) ? (!has(self.datasets.environment.validationEpisodes) || self.datasets.environment.validationEpisodes > 0) : (!self.datasets.split.validation.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || double(self.datasets.split.validation) > 0.0 || self.datasets.sources.exists(s, s.split == 'validation')))",message="earlyStopping is checked after each validation evaluation, and this run has none, so it could never act: give datasets.split.validation a share, a source with split: validation, or environment.validationEpisodes above 0; or remove earlyStopping",fieldPath=".earlyStopping"
// +kubebuilder:validation:XValidation:rule="!has(self.earlyStopping) || !has(self.earlyStopping.minReward) || !has(self.algorithm.name) || self.algorithm.name != 'sft'",message="earlyStopping.minReward watches the reward of sampled answers, and with algorithm.name sft no epoch samples any, so it could never act: remove minReward, or set algorithm.name espo or grpo",fieldPath=".earlyStopping.minReward"
// +kubebuilder:validation:XValidation:rule="!has(self.earlyStopping) || !has(self.earlyStopping.target) || !has(self.earlyStopping.patience) || self.earlyStopping.patience <= (has(self.algorithm.sftEpochs) ? self.algorithm.sftEpochs : 1) + (has(self.algorithm.epochs) ? self.algorithm.epochs : 6)",message="earlyStopping.patience is more than the run's validation evaluations (one after each epoch, algorithm.sftEpochs + algorithm.epochs), so target could never act: lower patience or raise the epochs",fieldPath=".earlyStopping.patience"
// +kubebuilder:validation:XValidation:rule="!has(self.earlyStopping) || !has(self.earlyStopping.minReward) || !has(self.earlyStopping.patience) || self.earlyStopping.patience <= (has(self.algorithm.epochs) ? self.algorithm.epochs : 6)",message="earlyStopping.patience is more than the evaluations that follow epochs with rewards (algorithm.epochs; the SFT epochs have none), so minReward could never act: lower patience or raise algorithm.epochs",fieldPath=".earlyStopping.minReward"
// +kubebuilder:validation:XValidation:rule="!has(self.model.worker) || self.model.worker != 'cuda' || !has(self.trainer.resources) || !has(self.trainer.resources.limits) || ['nvidia.com/gpu', 'amd.com/gpu'].all(g, !(g in self.trainer.resources.limits) || (type(self.trainer.resources.limits[g]) == int ? self.trainer.resources.limits[g] : int(self.trainer.resources.limits[g])) >= (has(self.trainer.workersPerReplica) ? self.trainer.workersPerReplica : 1))",message="trainer.workersPerReplica is more than the GPUs each pod asks for in trainer.resources.limits: a cuda worker takes one GPU, so the extra workers would share one or find none; raise the GPU count (nvidia.com/gpu) or lower workersPerReplica",fieldPath=".trainer.workersPerReplica"
// +kubebuilder:validation:XValidation:rule="!has(self.export) || !has(self.export.persistentVolumeClaim.path) || !((has(self.checkpoint) && self.checkpoint.persistentVolumeClaim.claimName == self.export.persistentVolumeClaim.claimName && (has(self.checkpoint.persistentVolumeClaim.path) && (self.checkpoint.persistentVolumeClaim.path == self.export.persistentVolumeClaim.path || self.checkpoint.persistentVolumeClaim.path.startsWith(self.export.persistentVolumeClaim.path + '/')))) || (has(self.model.weights) && self.model.weights.claimName == self.export.persistentVolumeClaim.claimName && (has(self.model.weights.path) && (self.model.weights.path == self.export.persistentVolumeClaim.path || self.model.weights.path.startsWith(self.export.persistentVolumeClaim.path + '/')))) || (has(self.model.initialCheckpoint) && self.model.initialCheckpoint.claimName == self.export.persistentVolumeClaim.claimName && (has(self.model.initialCheckpoint.path) && (self.model.initialCheckpoint.path == self.export.persistentVolumeClaim.path || self.model.initialCheckpoint.path.startsWith(self.export.persistentVolumeClaim.path + '/')))) || (has(self.datasets.sources) && self.datasets.sources.exists(src, has(src.persistentVolumeClaim) && src.persistentVolumeClaim.claimName == self.export.persistentVolumeClaim.claimName && (has(src.persistentVolumeClaim.path) && (src.persistentVolumeClaim.path == self.export.persistentVolumeClaim.path || src.persistentVolumeClaim.path.startsWith(self.export.persistentVolumeClaim.path + '/'))))))",message="export replaces its folder whole, and that folder is, or holds, one the job reads or writes on the same claim (checkpoint, model.weights, model.initialCheckpoint or a dataset source): the export would delete it; give the export a folder of its own, such as models/run-1 beside checkpoints/run-1",fieldPath=".export.persistentVolumeClaim.path"
// +kubebuilder:validation:XValidation:rule="oldSelf.runPolicy.suspend || self.runPolicy.suspend || (has(self.tracking) == has(oldSelf.tracking) && (!has(self.tracking) || self.tracking == oldSelf.tracking))",message="tracking may change only while the job is suspended (spec.runPolicy.suspend: true)"
// +kubebuilder:validation:XValidation:rule="!has(self.tracking) || !has(self.tracking.tensorboard) || has(self.checkpoint)",message="tracking.tensorboard writes its event files into spec.checkpoint's folder: set spec.checkpoint, or remove tensorboard",fieldPath=".tracking.tensorboard"
type ESPOJobSpec struct {
	// Datasets are the sources of episodes (SmartSpot JSONL) and how they are split
	// into train, validation and test sets. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="datasets is immutable; delete and recreate the job to change it"
	Datasets Datasets `json:"datasets"`

	// Model is the policy being trained: which worker computes it and where its
	// weights start from. Immutable. Left out, it is the CPU reference policy with
	// its defaults written out (worker: cpu, cpu: {}).
	// +optional
	// +kubebuilder:default={worker: cpu, cpu: {}}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="model is immutable; delete and recreate the job to change it"
	Model ModelSpec `json:"model,omitempty"`

	// Algorithm is the training recipe: SFT cold start, then epochs of ESPO, GRPO or
	// SFT, with the policy-gradient hyper-parameters. Immutable.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="algorithm is immutable; delete and recreate the job to change it"
	Algorithm AlgorithmSpec `json:"algorithm,omitempty"`

	// Rewards are the stage rewards and the Chain-of-User-Thought (COUT) episode reward.
	// The defaults are the ESPO paper's values. Immutable.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="rewards is immutable; delete and recreate the job to change it"
	Rewards RewardsSpec `json:"rewards,omitempty"`

	// Trainer describes the trainer pods: how many, their image, resources and
	// scheduling. It may change only while the job is suspended.
	// +optional
	// +kubebuilder:default={}
	Trainer TrainerSpec `json:"trainer,omitempty"`

	// RunPolicy holds the job-level policies: restarts, deadline, clean-up and suspend.
	// +optional
	// +kubebuilder:default={}
	RunPolicy RunPolicy `json:"runPolicy,omitempty"`

	// Checkpoint is where the trainer saves its state, so that a restarted or resumed
	// job continues from the newest checkpoint at the same data position. Unset: no
	// checkpoints; a restart begins the run again.
	// +optional
	Checkpoint *CheckpointSpec `json:"checkpoint,omitempty"`

	// EarlyStopping ends the run before its last epoch: with success when an
	// evaluation metric reaches a target, with failure when the reward collapses.
	// Independently of it, a NaN or infinite loss always fails the job.
	// +optional
	EarlyStopping *EarlyStoppingSpec `json:"earlyStopping,omitempty"`

	// Export writes the trained policy, when the run succeeds, as a Hugging Face
	// folder that transformers, peft and serving engines load: the final policy, or
	// the best checkpoint by a validation metric. Unset: the policy stays in the
	// checkpoints only. It needs model.worker: cuda.
	// +optional
	Export *ExportSpec `json:"export,omitempty"`

	// Tracking records the run in experiment trackers: MLflow, TensorBoard. Unset:
	// the run is in status, the logs and Prometheus only.
	// +optional
	Tracking *TrackingSpec `json:"tracking,omitempty"`
}

// Datasets are where the job's episodes come from: recorded sources and their split,
// or an environment the policy lives through.
//
// +kubebuilder:validation:XValidation:rule="has(self.sources) != has(self.environment)",message="set exactly one of sources (recorded episodes, replayed) and environment (episodes the policy lives through)"
// +kubebuilder:validation:XValidation:rule="!has(self.sources) || size(self.sources) == 0 || self.sources.exists(s, s.split in ['all', 'train'])",message="at least one source must feed training (split: all or train)"
// +kubebuilder:validation:XValidation:rule="![self.split.train, self.split.validation, self.split.test].all(f, f.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$')) || double(self.split.train) + double(self.split.validation) + double(self.split.test) > 0.999999 && double(self.split.train) + double(self.split.validation) + double(self.split.test) < 1.000001",message="train + validation + test must add up to 1",fieldPath=".split"
// +kubebuilder:validation:XValidation:rule="!has(self.environment) || (self.split.train == '0.8' && self.split.validation == '0.1' && self.split.test == '0.1' && self.split.seed == 0)",message="split divides recorded sources' episodes and does not apply to environment, whose episodes come from seeds: remove split, and size the sets with environment.episodes, validationEpisodes and testEpisodes",fieldPath=".split"
type Datasets struct {
	// Sources are the named sources of episodes. Sources with split "all" are pooled
	// and divided by Split, whole episodes at a time; a source with split "train",
	// "validation" or "test" goes to that set whole.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Sources []DatasetSource `json:"sources,omitempty"`

	// Environment, instead of sources, has the policy live through the episodes of an
	// environment: its actions change the screens it sees next. Each group of a
	// reinforcement epoch is G rollouts of one episode seed, sampled on-policy; SFT
	// epochs fine-tune on the environment's expert demonstrations; the validation and
	// test evaluations live through held-out seeds greedily. split does not apply.
	// +optional
	Environment *EnvironmentSource `json:"environment,omitempty"`

	// Split divides the pooled episodes of the "all" sources. Default 8:1:1.
	// +optional
	// +kubebuilder:default={}
	Split DatasetSplit `json:"split,omitempty"`
}

// DatasetSplitName says which set a source's episodes go to.
// +kubebuilder:validation:Enum=all;train;validation;test
type DatasetSplitName string

// The sets a source can feed.
const (
	// SplitAll pools the source's episodes and divides them by the split fractions.
	SplitAll DatasetSplitName = "all"
	// SplitTrain sends every episode of the source to the training set.
	SplitTrain DatasetSplitName = "train"
	// SplitValidation sends every episode of the source to the validation set.
	SplitValidation DatasetSplitName = "validation"
	// SplitTest sends every episode of the source to the test set.
	SplitTest DatasetSplitName = "test"
)

// DatasetSource is one named source of episodes in the SmartSpot JSONL format. Exactly
// one of persistentVolumeClaim, configMap and synthetic is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.persistentVolumeClaim), has(self.configMap), has(self.synthetic)].filter(x, x).size() == 1",message="exactly one of persistentVolumeClaim, configMap or synthetic must be set"
type DatasetSource struct {
	// Name identifies the source in logs, metrics and volume names: a DNS label of at
	// most 20 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Split is the set this source feeds: all (divided by datasets.split), train,
	// validation or test. Default all.
	// +optional
	// +kubebuilder:default=all
	Split DatasetSplitName `json:"split,omitempty"`

	// PersistentVolumeClaim reads JSONL files from a claim, mounted read-only; path
	// names a file or a folder whose *.jsonl files are read in name order.
	// +optional
	PersistentVolumeClaim *VolumePath `json:"persistentVolumeClaim,omitempty"`

	// ConfigMap reads small datasets from a ConfigMap in the job's namespace: every
	// key ending in .jsonl, in key order.
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`

	// Synthetic generates SmartSpot-shaped episodes in the trainer, deterministically
	// from a seed: no volume needed.
	// +optional
	Synthetic *SyntheticSource `json:"synthetic,omitempty"`
}

// VolumePath is a path inside a PersistentVolumeClaim of the job's namespace.
type VolumePath struct {
	// ClaimName is the PersistentVolumeClaim's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="claimName must be the name of a PersistentVolumeClaim: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	ClaimName string `json:"claimName"`

	// Path is relative to the claim's root, without "..". Default: the root.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="path must be relative to the claim's root and must not contain '..'"
	Path string `json:"path,omitempty"`
}

// HostPort is a server's address, host:port: the host a DNS name or an IP address
// (an IPv6 address in brackets), written in ASCII, and a port of 1 to 65535. A host
// with a letter from another script that looks like a Latin one ("е" for "e") is
// refused: it would resolve to another name, or to none.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=260
// +kubebuilder:validation:XValidation:rule="!self.matches('[^ -~]')",message="the address has a character outside printable ASCII, such as a letter of another script that looks like a Latin one: retype the host in ASCII"
// +kubebuilder:validation:XValidation:rule="self.matches('^([[][0-9A-Fa-f:.]+[]]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$')",message="the address must be host:port, such as smartspot-env:7070: a DNS name or an IP address (an IPv6 address in brackets), a colon and the port number, without a scheme or a path"
// +kubebuilder:validation:XValidation:rule="!self.matches(':[0-9]{1,5}$') || (int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",message="the port of the address must be between 1 and 65535"
type HostPort string

// ConfigMapSource names a ConfigMap of the job's namespace.
type ConfigMapSource struct {
	// Name is the ConfigMap's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="configMap.name must be the name of a ConfigMap: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// Channel is a SmartSpot app channel.
// +kubebuilder:validation:Enum=food;hotel;flight;movie;medicine;travel
type Channel string

// SyntheticSource configures the built-in generator of SmartSpot-shaped episodes.
type SyntheticSource struct {
	// Channels are the app channels to generate episodes for, the names of
	// "espo dataset generate --channels". Default: all but medicine (the
	// benchmark's held-out channel), as for "espo dataset generate". TRAVEL1 and
	// TRAVEL2 of the benchmark are one channel, travel.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=6
	// +kubebuilder:default={food,hotel,flight,movie,travel}
	Channels []Channel `json:"channels,omitempty"`

	// Episodes is how many episodes to generate, spread evenly over the channels.
	// Default 100 (the benchmark has 102).
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Episodes int32 `json:"episodes,omitempty"`

	// Seed makes the generated episodes reproducible. Default 0, as for
	// "espo dataset generate".
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`

	// Difficulty is how hard the generated users are to read, the names of
	// "espo dataset generate --difficulty". standard (default): every preference
	// is revealed by a search, a filter or an option page, and a candidate is Yes
	// exactly when it fits them all. hard: about half of the preferences are
	// revealed only by behaviour (an item opened then rejected, an item saved, a
	// hint in the instruction), early choices are later changed, some labels are
	// noisy, negatives miss only on a weakly revealed preference, and detail pages
	// and requirements are paraphrased from many templates.
	// +optional
	// +kubebuilder:default=standard
	Difficulty SyntheticDifficulty `json:"difficulty,omitempty"`
}

// EnvironmentSource is an environment the policy lives through, and how many of its
// episodes each epoch and each evaluation takes. Episode seeds are disjoint across
// the training epochs (every epoch lives through new episodes), the validation and
// the test set.
//
// +kubebuilder:validation:XValidation:rule="has(self.simulated) != has(self.endpoint)",message="set exactly one of simulated (the built-in app) and endpoint (an environment server)"
type EnvironmentSource struct {
	// Simulated is the built-in simulated SmartSpot app: the generator's users living
	// in an app with search, filter chips, option pages, item pages, saved items and
	// past orders (see docs/environment-protocol.md).
	// +optional
	Simulated *SimulatedEnvironment `json:"simulated,omitempty"`

	// Endpoint is an environment server of the environment protocol (an emulator farm,
	// a browser pool) that the trainer calls over gRPC with the job's worker token.
	// It gives no demonstrations before the answers, so a job with an endpoint has no
	// SFT epochs: start it from a fine-tuned model (model.initialCheckpoint or
	// pretrained weights).
	// +optional
	Endpoint *EnvironmentEndpoint `json:"endpoint,omitempty"`

	// Episodes is the number of episodes (groups of G rollouts) per epoch. Default 100.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Episodes int32 `json:"episodes,omitempty"`

	// ValidationEpisodes is the number of held-out episodes lived through after each
	// epoch; 0 skips the validation. Default 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	ValidationEpisodes *int32 `json:"validationEpisodes,omitempty"`

	// TestEpisodes is the number of held-out episodes lived through at the end; 0
	// skips the test. Default 50.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	TestEpisodes *int32 `json:"testEpisodes,omitempty"`

	// MaxSteps caps the steps of an episode, every stage counted. Default 40.
	// +optional
	// +kubebuilder:default=40
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxSteps int32 `json:"maxSteps,omitempty"`
}

// EnvironmentEndpoint is an environment server the trainer calls (the protocol of
// docs/environment-protocol.md): every call carries the job's worker token (the key
// "token" of the Secret <job name>-worker-token, which the server may mount to check
// it) and is bounded by timeoutSeconds.
type EnvironmentEndpoint struct {
	// Address is the server's host:port, a Service of the job's namespace, say:
	// "smartspot-env:7070".
	// +required
	Address HostPort `json:"address"`

	// TimeoutSeconds bounds every Reset and Step call: a server that has not answered
	// by then fails the step, naming the address and the call. Default 30.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// Slots lists every value of each preference slot the server's users may hold
	// (slot: values), the vocabulary an intent is judged by: an intent that names
	// another value of a slot than the user's is wrong. Unset, an intent is judged by
	// the preferences the server reports alone, and a conflicting value goes unseen.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(slot, slot.matches('^[A-Za-z0-9_.-]{1,64}$') && size(self[slot]) > 0 && self[slot].all(v, v.trim() != ''))",message="every slot of slots needs a name of letters, digits, '_', '-' or '.' (at most 64) and at least one value, none of them empty: the values are the vocabulary an intent is judged by"
	Slots map[string]SlotValues `json:"slots,omitempty"`
}

// SlotValues are the values a preference slot may hold.
// +listType=atomic
// +kubebuilder:validation:MaxItems=256
// +kubebuilder:validation:items:MaxLength=256
type SlotValues []string

// SimulatedEnvironment configures the built-in simulated SmartSpot app.
type SimulatedEnvironment struct {
	// Channels are the app channels of the training episodes (an episode seed picks
	// one in turn). Default: all but medicine, as for synthetic sources.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=6
	// +kubebuilder:default={food,hotel,flight,movie,travel}
	Channels []Channel `json:"channels,omitempty"`

	// EvaluationChannels are the channels of the validation and test episodes; name
	// channels absent from channels to evaluate on apps the policy never trained in.
	// Default: channels.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=6
	EvaluationChannels []Channel `json:"evaluationChannels,omitempty"`

	// Difficulty is how hard the users are to read: standard (default) or hard (see
	// synthetic sources; on hard episodes the app's cards also write the values into
	// their text, and near misses miss a preference the instruction does not name).
	// +optional
	// +kubebuilder:default=standard
	Difficulty SyntheticDifficulty `json:"difficulty,omitempty"`

	// Seed is the seed of the world: with it, an episode seed names one episode.
	// Default 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`
}

// SyntheticDifficulty is how hard generated users are to read.
// +kubebuilder:validation:Enum=standard;hard
type SyntheticDifficulty string

// The difficulties of generated data.
const (
	// DifficultyStandard reveals every preference by a search, filter or option page.
	DifficultyStandard SyntheticDifficulty = "standard"
	// DifficultyHard reveals half the preferences by behaviour only, with
	// contradictions, label noise, hard negatives and paraphrases.
	DifficultyHard SyntheticDifficulty = "hard"
)

// DatasetSplit gives the fractions of the pooled episodes that go to each set; they
// must add up to 1. Whole episodes are assigned, after a seeded shuffle.
// (The rule lives on Datasets, where the fractions are always defaulted.)
type DatasetSplit struct {
	// Train is the fraction of episodes for training, in (0, 1]. Default "0.8".
	// +optional
	// +kubebuilder:default="0.8"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) > 0.0 && double(self) <= 1.0)",message="must be greater than 0 and at most 1"
	Train Decimal `json:"train,omitempty"`

	// Validation is the fraction of episodes evaluated after every epoch, in [0, 1].
	// Default "0.1".
	// +optional
	// +kubebuilder:default="0.1"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be between 0 and 1"
	Validation Decimal `json:"validation,omitempty"`

	// Test is the fraction of episodes evaluated at the end, in [0, 1]. Default "0.1".
	// +optional
	// +kubebuilder:default="0.1"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be between 0 and 1"
	Test Decimal `json:"test,omitempty"`

	// Seed orders the episodes before they are divided. Default 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	Seed int64 `json:"seed,omitempty"`
}

// RunPolicy holds the job-level policies.
type RunPolicy struct {
	// Suspend, while true, keeps the job without pods: setting it deletes the trainer
	// pods (the ConfigMap, Service and checkpoints stay), clearing it recreates them
	// from the current spec and the trainer resumes from its newest checkpoint. Kueue
	// admits a job by clearing it. Default false.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// BackoffLimit is how many gang restarts (all trainer pods recreated after one
	// failed) the job may take before it fails. Restarts after a disruption (see
	// MaxDisruptions) do not count. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// MaxDisruptions is how many gang restarts caused by a disrupted pod (one with
	// the condition DisruptionTarget: preempted, evicted by a node drain or for node
	// pressure, deleted by the taint manager or the pod garbage collector) the job
	// may take without counting them against BackoffLimit; past it a disruption
	// counts as a failure. Unset: no limit, no disruption counts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxDisruptions *int32 `json:"maxDisruptions,omitempty"`

	// ActiveDeadlineSeconds bounds the time the job may be active, counted from its
	// start time; past it the job fails with reason DeadlineExceeded. Unset: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ProgressDeadlineSeconds is how long a running job may go without progress
	// before it is taken as hung: no report from its trainer (a step, a change of
	// stage or epoch, an evaluation, a checkpoint) for this long, counted from the
	// later of the last report and the moment every pod of the attempt ran. Then the
	// job gets the Restarting condition with reason ProgressDeadlineExceeded, naming
	// the last progress and when it was, and the gang restarts from its newest
	// checkpoint as after a failed pod: counted against backoffLimit, after its
	// backoff. The trainer also fails a call to a policy worker that does not return
	// within half of it, naming the worker, the call and the wait, so that a hung
	// worker is named before the watchdog restarts the gang. It must be more than twice
	// spec.trainer.statusInterval (a moving job reports at least that often) and
	// should exceed the longest step, model load or evaluation; at most 31536000 (a
	// year). Unset: no watchdog, so
	// that a slow first load of a large model is never taken for a hang.
	// +optional
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=31536000
	ProgressDeadlineSeconds *int64 `json:"progressDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the job (and so its children) this many seconds
	// after it succeeded or failed. Unset: kept until deleted by hand.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// CheckpointSpec says where and how often the trainer saves its full state (weights,
// reference policy, optimizer moments, sampler position).
type CheckpointSpec struct {
	// PersistentVolumeClaim is the claim and folder that hold the checkpoints; it is
	// mounted read-write into rank 0.
	// +required
	PersistentVolumeClaim VolumePath `json:"persistentVolumeClaim"`

	// EverySteps is the number of optimizer steps between checkpoints; one is also
	// written at the end of every epoch. Default 100.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	EverySteps int32 `json:"everySteps,omitempty"`

	// Keep is how many of the newest checkpoints are retained. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Keep int32 `json:"keep,omitempty"`
}

// ExportSpec says where and what the trainer exports as a Hugging Face folder when
// the run succeeds (outcome Completed or TargetReached). A LoRA run writes a peft
// adapter (adapter_config.json, adapter_model.safetensors) and, with merge, the merged
// model under merged/; a full fine-tune writes config.json and safetensors shards with
// their index. Both carry the tokenizer, the processor and chat template where the
// model has them, generation_config.json, and espo-export.json, a manifest with the
// SHA-256 of every file. The folder is built beside the target and renamed into place,
// so a target never holds a partial export.
type ExportSpec struct {
	// PersistentVolumeClaim is the claim, mounted read-write into rank 0, and the
	// folder inside it that the export replaces. The path is required: the export
	// replaces that folder whole, never the claim's root.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.path) && self.path != '' && self.path != '.'",message="export.persistentVolumeClaim.path must name a folder inside the claim (for example models/run-1): the export replaces that folder whole"
	PersistentVolumeClaim VolumePath `json:"persistentVolumeClaim"`

	// Merge also writes the base model with the LoRA adapter merged into it, under
	// merged/, for tools that load one model. Only with model.lora. Default false.
	// +optional
	Merge bool `json:"merge,omitempty"`

	// BestBy exports, instead of the final policy, the checkpoint whose validation
	// evaluation scored highest on this metric (the earliest of equal scores), as the
	// Hugging Face Trainer's load_best_model_at_end does: the trainer keeps that
	// checkpoint from pruning, loads it after the last epoch, and the test evaluation
	// then evaluates it. Needs spec.checkpoint and validation episodes. Unset: the
	// final policy.
	// +optional
	BestBy EvalMetric `json:"bestBy,omitempty"`
}

// EvalMetric names a metric of an evaluation.
// +kubebuilder:validation:Enum=guiTypeAccuracy;elementAccuracy;operationF1;stepSuccessRate;intentAccuracy;recommendationAccuracy;formatRate
type EvalMetric string

// The evaluation metrics, named as in status.training.evaluation.
const (
	MetricGUITypeAccuracy        EvalMetric = "guiTypeAccuracy"
	MetricElementAccuracy        EvalMetric = "elementAccuracy"
	MetricOperationF1            EvalMetric = "operationF1"
	MetricStepSuccessRate        EvalMetric = "stepSuccessRate"
	MetricIntentAccuracy         EvalMetric = "intentAccuracy"
	MetricRecommendationAccuracy EvalMetric = "recommendationAccuracy"
	MetricFormatRate             EvalMetric = "formatRate"
)

// EarlyStoppingSpec ends a run early. Its conditions are checked after every
// validation evaluation (one per epoch), and a condition acts once it has held for
// Patience evaluations in a row; each condition counts its own row.
//
// +kubebuilder:validation:XValidation:rule="has(self.target) || has(self.minReward)",message="set target, minReward or both"
type EarlyStoppingSpec struct {
	// Target stops the run with success once the metric reaches the value (for
	// example recommendationAccuracy >= "0.8") in Patience evaluations in a row. The
	// evaluations of the SFT cold start count too: with the default 1 SFT epoch, a
	// Patience of 2 or more always lets the run reach its main epochs.
	// +optional
	Target *MetricTarget `json:"target,omitempty"`

	// MinReward fails the run when an epoch's mean step reward is below it in
	// Patience evaluations in a row: the reward has collapsed. SFT epochs have no
	// rewards: their evaluations neither count nor break the row.
	// +optional
	MinReward Decimal `json:"minReward,omitempty"`

	// Patience is how many validation evaluations in a row Target or MinReward must
	// hold before the run stops, each counted on its own. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Patience int32 `json:"patience,omitempty"`
}

// MetricTarget is a threshold on an evaluation metric.
type MetricTarget struct {
	// Metric is the evaluation metric compared.
	// +required
	Metric EvalMetric `json:"metric"`

	// Value is the threshold, in [0, 1]; the target is reached when metric >= value.
	// +required
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$') || (double(self) >= 0.0 && double(self) <= 1.0)",message="must be between 0 and 1"
	Value Decimal `json:"value"`
}
