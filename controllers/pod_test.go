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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// wantPod is the pod of a rank of a two-replica CPU job built from makeJob, with no
// dataset volume or checkpoint: the base the cases below change.
func wantPod(rank int32) *corev1.Pod {
	name := map[int32]string{0: "demo-trainer-0", 1: "demo-trainer-1"}[rank]
	role := map[int32]string{0: "trainer", 1: "worker"}[rank]
	env := []corev1.EnvVar{
		{Name: "ESPO_RANK", Value: map[int32]string{0: "0", 1: "1"}[rank]},
		{Name: "ESPO_WORLD_SIZE", Value: "2"},
		{Name: "ESPO_JOB_NAME", Value: "demo"},
		{Name: "ESPO_JOB_NAMESPACE", Value: "ns"},
		{Name: "ESPO_DRIVER_ADDR", Value: "demo-trainer-0.demo.ns.svc:29500"},
		{Name: "ESPO_CONFIG", Value: "/etc/espo/run.yaml"},
		{Name: "ESPO_WORKERS_PER_REPLICA", Value: "1"},
		{Name: "HOME", Value: "/tmp"},
		{Name: "ESPO_WORKER_TOKEN_FILE", Value: "/var/run/secrets/espo.dev/worker-token/token"},
	}
	c := corev1.Container{
		Name:                     role,
		Image:                    "espo:v1",
		Env:                      env,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/espo", ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "worker-token", MountPath: "/var/run/secrets/espo.dev/worker-token", ReadOnly: true},
		},
	}
	vols := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "demo-config"}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "worker-token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "demo-worker-token", DefaultMode: ptr.To(int32(0o440))}}},
	}
	if rank == 0 {
		c.Command = []string{"espo", "trainer", "--config", "/etc/espo/run.yaml"}
		c.Ports = []corev1.ContainerPort{
			{Name: "driver", ContainerPort: 29500, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "output", MountPath: "/var/run/espo/output"})
		vols = append(vols, corev1.Volume{Name: "output", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	} else {
		c.Command = []string{"espo", "worker", "--device", "cpu"}
		c.Env = append(c.Env, corev1.EnvVar{Name: "ESPO_WORKER_LISTEN", Value: ":50051"})
		c.Ports = []corev1.ContainerPort{{Name: "worker", ContainerPort: 50051, Protocol: corev1.ProtocolTCP}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns",
			Labels: map[string]string{
				"training.espo.dev/job-name": "demo", "training.espo.dev/job-uid": "uid-1",
				"app.kubernetes.io/managed-by": "espo-operator", "training.espo.dev/rank": map[int32]string{0: "0", 1: "1"}[rank],
				"training.espo.dev/role": role, "training.espo.dev/restart-attempt": "0",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "training.espo.dev/v1alpha1", Kind: "ESPOJob",
				Name: "demo", UID: "uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			Hostname:                     name,
			Subdomain:                    "demo",
			ServiceAccountName:           "espo-trainer",
			AutomountServiceAccountToken: ptr.To(rank == 0),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), RunAsGroup: ptr.To(int64(65532)),
				FSGroup: ptr.To(int64(65532)), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{c},
			Volumes:    vols,
		},
	}
}

func TestBuildPod(t *testing.T) {
	gpu := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
	}
	cpu := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	toleration := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	shmMount := corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"}
	shm := corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}

	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		rank int32
		want func() *corev1.Pod
	}{
		"rank 0 runs the trainer with the job's resources": {
			job: makeJob().Replicas(2).Resources(cpu).Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				p.Spec.Containers[0].Resources = cpu
				return p
			},
		},
		"rank 1 runs a CPU worker, without a service account token": {
			job: makeJob().Replicas(2).Resources(cpu).Obj(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				p.Spec.Containers[0].Resources = cpu
				return p
			},
		},
		"scheduling fields, pod labels and annotations, a restart attempt": {
			job: makeJob().Replicas(2).NodeSelector("pool", "a").Toleration(toleration).PriorityClassName("high").
				SchedulingGate("kueue.x-k8s.io/admission").PodLabel("team", "rec").PodLabel(LabelRank, "9").
				PodAnnotation("note", "x").Env("NCCL_DEBUG", "INFO").Image("mine:v2").Restarts(3).TerminationGracePeriod(120).Obj(),
			rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				p.Labels["team"] = "rec"
				p.Labels[LabelRestartAttempt] = "3"
				p.Annotations = map[string]string{"note": "x"}
				p.Spec.NodeSelector = map[string]string{"pool": "a"}
				p.Spec.Tolerations = []corev1.Toleration{toleration}
				p.Spec.PriorityClassName = "high"
				p.Spec.TerminationGracePeriodSeconds = new(int64(120))
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
				c := &p.Spec.Containers[0]
				c.Image = "mine:v2" // the CPU worker follows the trainer's image
				c.Env = append([]corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}, c.Env...)
				return p
			},
		},
		"datasets and checkpoints are mounted in rank 0 only": {
			job: makeJob().Replicas(2).PVCDataset("logs", "claim-a", "x.jsonl", trainingv1alpha1.SplitTrain).
				ConfigMapDataset("small", "cm-b", trainingv1alpha1.SplitTest).Checkpoint("ckpt", "runs/1", 10).Obj(),
			rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				c := &p.Spec.Containers[0]
				out := c.VolumeMounts[3]
				c.VolumeMounts = append(c.VolumeMounts[:3],
					corev1.VolumeMount{Name: "data-logs", MountPath: "/data/logs", ReadOnly: true},
					corev1.VolumeMount{Name: "data-small", MountPath: "/data/small", ReadOnly: true},
					corev1.VolumeMount{Name: "checkpoints", MountPath: "/checkpoints"}, out)
				outVol := p.Spec.Volumes[3]
				p.Spec.Volumes = append(p.Spec.Volumes[:3],
					corev1.Volume{Name: "data-logs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-a", ReadOnly: true}}},
					corev1.Volume{Name: "data-small", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-b"}}}},
					corev1.Volume{Name: "checkpoints", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}},
					outVol)
				return p
			},
		},
		"cuda: rank 0 has a GPU worker beside the trainer, and /dev/shm": {
			job: makeJob().Replicas(2).CUDA("Qwen/Qwen2.5-VL-3B-Instruct").Resources(gpu).Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts[:3], shmMount, p.Spec.Containers[0].VolumeMounts[3])
				w := wantPod(1).Spec.Containers[0]
				w.Command, w.Image, w.Resources = nil, "espo-cuda:v1", gpu
				w.Env[0].Value = "0"
				w.VolumeMounts = append(w.VolumeMounts, shmMount)
				p.Spec.Containers = append(p.Spec.Containers, w)
				p.Spec.Volumes = append(p.Spec.Volumes[:3], shm, p.Spec.Volumes[3])
				return p
			},
		},
		"cuda: rank 0's worker sees the checkpoints and datasets; a port per GPU worker": {
			job: makeJob().Replicas(2).CUDA("m").WorkersPerReplica(2).Checkpoint("ckpt", "runs/1", 10).Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				ckpt := corev1.VolumeMount{Name: "checkpoints", MountPath: "/checkpoints"}
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts[:3], ckpt, c.VolumeMounts[3])
				c.Env[6].Value = "2"
				w := wantPod(1).Spec.Containers[0]
				w.Command, w.Image = nil, "espo-cuda:v1"
				w.Env[0].Value, w.Env[6].Value = "0", "2"
				w.VolumeMounts = append(w.VolumeMounts, ckpt)
				w.Env = append(w.Env, corev1.EnvVar{Name: "ESPO_WORKER_PATHS", Value: "/checkpoints"})
				w.Ports = append(w.Ports, corev1.ContainerPort{Name: "worker-1", ContainerPort: 50052, Protocol: corev1.ProtocolTCP})
				p.Spec.Containers = append(p.Spec.Containers, w)
				p.Spec.Volumes = append(p.Spec.Volumes[:3],
					corev1.Volume{Name: "checkpoints", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}},
					p.Spec.Volumes[3])
				return p
			},
		},
		"cuda with an export: rank 0's trainer and worker mount its claim; the worker may write it": {
			job: makeJob().Replicas(2).CUDA("m").LoRA(8).Checkpoint("ckpt", "runs/1", 10).Export("models", "run-1", true, "").Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				ckpt := corev1.VolumeMount{Name: "checkpoints", MountPath: "/checkpoints"}
				export := corev1.VolumeMount{Name: "export", MountPath: "/export"}
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts[:3], ckpt, export, c.VolumeMounts[3])
				w := wantPod(1).Spec.Containers[0]
				w.Command, w.Image = nil, "espo-cuda:v1"
				w.Env[0].Value = "0"
				w.VolumeMounts = append(w.VolumeMounts, ckpt, export)
				w.Env = append(w.Env, corev1.EnvVar{Name: "ESPO_WORKER_PATHS", Value: "/checkpoints:/export"})
				p.Spec.Containers = append(p.Spec.Containers, w)
				p.Spec.Volumes = append(p.Spec.Volumes[:3],
					corev1.Volume{Name: "checkpoints", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}},
					corev1.Volume{Name: "export", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models"}}},
					p.Spec.Volumes[3])
				return p
			},
		},
		"cuda with an export: the other ranks do not mount it": {
			job: makeJob().Replicas(2).CUDA("m").Export("models", "run-1", false, "").Obj(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				c := &p.Spec.Containers[0]
				c.Command, c.Image = nil, "espo-cuda:v1"
				return p
			},
		},
		"cuda, hybrid: every rank's worker mounts the checkpoint claim and may save its shards there": {
			job: makeJob().Replicas(2).CUDA("m").Sharding(trainingv1alpha1.ShardingHybrid).Checkpoint("ckpt", "runs/1", 10).Obj(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				c := &p.Spec.Containers[0]
				c.Command, c.Image = nil, "espo-cuda:v1"
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "checkpoints", MountPath: "/checkpoints"})
				c.Env = append(c.Env, corev1.EnvVar{Name: "ESPO_WORKER_PATHS", Value: "/checkpoints"})
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "checkpoints", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}})
				return p
			},
		},
		"cuda on one replica: the worker beside the trainer listens on loopback only": {
			job: makeJob().CUDA("m").Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				p.Spec.Containers[0].Env[1].Value = "1"
				w := wantPod(1).Spec.Containers[0]
				w.Command, w.Image, w.Ports = nil, "espo-cuda:v1", nil
				w.Env[0].Value, w.Env[1].Value = "0", "1"
				w.Env[len(w.Env)-1].Value = "127.0.0.1:50051"
				p.Spec.Containers = append(p.Spec.Containers, w)
				return p
			},
		},
		"cuda with weights on a claim: mounted read-only at /models in the worker": {
			job: func() *trainingv1alpha1.ESPOJob {
				j := makeJob().Replicas(2).CUDA("qwen").Obj()
				j.Spec.Model.Weights = &trainingv1alpha1.VolumePath{ClaimName: "models", Path: "hf"}
				return j
			}(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				c := &p.Spec.Containers[0]
				c.Command, c.Image = nil, "espo-cuda:v1"
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "models", MountPath: "/models", SubPath: "hf", ReadOnly: true})
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "models", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}}})
				return p
			},
		},
		"cuda with the job's worker image and command": {
			job: makeJob().Replicas(2).CUDA("m").WorkerImage("torch:1", "python", "-m", "espo_worker").Resources(gpu).Obj(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				c := &p.Spec.Containers[0]
				c.Image, c.Command, c.Resources = "torch:1", []string{"python", "-m", "espo_worker"}, gpu
				c.VolumeMounts = append(c.VolumeMounts, shmMount)
				p.Spec.Volumes = append(p.Spec.Volumes, shm)
				return p
			},
		},
		"an initial checkpoint is mounted read-only where the worker runs": {
			job: makeJob().Replicas(2).InitialCheckpoint("ckpts", "run-1/step-000000000600").Obj(), rank: 1,
			want: func() *corev1.Pod {
				p := wantPod(1)
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "initial-checkpoint", MountPath: "/initial-checkpoint", ReadOnly: true})
				c.Env = append(c.Env, corev1.EnvVar{Name: "ESPO_WORKER_PATHS", Value: "/initial-checkpoint"})
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "initial-checkpoint", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpts", ReadOnly: true}}})
				return p
			},
		},
		"an embedding service's API key: from its Secret, in the trainer container only": {
			job: makeJob().Replicas(2).CUDA("m").Embedder("http://embeddings.ml.svc/v1/embeddings").
				EmbedderAPIKey("embeddings", "api-key").Obj(),
			rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				c := &p.Spec.Containers[0]
				c.Env = append(c.Env, corev1.EnvVar{Name: "ESPO_EMBEDDER_API_KEY", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "embeddings"}, Key: "api-key"}}})
				w := wantPod(1).Spec.Containers[0] // the cuda worker beside it: no key
				w.Command, w.Image = nil, "espo-cuda:v1"
				w.Env[0].Value = "0"
				p.Spec.Containers = append(p.Spec.Containers, w)
				return p
			},
		},
		"an embedding service's API key: not in a worker pod": {
			job:  makeJob().Replicas(2).Embedder("http://embeddings.ml.svc/v1/embeddings").EmbedderAPIKey("embeddings", "api-key").Obj(),
			rank: 1,
			want: func() *corev1.Pod { return wantPod(1) },
		},
		"an embedding service without an API key: no variable": {
			job: makeJob().Replicas(2).Embedder("http://embeddings.ml.svc/v1/embeddings").Obj(), rank: 0,
			want: func() *corev1.Pod { return wantPod(0) },
		},
		"the job's own service account": {
			job: makeJob().Replicas(2).ServiceAccountName("reporter").Obj(), rank: 0,
			want: func() *corev1.Pod {
				p := wantPod(0)
				p.Spec.ServiceAccountName = "reporter"
				return p
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := tc.want()
			want.Labels[LabelPodTemplateHash] = podTemplateHash(tc.job) // its own tests: pod_template_hash_test.go
			if diff := cmp.Diff(want, buildPod(tc.job, tc.rank, testOpts)); diff != "" {
				t.Errorf("buildPod (-want +got):\n%s", diff)
			}
		})
	}
}
