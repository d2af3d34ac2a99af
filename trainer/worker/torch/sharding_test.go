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

package torch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// TestTrainerDrivesShardedWorkers: the Go trainer runs a LoRA Qwen3 on two PyTorch
// workers that hold it sharded (spec.model.sharding sharded, FSDP2 over gloo) through
// SFT and ESPO, evaluations, checkpoints and the export to Completed: the gang calls
// them in step (an odd number of episodes leaves one worker short), every checkpoint
// holds each worker's shards, bound by its manifest, and loads whole (a single
// replicated worker loads the last one, at its step), and the export is the adapter
// of the final step.
func TestTrainerDrivesShardedWorkers(t *testing.T) {
	t.Parallel() // one of the package's longest: see TestPythonUnitTests
	c := smallRun(t)
	c.Spec.Datasets.Sources[0].Synthetic.Episodes = 9
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: randomModel(t, "qwen3"),
		DType: trainingv1alpha1.DTypeFloat32, LoRA: &trainingv1alpha1.LoRASpec{Rank: 4}, Sharding: trainingv1alpha1.ShardingSharded}
	c.CheckpointDir = filepath.Join(c.OutputDir, "checkpoints")
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 2, Keep: 2}
	c.ExportDir = filepath.Join(c.OutputDir, "export", "run-1")
	c.Spec.Export = &trainingv1alpha1.ExportSpec{PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "models", Path: "run-1"}}
	c.Spec.Default()
	g := groupOf{pods: []pod{{ip: "127.77.2.1", procs: 2}}, masterPort: workertest.RendezvousPort(t)}
	members := startPods(t, g, c.OutputDir)
	rep := runTrainer(t, c, members)
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps < 2 || len(rep.Validation) != 2 {
		t.Fatalf("outcome %s after %d steps, %d validations: %s", rep.Outcome, rep.Steps, len(rep.Validation), rep.Message)
	}
	if ex := rep.Status.Export; ex == nil || ex.Step != rep.Steps || ex.Kind != trainingv1alpha1.ExportLoRA {
		t.Errorf("status.training.export %+v, want the adapter of step %d", ex, rep.Steps)
	}
	if _, err := os.Stat(filepath.Join(c.ExportDir, "adapter_model.safetensors")); err != nil {
		t.Errorf("the export: %v", err)
	}
	for i, m := range members {
		info, err := m.(*worker.Remote).Client().Info(context.Background(), &workerpb.InfoRequest{})
		if err != nil || !info.Sharded || info.Steps != rep.Steps {
			t.Errorf("worker %d: info %v, %v; want sharded, at step %d", i, info, err, rep.Steps)
		}
	}
	last := rep.Status.LastCheckpoint
	if last == nil || last.Step != rep.Steps {
		t.Fatalf("last checkpoint %+v, want step %d", last, rep.Steps)
	}
	ckpt, err := checkpoint.Verify(last.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range []string{"__0_0.distcp", "__1_0.distcp", "meta.json", ".metadata"} {
		if ckpt.Files[checkpoint.WorkerStateFile+"/"+shard] == "" {
			t.Errorf("the last checkpoint's manifest lacks %s/%s: %v", checkpoint.WorkerStateFile, shard, ckpt.Files)
		}
	}
	one := startWorker(t, c.OutputDir, "--max-new-tokens", "8")
	d, err := worker.NewGang(one.Remote).Configure(context.Background(), worker.Setup{Seed: 1,
		Options: map[string]string{"pretrained": c.Spec.Model.Pretrained}, LoadPath: filepath.Join(last.Path, checkpoint.WorkerStateFile)})
	if err != nil {
		t.Fatalf("a replicated worker loading the sharded run's checkpoint: %v\n%s", err, one.log())
	}
	if d.Steps != rep.Steps || d.Sharded {
		t.Errorf("the replicated worker loaded %d steps (sharded %v), want %d, replicated", d.Steps, d.Sharded, rep.Steps)
	}
}
