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

// Package builders makes ESPOJobs for tests, in the style of kueue's test wrappers:
//
//	job := builders.MakeESPOJob("demo", "default").Replicas(2).Suspend(true).Obj()
package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// ESPOJobWrapper builds an ESPOJob; every method changes it and returns it.
type ESPOJobWrapper struct{ trainingv1alpha1.ESPOJob }

// MakeESPOJob starts a valid job: one synthetic dataset source "smartspot" of 20
// episodes (seed 1), the CPU worker, one replica, everything else defaulted.
func MakeESPOJob(name, namespace string) *ESPOJobWrapper {
	w := &ESPOJobWrapper{trainingv1alpha1.ESPOJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainingv1alpha1.GroupVersion.String(), Kind: "ESPOJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
	return w.SyntheticDataset("smartspot", 20, 1)
}

// Obj returns the job with every unset field that has a default set to it, as the API
// server would store it (v1alpha1's Default). The pointer is the wrapper's own.
func (w *ESPOJobWrapper) Obj() *trainingv1alpha1.ESPOJob {
	w.Spec.Default()
	return &w.ESPOJob
}

// Clone returns a deep copy of the wrapper.
func (w *ESPOJobWrapper) Clone() *ESPOJobWrapper {
	return &ESPOJobWrapper{*w.DeepCopy()}
}

// --- metadata

// UID sets metadata.uid.
func (w *ESPOJobWrapper) UID(uid string) *ESPOJobWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Generation sets metadata.generation.
func (w *ESPOJobWrapper) Generation(g int64) *ESPOJobWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Created sets metadata.creationTimestamp.
func (w *ESPOJobWrapper) Created(t time.Time) *ESPOJobWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Label sets a label of the job (for example kueue.x-k8s.io/queue-name).
func (w *ESPOJobWrapper) Label(k, v string) *ESPOJobWrapper {
	metav1.SetMetaDataLabel(&w.ObjectMeta, k, v)
	return w
}

// Annotation sets an annotation of the job.
func (w *ESPOJobWrapper) Annotation(k, v string) *ESPOJobWrapper {
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, k, v)
	return w
}

// --- datasets

// Sources replaces the dataset sources.
func (w *ESPOJobWrapper) Sources(s ...trainingv1alpha1.DatasetSource) *ESPOJobWrapper {
	w.Spec.Datasets.Sources = s
	return w
}

// SyntheticDataset replaces the dataset sources with one synthetic source.
func (w *ESPOJobWrapper) SyntheticDataset(name string, episodes int32, seed int64) *ESPOJobWrapper {
	return w.Sources(trainingv1alpha1.DatasetSource{Name: name, Synthetic: &trainingv1alpha1.SyntheticSource{Episodes: episodes, Seed: seed}})
}

// PVCDataset adds a source read from a claim, feeding split (trainingv1alpha1.SplitAll for pooled).
func (w *ESPOJobWrapper) PVCDataset(name, claim, path string, split trainingv1alpha1.DatasetSplitName) *ESPOJobWrapper {
	w.Spec.Datasets.Sources = append(w.Spec.Datasets.Sources, trainingv1alpha1.DatasetSource{
		Name: name, Split: split, PersistentVolumeClaim: &trainingv1alpha1.VolumePath{ClaimName: claim, Path: path},
	})
	return w
}

// ConfigMapDataset adds a source read from a ConfigMap, feeding split.
func (w *ESPOJobWrapper) ConfigMapDataset(name, configMap string, split trainingv1alpha1.DatasetSplitName) *ESPOJobWrapper {
	w.Spec.Datasets.Sources = append(w.Spec.Datasets.Sources, trainingv1alpha1.DatasetSource{
		Name: name, Split: split, ConfigMap: &trainingv1alpha1.ConfigMapSource{Name: configMap},
	})
	return w
}

// Split sets the train, validation and test fractions of the pooled sources.
func (w *ESPOJobWrapper) Split(train, validation, test trainingv1alpha1.Decimal) *ESPOJobWrapper {
	w.Spec.Datasets.Split.Train, w.Spec.Datasets.Split.Validation, w.Spec.Datasets.Split.Test = train, validation, test
	return w
}

// --- model

// Worker sets the kind of policy worker.
func (w *ESPOJobWrapper) Worker(k trainingv1alpha1.WorkerKind) *ESPOJobWrapper {
	w.Spec.Model.Worker = k
	return w
}

// CUDA makes the worker a cuda worker loading pretrained.
func (w *ESPOJobWrapper) CUDA(pretrained string) *ESPOJobWrapper {
	w.Spec.Model.Worker, w.Spec.Model.Pretrained = trainingv1alpha1.WorkerCUDA, pretrained
	return w
}

// External makes the worker an external one at endpoint (host:port).
func (w *ESPOJobWrapper) External(endpoint string) *ESPOJobWrapper {
	w.Spec.Model.Worker, w.Spec.Model.Endpoint = trainingv1alpha1.WorkerExternal, trainingv1alpha1.HostPort(endpoint)
	return w
}

// WorkerImage sets the worker container's image and, when given, its command.
func (w *ESPOJobWrapper) WorkerImage(image string, command ...string) *ESPOJobWrapper {
	w.Spec.Model.Image, w.Spec.Model.Command = image, command
	return w
}

// LoRA makes the worker train LoRA adapters of rank (spec.model.lora.rank).
func (w *ESPOJobWrapper) LoRA(rank int32) *ESPOJobWrapper {
	w.Spec.Model.LoRA = &trainingv1alpha1.LoRASpec{Rank: rank}
	return w
}

// Sharding sets how the PyTorch workers hold the model (spec.model.sharding).
func (w *ESPOJobWrapper) Sharding(s trainingv1alpha1.ModelSharding) *ESPOJobWrapper {
	w.Spec.Model.Sharding = s
	return w
}

// InitialCheckpoint starts the policy from a checkpoint in a claim.
func (w *ESPOJobWrapper) InitialCheckpoint(claim, path string) *ESPOJobWrapper {
	w.Spec.Model.InitialCheckpoint = &trainingv1alpha1.VolumePath{ClaimName: claim, Path: path}
	return w
}

// --- algorithm and rewards

// Algorithm sets the method of the main epochs.
func (w *ESPOJobWrapper) Algorithm(name trainingv1alpha1.AlgorithmName) *ESPOJobWrapper {
	w.Spec.Algorithm.Name = name
	return w
}

// Epochs sets the SFT cold-start epochs and the main epochs.
func (w *ESPOJobWrapper) Epochs(sft, main int32) *ESPOJobWrapper {
	w.Spec.Algorithm.SFTEpochs, w.Spec.Algorithm.Epochs = &sft, main
	return w
}

// GroupSize sets G.
func (w *ESPOJobWrapper) GroupSize(g int32) *ESPOJobWrapper {
	w.Spec.Algorithm.GroupSize = g
	return w
}

// LearningRate sets the learning rate.
func (w *ESPOJobWrapper) LearningRate(lr trainingv1alpha1.Decimal) *ESPOJobWrapper {
	w.Spec.Algorithm.LearningRate = lr
	return w
}

// Seed sets the run's seed.
func (w *ESPOJobWrapper) Seed(seed int64) *ESPOJobWrapper {
	w.Spec.Algorithm.Seed = seed
	return w
}

// COUTWeight sets w, the weight of the COUT reward ("0" is the no-COUT ablation).
func (w *ESPOJobWrapper) COUTWeight(weight trainingv1alpha1.Decimal) *ESPOJobWrapper {
	w.Spec.Rewards.COUT.Weight = weight
	return w
}

// Embedder names the embedding service of the intent rewards
// (spec.rewards.intent.embedder) by its endpoint.
func (w *ESPOJobWrapper) Embedder(endpoint string) *ESPOJobWrapper {
	w.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Endpoint: endpoint}
	return w
}

// EmbedderAPIKey sets the Secret key that holds the embedding service's API key
// (spec.rewards.intent.embedder.apiKeySecretRef); call Embedder first.
func (w *ESPOJobWrapper) EmbedderAPIKey(secret, key string) *ESPOJobWrapper {
	w.Spec.Rewards.Intent.Embedder.APIKeySecretRef = &trainingv1alpha1.SecretKeyRef{Name: secret, Key: key}
	return w
}

// MLflow records the run in the MLflow tracking server at uri (spec.tracking.mlflow),
// in experiment, with the credentials of the Secret named secret ("": none).
func (w *ESPOJobWrapper) MLflow(uri, experiment, secret string) *ESPOJobWrapper {
	if w.Spec.Tracking == nil {
		w.Spec.Tracking = &trainingv1alpha1.TrackingSpec{}
	}
	w.Spec.Tracking.MLflow = &trainingv1alpha1.MLflowTracking{TrackingURI: uri, Experiment: experiment}
	if secret != "" {
		w.Spec.Tracking.MLflow.CredentialsSecret = &trainingv1alpha1.SecretReference{Name: secret}
	}
	return w
}

// --- trainer pods

// Replicas sets the number of trainer pods.
func (w *ESPOJobWrapper) Replicas(n int32) *ESPOJobWrapper {
	w.Spec.Trainer.Replicas = n
	return w
}

// WorkersPerReplica sets the number of policy workers in each pod.
func (w *ESPOJobWrapper) WorkersPerReplica(n int32) *ESPOJobWrapper {
	w.Spec.Trainer.WorkersPerReplica = n
	return w
}

// Image sets the trainer container's image.
func (w *ESPOJobWrapper) Image(image string) *ESPOJobWrapper {
	w.Spec.Trainer.Image = image
	return w
}

// Resources sets the worker container's resources.
func (w *ESPOJobWrapper) Resources(r corev1.ResourceRequirements) *ESPOJobWrapper {
	w.Spec.Trainer.Resources = r
	return w
}

// GPUs requests and limits n nvidia.com/gpu for each pod's worker container.
func (w *ESPOJobWrapper) GPUs(n int64) *ESPOJobWrapper {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	r := &w.Spec.Trainer.Resources
	setEntry(&r.Requests, "nvidia.com/gpu", q)
	setEntry(&r.Limits, "nvidia.com/gpu", q)
	return w
}

// setEntry sets (*m)[k] = v, making the map first when it is nil.
func setEntry[M ~map[K]V, K comparable, V any](m *M, k K, v V) {
	if *m == nil {
		*m = M{}
	}
	(*m)[k] = v
}

// Env adds an environment variable to the trainer pods' containers.
func (w *ESPOJobWrapper) Env(name, value string) *ESPOJobWrapper {
	w.Spec.Trainer.Env = append(w.Spec.Trainer.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// NodeSelector sets a node-selector entry of the trainer pods.
func (w *ESPOJobWrapper) NodeSelector(k, v string) *ESPOJobWrapper {
	setEntry(&w.Spec.Trainer.NodeSelector, k, v)
	return w
}

// Toleration adds a toleration to the trainer pods.
func (w *ESPOJobWrapper) Toleration(t corev1.Toleration) *ESPOJobWrapper {
	w.Spec.Trainer.Tolerations = append(w.Spec.Trainer.Tolerations, t)
	return w
}

// PodLabel sets a label of the trainer pods.
func (w *ESPOJobWrapper) PodLabel(k, v string) *ESPOJobWrapper {
	setEntry(&w.Spec.Trainer.Labels, k, v)
	return w
}

// PodAnnotation sets an annotation of the trainer pods.
func (w *ESPOJobWrapper) PodAnnotation(k, v string) *ESPOJobWrapper {
	setEntry(&w.Spec.Trainer.Annotations, k, v)
	return w
}

// SchedulingGate adds a scheduling gate to the trainer pods.
func (w *ESPOJobWrapper) SchedulingGate(name string) *ESPOJobWrapper {
	w.Spec.Trainer.SchedulingGates = append(w.Spec.Trainer.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return w
}

// PriorityClassName sets the trainer pods' priority class.
func (w *ESPOJobWrapper) PriorityClassName(name string) *ESPOJobWrapper {
	w.Spec.Trainer.PriorityClassName = name
	return w
}

// Gang makes the trainer pods a gang of the policy's scheduler, in the Volcano queue
// when queue is not empty.
func (w *ESPOJobWrapper) Gang(policy trainingv1alpha1.GangPolicy, queue string) *ESPOJobWrapper {
	w.Spec.Trainer.Scheduling = &trainingv1alpha1.SchedulingSpec{Gang: policy, Queue: queue}
	return w
}

// TerminationGracePeriod sets how long a trainer pod has to stop after SIGTERM.
func (w *ESPOJobWrapper) TerminationGracePeriod(seconds int64) *ESPOJobWrapper {
	w.Spec.Trainer.TerminationGracePeriodSeconds = &seconds
	return w
}

// ServiceAccountName runs the trainer pods under this service account.
func (w *ESPOJobWrapper) ServiceAccountName(name string) *ESPOJobWrapper {
	w.Spec.Trainer.ServiceAccountName = name
	return w
}

// --- run policy, checkpoints, early stopping

// Suspend sets spec.runPolicy.suspend.
func (w *ESPOJobWrapper) Suspend(s bool) *ESPOJobWrapper {
	w.Spec.RunPolicy.Suspend = s
	return w
}

// BackoffLimit sets the number of gang restarts allowed.
func (w *ESPOJobWrapper) BackoffLimit(n int32) *ESPOJobWrapper {
	w.Spec.RunPolicy.BackoffLimit = &n
	return w
}

// MaxDisruptions sets the number of gang restarts after a disruption that do not
// count against the backoff limit.
func (w *ESPOJobWrapper) MaxDisruptions(n int32) *ESPOJobWrapper {
	w.Spec.RunPolicy.MaxDisruptions = &n
	return w
}

// ActiveDeadlineSeconds sets the job's deadline.
func (w *ESPOJobWrapper) ActiveDeadlineSeconds(s int64) *ESPOJobWrapper {
	w.Spec.RunPolicy.ActiveDeadlineSeconds = &s
	return w
}

// ProgressDeadlineSeconds sets the watchdog's deadline for progress.
func (w *ESPOJobWrapper) ProgressDeadlineSeconds(s int64) *ESPOJobWrapper {
	w.Spec.RunPolicy.ProgressDeadlineSeconds = &s
	return w
}

// TTLSecondsAfterFinished sets the time to keep a finished job.
func (w *ESPOJobWrapper) TTLSecondsAfterFinished(s int32) *ESPOJobWrapper {
	w.Spec.RunPolicy.TTLSecondsAfterFinished = &s
	return w
}

// Checkpoint saves checkpoints to a claim every everySteps steps.
func (w *ESPOJobWrapper) Checkpoint(claim, path string, everySteps int32) *ESPOJobWrapper {
	w.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{
		PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: claim, Path: path}, EverySteps: everySteps,
	}
	return w
}

// Export exports the trained policy to path in claim (spec.export); merge writes the
// merged model too, bestBy, when not empty, picks the best checkpoint by that metric.
func (w *ESPOJobWrapper) Export(claim, path string, merge bool, bestBy trainingv1alpha1.EvalMetric) *ESPOJobWrapper {
	w.Spec.Export = &trainingv1alpha1.ExportSpec{PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: claim, Path: path},
		Merge: merge, BestBy: bestBy}
	return w
}

// StopAt stops the run with success once metric reaches value.
func (w *ESPOJobWrapper) StopAt(metric trainingv1alpha1.EvalMetric, value trainingv1alpha1.Decimal) *ESPOJobWrapper {
	if w.Spec.EarlyStopping == nil {
		w.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{}
	}
	w.Spec.EarlyStopping.Target = &trainingv1alpha1.MetricTarget{Metric: metric, Value: value}
	return w
}

// MinReward fails the run when the mean step reward falls below r.
func (w *ESPOJobWrapper) MinReward(r trainingv1alpha1.Decimal) *ESPOJobWrapper {
	if w.Spec.EarlyStopping == nil {
		w.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{}
	}
	w.Spec.EarlyStopping.MinReward = r
	return w
}

// --- status

// Phase sets status.phase.
func (w *ESPOJobWrapper) Phase(p trainingv1alpha1.JobPhase) *ESPOJobWrapper {
	w.Status.Phase = p
	return w
}

// Condition sets a condition (by type), as meta.SetStatusCondition does.
func (w *ESPOJobWrapper) Condition(c metav1.Condition) *ESPOJobWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, c)
	return w
}

// ObservedGeneration sets status.observedGeneration.
func (w *ESPOJobWrapper) ObservedGeneration(g int64) *ESPOJobWrapper {
	w.Status.ObservedGeneration = g
	return w
}

// StartTime sets status.startTime.
func (w *ESPOJobWrapper) StartTime(t time.Time) *ESPOJobWrapper {
	mt := metav1.NewTime(t)
	w.Status.StartTime = &mt
	return w
}

// CompletionTime sets status.completionTime.
func (w *ESPOJobWrapper) CompletionTime(t time.Time) *ESPOJobWrapper {
	mt := metav1.NewTime(t)
	w.Status.CompletionTime = &mt
	return w
}

// Restarts sets status.restarts.
func (w *ESPOJobWrapper) Restarts(n int32) *ESPOJobWrapper {
	w.Status.Restarts = n
	return w
}

// Disruptions sets status.disruptions.
func (w *ESPOJobWrapper) Disruptions(n int32) *ESPOJobWrapper {
	w.Status.Disruptions = n
	return w
}

// ConsecutiveFailures sets status.consecutiveFailures.
func (w *ESPOJobWrapper) ConsecutiveFailures(n int32) *ESPOJobWrapper {
	w.Status.ConsecutiveFailures = n
	return w
}

// PodCounts sets status.active, ready, succeeded and failed.
func (w *ESPOJobWrapper) PodCounts(active, ready, succeeded, failed int32) *ESPOJobWrapper {
	w.Status.Active, w.Status.Ready, w.Status.Succeeded, w.Status.Failed = active, ready, succeeded, failed
	return w
}

// Training sets status.training.
func (w *ESPOJobWrapper) Training(t *trainingv1alpha1.TrainingStatus) *ESPOJobWrapper {
	w.Status.Training = t
	return w
}
