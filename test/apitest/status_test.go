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
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// trainerReport is status.training as the trainer applies it.
func trainerReport() map[string]any {
	return map[string]any{
		"stage": string(trainingv1alpha1.StageESPO), "epoch": int64(3), "step": int64(120), "totalSteps": int64(480),
		"meanStepReward": string(trainingv1alpha1.NewMetric(0.1234)), "kl": string(trainingv1alpha1.NewDecimal(1.5e-5)),
		"samplerMismatch": string(trainingv1alpha1.NewMetric(0.0123)),
		"evaluation": map[string]any{
			"split": "validation", "epoch": int64(2),
			"guiTypeAccuracy":        string(trainingv1alpha1.NewMetric(0.9124)),
			"elementAccuracy":        string(trainingv1alpha1.NewMetric(0.85)),
			"intentAccuracy":         string(trainingv1alpha1.NewMetric(0.5)),
			"recommendationAccuracy": string(trainingv1alpha1.NewMetric(2.0 / 7)),
		},
		"export": map[string]any{
			"path": "models/run-1", "kind": "lora", "merged": true, "step": int64(96), "files": int64(9),
			"metric": "recommendationAccuracy", "value": string(trainingv1alpha1.NewMetric(0.3)),
		},
		"lastStep": map[string]any{
			"step": int64(120), "seconds": "5.848", "dominant": "sampling 71%", "tokens": int64(6144), "tokensPerSecond": "1050.6",
			"phases": []any{map[string]any{"phase": "sampling", "seconds": "4.152"}, map[string]any{"phase": "weightSync", "seconds": "0.300"}},
		},
		"tracking": map[string]any{"mlflowRunID": "3f0c2b6e9d2a4b1f8e7c5a0d9b8c7e6f", "degraded": "", "pending": int64(30)},
	}
}

// applyTraining applies status.training with the trainer's field manager, as the
// trainer's Kubernetes reporter does.
func applyTraining(ctx context.Context, ns, name string, training map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": trainingv1alpha1.GroupVersion.String(), "kind": "ESPOJob",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"status":   map[string]any{"training": training},
	}}
	return env.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(trainingv1alpha1.TrainerFieldManager), client.ForceOwnership)
}

// TestStatusAndColumns writes status as the controller and the trainer would, checks
// that a controller status write keeps the trainer's report (its export included),
// that metrics, the model, the rollout engine and the export's path print in the
// columns of `kubectl get espojobs` (and -o wide), and that a non-finite metric is
// refused.
func TestStatusAndColumns(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	job := builders.MakeESPOJob("columns", ns).CUDA("Qwen2.5-VL-3B-Instruct").LoRA(16).Checkpoint("ckpt", "", 10).
		Export("models", "models/run-1", true, trainingv1alpha1.MetricRecommendationAccuracy).Obj()
	job.Spec.Model.Rollout = &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM}
	if err := env.Client.Create(ctx, job, strict); err != nil {
		t.Fatal(err)
	}
	if err := applyTraining(ctx, ns, job.Name, trainerReport()); err != nil {
		t.Fatalf("trainer apply: %v", err)
	}

	// The controller: read, recompute, write the whole status.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	job.Status.Phase = trainingv1alpha1.PhaseRunning
	job.Status.Restarts, job.Status.Disruptions = 1, 1
	job.Status.Active, job.Status.Ready = 1, 1
	job.Status.ObservedGeneration = job.Generation
	job.Status.Model = "Qwen2.5-VL-3B-Instruct (LoRA r=16)"
	meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
		Type: trainingv1alpha1.ConditionRunning, Status: metav1.ConditionTrue, Reason: trainingv1alpha1.ReasonPodsRunning, Message: "1/1 trainer pods running",
	})
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("controller status update: %v", err)
	}
	if job.Status.Disruptions != 1 {
		t.Errorf("status.disruptions = %d after the write, want 1", job.Status.Disruptions)
	}
	if tr := job.Status.Training; tr == nil || tr.Evaluation.RecommendationAccuracy != "0.286" || tr.SamplerMismatch != "0.012" ||
		tr.Export == nil || *tr.Export != (trainingv1alpha1.ExportStatus{Path: "models/run-1", Kind: trainingv1alpha1.ExportLoRA, Merged: true,
		Step: 96, Files: 9, Metric: trainingv1alpha1.MetricRecommendationAccuracy, Value: "0.300"}) {
		t.Fatalf("the controller's status write lost or changed the trainer's report: %+v", job.Status.Training)
	}

	table := getTable(t, ns)
	var names []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			names = append(names, c.Name+"(wide)")
		}
	}
	if got, want := strings.Join(names, " "), "Name Phase Stage Epoch Step GUI-Acc Intent-Acc Rec-Acc Age Ele-Acc(wide) Reward(wide) Restarts(wide) Model(wide) Engine(wide) Tokens/s(wide) Export(wide)"; got != want {
		t.Errorf("columns\n  %s\nwant\n  %s", got, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	cells[8] = "AGE"
	if got, want := fmt.Sprint(cells...), fmt.Sprint("columns", "Running", "espo", 3, 120, "0.912", "0.500", "0.286", "AGE", "0.850", "0.123", 1, "Qwen2.5-VL-3B-Instruct (LoRA r=16)", "vllm", "1050.6", "models/run-1"); got != want {
		t.Errorf("row\n  %s\nwant\n  %s", got, want)
	}

	bad := trainerReport()
	bad["meanStepReward"] = fmt.Sprint(math.NaN())
	if err := applyTraining(ctx, ns, job.Name, bad); err == nil || !strings.Contains(err.Error(), "status.training.meanStepReward") {
		t.Errorf("a NaN metric: got %v, want it refused on status.training.meanStepReward", err)
	}
}

// getTable lists the namespace's ESPOJobs as kubectl does, as a server-side table.
func getTable(t *testing.T, ns string) *metav1.Table {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	data, err := cs.RESTClient().Get().AbsPath("/apis", trainingv1alpha1.GroupVersion.Group, trainingv1alpha1.GroupVersion.Version, "namespaces", ns, "espojobs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(data, table); err != nil {
		t.Fatal(err)
	}
	return table
}
