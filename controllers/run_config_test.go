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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestBuildRunConfig(t *testing.T) {
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		want func(*trainingv1alpha1.RunConfig)
	}{
		"one replica: no remote workers, no checkpoints": {
			job:  makeJob().Obj(),
			want: func(*trainingv1alpha1.RunConfig) {},
		},
		"three replicas: ranks 1 and 2 are remote workers": {
			job: makeJob().Replicas(3).Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) {
				rc.Workers = []string{"demo-trainer-1.demo.ns.svc:50051", "demo-trainer-2.demo.ns.svc:50051"}
			},
		},
		"cuda: rank 0's own worker container too": {
			job: makeJob().Replicas(2).CUDA("m").Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) {
				rc.Workers = []string{"localhost:50051", "demo-trainer-1.demo.ns.svc:50051"}
			},
		},
		"cuda with two GPUs per pod: one worker process per GPU, on consecutive ports": {
			job: makeJob().Replicas(2).CUDA("m").WorkersPerReplica(2).Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) {
				rc.Workers = []string{"localhost:50051", "localhost:50052",
					"demo-trainer-1.demo.ns.svc:50051", "demo-trainer-1.demo.ns.svc:50052"}
			},
		},
		"checkpoints in a folder of the claim": {
			job:  makeJob().Checkpoint("ckpt", "runs/demo", 20).Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) { rc.CheckpointDir = "/checkpoints/runs/demo" },
		},
		"an export to a folder of its claim": {
			job: makeJob().CUDA("m").Export("models", "gui/run-7", false, "").Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) {
				rc.ExportDir = "/export/gui/run-7"
				rc.Workers = []string{"localhost:50051"}
			},
		},
		"an initial checkpoint under its mount": {
			job: makeJob().InitialCheckpoint("ckpts", "run-1/step-000000000600").Obj(),
			want: func(rc *trainingv1alpha1.RunConfig) {
				rc.InitialCheckpoint = "/initial-checkpoint/run-1/step-000000000600"
			},
		},
		"suspend is not part of the run config": {
			job:  makeJob().Suspend(true).Obj(),
			want: func(*trainingv1alpha1.RunConfig) {},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := tc.job.Spec.DeepCopy()
			spec.Default()
			spec.RunPolicy.Suspend = false
			prov := trainingv1alpha1.RunProvenance{OperatorVersion: "v1.2.3 (commit abc)", TrainerImage: "espo:v1.2.3"}
			want := &trainingv1alpha1.RunConfig{Job: trainingv1alpha1.JobRef{Namespace: "ns", Name: "demo", UID: "uid-1"}, Spec: *spec,
				DataRoot: "/data", OutputDir: "/var/run/espo/output", Provenance: prov}
			tc.want(want)
			if diff := cmp.Diff(want, buildRunConfig(tc.job, prov)); diff != "" {
				t.Errorf("buildRunConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredConfigMapHoldsTheRunConfigAsYAML(t *testing.T) {
	// Built without Obj(): the spec's defaults are applied by the builder.
	w := makeJob().Replicas(2)
	runConfig, err := runConfigYAML(&w.ESPOJob, trainingv1alpha1.RunProvenance{})
	if err != nil {
		t.Fatal(err)
	}
	desired := desiredConfigMap(&w.ESPOJob, runConfig)
	cm := typed[corev1.ConfigMap](t, desired)
	if cm.Name != "demo-config" || cm.Namespace != "ns" || cm.Labels[LabelJobName] != "demo" || len(cm.OwnerReferences) != 1 {
		t.Errorf("metadata: %+v", cm.ObjectMeta)
	}
	got := &trainingv1alpha1.RunConfig{}
	if err := yaml.UnmarshalStrict([]byte(cm.Data[trainingv1alpha1.RunConfigKey]), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(buildRunConfig(w.Obj(), trainingv1alpha1.RunProvenance{}), got); diff != "" {
		t.Errorf("run.yaml (-want +got):\n%s", diff)
	}
	if got.Spec.Algorithm.GroupSize != 5 {
		t.Errorf("defaults not applied: groupSize %d", got.Spec.Algorithm.GroupSize)
	}
}

// TestRunConfigMemo: the memo marshals a job's run config again only for another
// UID or generation, and forgets a job.
func TestRunConfigMemo(t *testing.T) {
	var m runConfigMemo
	job := makeJob().Replicas(2).Obj()
	first, err := m.yaml(job, trainingv1alpha1.RunProvenance{})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := runConfigYAML(job, trainingv1alpha1.RunProvenance{}); first != want {
		t.Fatalf("yaml = %q, want runConfigYAML's %q", first, want)
	}
	changed := job.DeepCopy()
	changed.Spec.Trainer.Replicas = 3
	if got, _ := m.yaml(changed, trainingv1alpha1.RunProvenance{}); got != first {
		t.Errorf("same UID and generation: marshalled again")
	}
	changed.Generation++
	if got, _ := m.yaml(changed, trainingv1alpha1.RunProvenance{}); got == first {
		t.Errorf("a new generation: the old run config")
	}
	other := changed.DeepCopy()
	other.UID = "uid-2"
	other.Spec.Trainer.Replicas = 2
	if got, _ := m.yaml(other, trainingv1alpha1.RunProvenance{}); got == first {
		t.Errorf("another UID: the old job's run config")
	}
	m.forget(client.ObjectKeyFromObject(job))
	if len(m.byJob) != 0 {
		t.Errorf("after forget: %d entries", len(m.byJob))
	}
}

// TestRunProvenanceNamesTheOperatorAndTheImages: the operator's part of a run's
// provenance is its version, the trainer image (the job's or the operator's) and the
// worker image (the job's model.image, the cuda worker image, or the trainer's for the
// cpu worker), none for an external worker.
func TestRunProvenanceNamesTheOperatorAndTheImages(t *testing.T) {
	o := Options{OperatorVersion: "v1.2.3 (commit abc)", PodOptions: PodOptions{TrainerImage: "espo:v1", CUDAWorkerImage: "espo-torch:v1"}}
	for name, tc := range map[string]struct {
		job                   *trainingv1alpha1.ESPOJob
		trainerImage, workers string
	}{
		"cpu":                   {makeJob().Obj(), "espo:v1", "espo:v1"},
		"cuda":                  {makeJob().CUDA("m").Obj(), "espo:v1", "espo-torch:v1"},
		"cuda, the job's image": {makeJob().CUDA("m").WorkerImage("mine:2").Obj(), "espo:v1", "mine:2"},
		"a trainer image":       {makeJob().Image("trainer:3").Obj(), "trainer:3", "trainer:3"},
		"external":              {makeJob().External("w.example:9000").Obj(), "espo:v1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			want := trainingv1alpha1.RunProvenance{OperatorVersion: "v1.2.3 (commit abc)", TrainerImage: tc.trainerImage, WorkerImage: tc.workers}
			if diff := cmp.Diff(want, runProvenance(tc.job, o)); diff != "" {
				t.Errorf("runProvenance (-want +got):\n%s", diff)
			}
		})
	}
}
