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

package controllers

import (
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// PodOptions are the operator-wide settings of the trainer pods.
type PodOptions struct {
	// TrainerImage runs the trainer and the CPU workers unless the job names another
	// image: by default the operator's own image.
	TrainerImage string
	// CUDAWorkerImage runs cuda workers unless spec.model.image names another.
	CUDAWorkerImage string
}

// The containers of a trainer pod.
const (
	// ContainerTrainer runs "espo trainer" on rank 0.
	ContainerTrainer = "trainer"
	// ContainerWorker hosts the policy worker: on every rank > 0, and with cuda also
	// on rank 0.
	ContainerWorker = "worker"
)

// Environment variables the controller sets in every container of a trainer pod.
const (
	EnvRank          = "ESPO_RANK"
	EnvWorldSize     = "ESPO_WORLD_SIZE"
	EnvJobName       = "ESPO_JOB_NAME"
	EnvJobNamespace  = "ESPO_JOB_NAMESPACE"
	EnvDriverAddr    = "ESPO_DRIVER_ADDR"
	EnvConfig        = "ESPO_CONFIG"
	EnvWorkersPerPod = "ESPO_WORKERS_PER_REPLICA"
	EnvWorkerListen  = "ESPO_WORKER_LISTEN"
	// EnvWorkerPaths lists, separated by colons, the folders a worker container may
	// save to and load from.
	EnvWorkerPaths        = trainingv1alpha1.WorkerPathsEnv
	workerTokenVolumeName = "worker-token"
	nonRootID             = int64(65532)
	configVolume          = "config"
	tmpVolume             = "tmp"
	outputVolume          = "output"
	shmVolume             = "dshm"
	checkpointVolume      = "checkpoints"
	exportVolume          = "export"
	modelsVolume          = "models"
	initialCkptVolume     = "initial-checkpoint"
	datasetVolumePrefix   = "data-"
)

// configPath is the path of the run config inside a trainer pod.
var configPath = path.Join(ConfigDir, trainingv1alpha1.RunConfigKey)

// buildPod builds the trainer pod of a rank for the job's current restart attempt
// (status.restarts). Rank 0 runs the trainer, which reads the datasets, writes the
// checkpoints and reports to the job; every other rank hosts a policy worker. With
// cuda every rank, rank 0 included, has a worker container that holds the GPUs.
func buildPod(job *trainingv1alpha1.ESPOJob, rank int32, o PodOptions) *corev1.Pod {
	t := &job.Spec.Trainer
	pod := &corev1.Pod{
		ObjectMeta: podMeta(job, rank),
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			Hostname:                      podName(job, rank),
			Subdomain:                     serviceName(job),
			ServiceAccountName:            trainerServiceAccountName(job),
			AutomountServiceAccountToken:  ptr.To(rank == 0), // only the trainer reports
			EnableServiceLinks:            ptr.To(false),
			NodeSelector:                  maps.Clone(t.NodeSelector),
			Tolerations:                   t.Tolerations,
			Affinity:                      t.Affinity,
			SchedulingGates:               t.SchedulingGates,
			PriorityClassName:             t.PriorityClassName,
			SchedulerName:                 t.SchedulerName,
			TerminationGracePeriodSeconds: t.TerminationGracePeriodSeconds,
			ImagePullSecrets:              t.ImagePullSecrets,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(nonRootID),
				RunAsGroup:     ptr.To(nonRootID),
				FSGroup:        ptr.To(nonRootID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: podVolumes(job, rank),
		},
	}
	cuda := job.Spec.Model.Worker == trainingv1alpha1.WorkerCUDA
	if rank == 0 {
		c := baseContainer(job, rank, ContainerTrainer, trainerImage(job, o))
		c.Command = []string{"espo", "trainer", "--config", configPath}
		c.Ports = []corev1.ContainerPort{
			{Name: "driver", ContainerPort: DriverPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: TrainerMetricsPort, Protocol: corev1.ProtocolTCP},
		}
		c.VolumeMounts = append(c.VolumeMounts, trainerMounts(job)...)
		c.Env = append(c.Env, trainerEnv(job)...)
		if !cuda { // the trainer's in-process CPU workers hold the model
			c.Resources = *t.Resources.DeepCopy()
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	if rank > 0 || cuda {
		w := workerContainer(job, rank, o)
		switch {
		case rank == 0: // the cuda worker beside the trainer: Save and Load use the
			// checkpoint folder, and screenshot paths are under the datasets' mounts
			w.VolumeMounts = append(w.VolumeMounts, dataMounts(job)...)
		case checkpointInEveryPod(job): // each sharded worker saves and loads its own shards
			w.VolumeMounts = append(w.VolumeMounts, corev1.VolumeMount{Name: checkpointVolume, MountPath: CheckpointMountPath})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, w)
	}
	joinGang(job, pod)
	return pod
}

// podMeta is the metadata of the trainer pod of a rank: its name, the job's namespace,
// its labels, the job's pod annotations, and the job as its controller (owner), so
// that deleting the job deletes it and its events requeue the job.
func podMeta(job *trainingv1alpha1.ESPOJob, rank int32) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            podName(job, rank),
		Namespace:       job.Namespace,
		Labels:          podLabels(job, rank),
		Annotations:     maps.Clone(job.Spec.Trainer.Annotations),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, trainingv1alpha1.GroupVersion.WithKind("ESPOJob"))},
	}
}

// baseContainer is what every container of a trainer pod shares: image, environment,
// the config, /tmp and worker token mounts (and /dev/shm with GPUs), a non-root security context
// with a read-only root filesystem, and termination messages at kubelet's default
// path, where espo writes its final error, that fall back to the log's tail, so that
// a failure's reason can name what went wrong.
func baseContainer(job *trainingv1alpha1.ESPOJob, rank int32, name, image string) corev1.Container {
	c := corev1.Container{
		Name:                     name,
		Image:                    image,
		ImagePullPolicy:          job.Spec.Trainer.ImagePullPolicy,
		Env:                      podEnv(job, rank),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: configVolume, MountPath: ConfigDir, ReadOnly: true},
			{Name: tmpVolume, MountPath: "/tmp"},
			workerTokenMount(),
		},
	}
	if requestsGPUs(job) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: shmVolume, MountPath: "/dev/shm"})
	}
	if job.Spec.Model.InitialCheckpoint != nil { // every container loads or verifies it
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: initialCkptVolume,
			MountPath: trainingv1alpha1.InitialCheckpointMountPath, ReadOnly: true})
	}
	return c
}

// workerContainer is the container that hosts a rank's policy worker: the CPU worker
// of the operator's image ("espo worker --device cpu") or the cuda worker image, with
// the job's resources.
func workerContainer(job *trainingv1alpha1.ESPOJob, rank int32, o PodOptions) corev1.Container {
	m := &job.Spec.Model
	c := baseContainer(job, rank, ContainerWorker, workerImage(job, o))
	c.Command = m.Command
	if len(c.Command) == 0 && m.Worker != trainingv1alpha1.WorkerCUDA {
		c.Command = []string{"espo", "worker", "--device", "cpu"} // it listens on $ESPO_WORKER_LISTEN
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: EnvWorkerListen, Value: workerListenAddr(job)})
	if paths := workerPaths(job, rank); len(paths) > 0 {
		c.Env = append(c.Env, corev1.EnvVar{Name: EnvWorkerPaths, Value: strings.Join(paths, ":")})
	}
	if !workersBesideTrainerOnly(job) {
		c.Ports = []corev1.ContainerPort{{Name: "worker", ContainerPort: WorkerPort, Protocol: corev1.ProtocolTCP}}
		for k := int32(1); k < workerProcesses(job); k++ { // one cuda worker process per GPU
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: fmt.Sprintf("worker-%d", k), ContainerPort: WorkerPort + k, Protocol: corev1.ProtocolTCP})
		}
	}
	c.Resources = *job.Spec.Trainer.Resources.DeepCopy()
	if w := m.Weights; w != nil && m.Worker == trainingv1alpha1.WorkerCUDA {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: modelsVolume, MountPath: trainingv1alpha1.ModelsMountPath,
			SubPath: w.Path, ReadOnly: true})
	}
	return c
}

// workersBesideTrainerOnly reports whether every worker of the job lives in the
// trainer's pod (cuda, one replica): no one outside the pod has to reach them.
func workersBesideTrainerOnly(job *trainingv1alpha1.ESPOJob) bool {
	return job.Spec.Model.Worker == trainingv1alpha1.WorkerCUDA && replicas(job) == 1
}

// workerListenAddr is where a worker container's first worker listens (the others
// on the next ports): on loopback when only the trainer beside it dials it, else on
// every address of the pod.
func workerListenAddr(job *trainingv1alpha1.ESPOJob) string {
	if workersBesideTrainerOnly(job) {
		return fmt.Sprintf("127.0.0.1:%d", WorkerPort)
	}
	return fmt.Sprintf(":%d", WorkerPort)
}

// workerPaths are the folders a rank's worker container may save to and load from:
// the checkpoint claim (mounted on rank 0, and on every rank of a sharded job), the
// export claim (rank 0) and the initial checkpoint. A worker without any refuses
// every save, load and export.
func workerPaths(job *trainingv1alpha1.ESPOJob, rank int32) []string {
	var paths []string
	if job.Spec.Checkpoint != nil && (rank == 0 || checkpointInEveryPod(job)) {
		paths = append(paths, CheckpointMountPath)
	}
	if job.Spec.Export != nil && rank == 0 {
		paths = append(paths, ExportMountPath)
	}
	if job.Spec.Model.InitialCheckpoint != nil {
		paths = append(paths, trainingv1alpha1.InitialCheckpointMountPath)
	}
	return paths
}

// trainerImage is the image of the trainer (and of the CPU workers).
// workerImage is the image of the job's worker containers: spec.model.image, else
// the cuda worker image for cuda, else the trainer's.
func workerImage(job *trainingv1alpha1.ESPOJob, o PodOptions) string {
	m := &job.Spec.Model
	switch {
	case m.Image != "":
		return m.Image
	case m.Worker == trainingv1alpha1.WorkerCUDA && o.CUDAWorkerImage != "":
		return o.CUDAWorkerImage
	}
	return trainerImage(job, o)
}

func trainerImage(job *trainingv1alpha1.ESPOJob, o PodOptions) string {
	if job.Spec.Trainer.Image != "" {
		return job.Spec.Trainer.Image
	}
	return o.TrainerImage
}

// podEnv is the environment of every container of a rank's pod: the job's extra
// environment first, then the controller's variables, which win over it.
func podEnv(job *trainingv1alpha1.ESPOJob, rank int32) []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(job.Spec.Trainer.Env)+9)
	env = append(env, job.Spec.Trainer.Env...)
	return append(env,
		corev1.EnvVar{Name: EnvRank, Value: strconv.Itoa(int(rank))},
		corev1.EnvVar{Name: EnvWorldSize, Value: strconv.Itoa(int(replicas(job)))},
		corev1.EnvVar{Name: EnvJobName, Value: job.Name},
		corev1.EnvVar{Name: EnvJobNamespace, Value: job.Namespace},
		corev1.EnvVar{Name: EnvDriverAddr, Value: fmt.Sprintf("%s:%d", podFQDN(job, 0), DriverPort)},
		corev1.EnvVar{Name: EnvConfig, Value: configPath},
		corev1.EnvVar{Name: EnvWorkersPerPod, Value: strconv.Itoa(int(max(job.Spec.Trainer.WorkersPerReplica, 1)))},
		corev1.EnvVar{Name: "HOME", Value: "/tmp"}, // the root filesystem is read-only
		workerTokenEnv(),
	)
}

// trainerEnv is the trainer container's own environment, after podEnv's (so that it
// wins over spec.trainer.env): with spec.rewards.intent.embedder.apiKeySecretRef, the
// embedding service's API key, and with spec.tracking.mlflow.credentialsSecret, the
// tracking server's credentials, which the kubelet takes from the Secrets
// (valueFrom.secretKeyRef), so that the controller needs no access to Secrets and the
// keys are in no object the controller writes. Only the trainer calls the service and
// the tracker, so no other container gets them.
//
// spec.rewards is left out of the pod template hash (podTemplateInputs): it is
// immutable, so what is read from it here can never differ between a job's pods;
// spec.tracking is in it.
func trainerEnv(job *trainingv1alpha1.ESPOJob) []corev1.EnvVar {
	var env []corev1.EnvVar
	if e := job.Spec.Rewards.Intent.Embedder; e != nil && e.APIKeySecretRef != nil {
		ref := e.APIKeySecretRef
		env = append(env, corev1.EnvVar{Name: trainingv1alpha1.EmbedderAPIKeyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key},
		}})
	}
	return append(env, mlflowCredentialsEnv(job)...)
}

// mlflowCredentialsEnv is the trainer container's MLflow credentials from
// spec.tracking.mlflow.credentialsSecret: its keys token, username and password as
// MLFLOW_TRACKING_TOKEN, _USERNAME and _PASSWORD, each optional, so that a Secret that
// is missing or holds only some of them does not keep the pod from starting (a
// tracker must not stop the run): the trainer finds what is there, and when it is not
// enough says so in the TrackingDegraded condition, naming the field.
func mlflowCredentialsEnv(job *trainingv1alpha1.ESPOJob) []corev1.EnvVar {
	tr := job.Spec.Tracking
	if tr == nil || tr.MLflow == nil || tr.MLflow.CredentialsSecret == nil {
		return nil
	}
	name := tr.MLflow.CredentialsSecret.Name
	optional := true
	var env []corev1.EnvVar
	for _, kv := range [][2]string{{trainingv1alpha1.MLflowTokenEnv, "token"}, {trainingv1alpha1.MLflowUsernameEnv, "username"},
		{trainingv1alpha1.MLflowPasswordEnv, "password"}} {
		env = append(env, corev1.EnvVar{Name: kv[0], ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: kv[1], Optional: &optional}}})
	}
	return env
}

// trainerMounts are rank 0's extra mounts: every PVC or ConfigMap dataset source
// read-only under DataRoot, the checkpoint and export claims, and the output folder.
func trainerMounts(job *trainingv1alpha1.ESPOJob) []corev1.VolumeMount {
	return append(dataMounts(job), corev1.VolumeMount{Name: outputVolume, MountPath: OutputDir})
}

// dataMounts are the dataset sources read-only under DataRoot and the checkpoint and
// export claims: what rank 0's trainer and cuda worker containers share (the worker
// writes the export; the trainer checks at start that it can).
func dataMounts(job *trainingv1alpha1.ESPOJob) []corev1.VolumeMount {
	var mounts []corev1.VolumeMount
	for _, src := range job.Spec.Datasets.Sources {
		if src.PersistentVolumeClaim != nil || src.ConfigMap != nil {
			mounts = append(mounts, corev1.VolumeMount{
				Name: datasetVolumePrefix + src.Name, MountPath: path.Join(DataRoot, src.Name), ReadOnly: true,
			})
		}
	}
	if job.Spec.Checkpoint != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: checkpointVolume, MountPath: CheckpointMountPath})
	}
	if job.Spec.Export != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: exportVolume, MountPath: ExportMountPath})
	}
	return mounts
}

// podVolumes are the volumes of a rank's pod: the run config, /tmp, the worker token, with GPUs a
// memory-backed /dev/shm, with cuda the claim of spec.model.weights, and the claim of
// spec.model.initialCheckpoint, for every rank (read-only, so one ReadOnlyMany claim
// serves every pod); the datasets, checkpoints, export and output for rank 0 only (a
// ReadWriteOnce claim can be mounted by one node), except that a sharded job's
// checkpoint claim is every rank's (checkpointInEveryPod).
func podVolumes(job *trainingv1alpha1.ESPOJob, rank int32) []corev1.Volume {
	vols := []corev1.Volume{
		{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMapName(job)},
		}}},
		{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		workerTokenVolume(job),
	}
	if requestsGPUs(job) {
		vols = append(vols, corev1.Volume{Name: shmVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory},
		}})
	}
	if w := job.Spec.Model.Weights; w != nil && job.Spec.Model.Worker == trainingv1alpha1.WorkerCUDA {
		vols = append(vols, corev1.Volume{Name: modelsVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: w.ClaimName, ReadOnly: true},
		}})
	}
	if ic := job.Spec.Model.InitialCheckpoint; ic != nil {
		vols = append(vols, corev1.Volume{Name: initialCkptVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ic.ClaimName, ReadOnly: true},
		}})
	}
	if rank != 0 {
		if checkpointInEveryPod(job) {
			vols = append(vols, checkpointClaimVolume(job))
		}
		return vols
	}
	for _, src := range job.Spec.Datasets.Sources {
		var vs corev1.VolumeSource
		switch {
		case src.PersistentVolumeClaim != nil:
			vs.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: src.PersistentVolumeClaim.ClaimName, ReadOnly: true,
			}
		case src.ConfigMap != nil:
			vs.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: src.ConfigMap.Name}}
		default:
			continue // synthetic: generated in the trainer
		}
		vols = append(vols, corev1.Volume{Name: datasetVolumePrefix + src.Name, VolumeSource: vs})
	}
	if job.Spec.Checkpoint != nil {
		vols = append(vols, checkpointClaimVolume(job))
	}
	if e := job.Spec.Export; e != nil {
		vols = append(vols, corev1.Volume{Name: exportVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: e.PersistentVolumeClaim.ClaimName},
		}})
	}
	return append(vols, corev1.Volume{Name: outputVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// checkpointInEveryPod reports whether every rank mounts the checkpoint claim: a
// sharded (or hybrid) job's workers each save and load their own shards of the model
// (a claim of more than one node's pods must then be ReadWriteMany).
func checkpointInEveryPod(job *trainingv1alpha1.ESPOJob) bool {
	return job.Spec.Checkpoint != nil && job.Spec.Model.Shards()
}

// checkpointClaimVolume is the volume of spec.checkpoint's claim.
func checkpointClaimVolume(job *trainingv1alpha1.ESPOJob) corev1.Volume {
	return corev1.Volume{Name: checkpointVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.Spec.Checkpoint.PersistentVolumeClaim.ClaimName},
	}}
}

// requestsGPUs reports whether the job's resources request or limit a GPU resource
// (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/...).
func requestsGPUs(job *trainingv1alpha1.ESPOJob) bool {
	r := &job.Spec.Trainer.Resources
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name, q := range l {
			if strings.Contains(string(name), "gpu") && !q.IsZero() {
				return true
			}
		}
	}
	return false
}
