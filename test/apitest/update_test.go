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

package apitest

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// TestUpdateTransitions creates a job (suspended or not), applies one change with an
// Update, and expects it allowed or refused with the rule's message.
func TestUpdateTransitions(t *testing.T) {
	const (
		immutable = "is immutable; delete and recreate the job to change it"
		trainer   = "trainer may change only while the job is suspended"
	)
	cases := []struct {
		name      string
		suspended bool                            // the job's suspend before the update
		change    func(*trainingv1alpha1.ESPOJob) // the update
		refusal   string                          // "" when allowed
	}{
		{"suspend a running job", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.Suspend = true }, ""},
		{"resume a suspended job", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.Suspend = false }, ""},
		{"change backoffLimit while running", false, func(j *trainingv1alpha1.ESPOJob) { *j.Spec.RunPolicy.BackoffLimit = 7 }, ""},
		{"set maxDisruptions while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.MaxDisruptions = ptr(int32(5)) }, ""},
		{"set a deadline while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.ActiveDeadlineSeconds = ptr(int64(60)) }, ""},
		{"change job labels while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Labels = map[string]string{"team": "gui"} }, ""},

		// The pod-template fields Kueue sets: only while suspended, or in the update
		// that suspends or resumes the job (Kueue admits and stops in one update).
		{"nodeSelector while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.NodeSelector = map[string]string{"pool": "a"} }, trainer},
		{"nodeSelector while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.NodeSelector = map[string]string{"pool": "a"} }, ""},
		{"tolerations while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Tolerations = gpuToleration }, trainer},
		{"tolerations while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Tolerations = gpuToleration }, ""},
		{"pod labels while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Labels = map[string]string{"a": "b"} }, trainer},
		{"pod labels while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Labels = map[string]string{"a": "b"} }, ""},
		{"pod annotations while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Annotations = map[string]string{"a": "b"} }, trainer},
		{"pod annotations while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Annotations = map[string]string{"a": "b"} }, ""},
		{"scheduling gates while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.SchedulingGates = gate }, trainer},
		{"scheduling gates while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.SchedulingGates = gate }, ""},
		{"gang policy while running", false, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.Trainer.Scheduling = &trainingv1alpha1.SchedulingSpec{Gang: trainingv1alpha1.GangVolcano}
		}, trainer},
		{"gang policy while suspended", true, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.Trainer.Scheduling = &trainingv1alpha1.SchedulingSpec{Gang: trainingv1alpha1.GangVolcano, Queue: "gpu"}
		}, ""},
		{"replicas while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Replicas = 3 }, trainer},
		{"replicas while suspended (partial admission)", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Replicas = 3 }, ""},
		{"resume and set nodeSelector at once (Kueue admits)", true, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.RunPolicy.Suspend = false
			j.Spec.Trainer.NodeSelector = map[string]string{"pool": "a"}
		}, ""},
		{"suspend and restore tolerations at once (Kueue stops)", false, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.RunPolicy.Suspend = true
			j.Spec.Trainer.Tolerations = gpuToleration
		}, ""},
		{"checkpoint while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Checkpoint.Keep = 9 }, "checkpoint may change only while the job is suspended"},
		{"checkpoint while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Checkpoint.Keep = 9 }, ""},
		{"add earlyStopping while running", false, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{MinReward: "-0.9"}
		}, "earlyStopping may change only while the job is suspended"},
		{"add earlyStopping while suspended", true, func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{MinReward: "-0.9"}
		}, ""},

		// The run's definition is immutable, suspended or not.
		{"datasets while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Datasets.Sources[0].Synthetic.Episodes = 50 }, "datasets " + immutable},
		{"dataset split while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Datasets.Split.Seed = 3 }, "datasets " + immutable},
		{"model while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 64} }, "model " + immutable},
		{"algorithm while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Algorithm.GroupSize = 8 }, "algorithm " + immutable},
		{"learning rate while running", false, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Algorithm.LearningRate = "2e-6" }, "algorithm " + immutable},
		{"rewards while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Rewards.COUT.Weight = "0" }, "rewards " + immutable},
		{"reward spelling while suspended", true, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Rewards.Format = "0.50" }, "rewards " + immutable},
	}
	ns := namespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			job := builders.MakeESPOJob(jobName(i), ns).Suspend(tc.suspended).Checkpoint("ckpt", "run", 10).Obj()
			if err := env.Client.Create(ctx, job, strict); err != nil {
				t.Fatalf("creating: %v", err)
			}
			tc.change(job)
			err := env.Client.Update(ctx, job, strict)
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusal != "" && err == nil:
				t.Fatalf("allowed; want refused with %q", tc.refusal)
			case tc.refusal != "" && !strings.Contains(err.Error(), tc.refusal):
				t.Fatalf("refused with %v; want %q", err, tc.refusal)
			}
		})
	}
}

// TestExportChangesOnlyWhileSuspended: spec.export, which the trainer pods mount, may
// change only while the job is suspended, as spec.checkpoint.
func TestExportChangesOnlyWhileSuspended(t *testing.T) {
	ns := namespace(t)
	for name, suspended := range map[string]bool{"export-running": false, "export-suspended": true} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			job := builders.MakeESPOJob(name, ns).CUDA("m").Suspend(suspended).Export("models", "run-1", false, "").Obj()
			if err := env.Client.Create(ctx, job, strict); err != nil {
				t.Fatalf("creating: %v", err)
			}
			job.Spec.Export.PersistentVolumeClaim.Path = "run-2"
			err := env.Client.Update(ctx, job, strict)
			switch {
			case suspended && err != nil:
				t.Fatalf("refused while suspended: %v", err)
			case !suspended && (err == nil || !strings.Contains(err.Error(), "export may change only while the job is suspended")):
				t.Fatalf("changed while running: %v; want refused", err)
			}
		})
	}
}

var (
	gpuToleration = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	gate          = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
)

func jobName(i int) string { return "job-" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }

func ptr[T any](v T) *T { return &v }

// TestBuilderJobsAreValid creates jobs that use every builder method, so the controller's
// tests build only objects the API server accepts.
func TestBuilderJobsAreValid(t *testing.T) {
	ns := namespace(t)
	jobs := []*trainingv1alpha1.ESPOJob{
		builders.MakeESPOJob("gpu", ns).CUDA("Qwen/Qwen2.5-VL-3B-Instruct").WorkerImage("example/worker:1", "python", "-m", "espo_worker").
			Replicas(2).WorkersPerReplica(8).GPUs(8).Toleration(gpuToleration[0]).NodeSelector("pool", "gpu").
			PodLabel("team", "gui").PodAnnotation("a", "b").SchedulingGate("example.com/gate").PriorityClassName("high").
			ServiceAccountName("trainer").Image("example/espo:1").Env("NCCL_DEBUG", "WARN").Label("kueue.x-k8s.io/queue-name", "q").
			Annotation("x", "y").Suspend(true).BackoffLimit(5).ActiveDeadlineSeconds(3600).TTLSecondsAfterFinished(60).
			Checkpoint("ckpt", "gpu", 100).StopAt(trainingv1alpha1.MetricRecommendationAccuracy, "0.3").MinReward("-0.8").Obj(),
		builders.MakeESPOJob("pvc", ns).Sources().PVCDataset("train", "data", "train", trainingv1alpha1.SplitAll).
			ConfigMapDataset("test", "held-out", trainingv1alpha1.SplitTest).Split("0.9", "0.1", "0").InitialCheckpoint("ckpt", "sft/latest").
			Algorithm(trainingv1alpha1.AlgorithmGRPO).Epochs(0, 2).GroupSize(4).LearningRate("1e-3").Seed(7).COUTWeight("0").Obj(),
		builders.MakeESPOJob("external", ns).External("worker.example:9000").Obj(),
	}
	for _, j := range jobs {
		if err := env.Client.Create(context.Background(), j, strict); err != nil {
			t.Errorf("%s: %v", j.Name, err)
		}
	}
}
