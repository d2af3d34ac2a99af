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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// TestIgnoreTrainingProgress: an update that changes only the trainer's progress is
// dropped; one that changes the outcome, the message, the wait for a worker, the
// first report, or anything besides status.training passes.
func TestIgnoreTrainingProgress(t *testing.T) {
	base := &trainingv1alpha1.ESPOJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "n", ResourceVersion: "1", Generation: 1},
		Status: trainingv1alpha1.ESPOJobStatus{Phase: trainingv1alpha1.PhaseRunning,
			Training: &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageSFT, Step: 3, TotalSteps: 10}}}
	cases := []struct {
		name   string
		change func(j *trainingv1alpha1.ESPOJob)
		pass   bool
	}{
		{"step and time", func(j *trainingv1alpha1.ESPOJob) {
			now := metav1.Now()
			j.Status.Training.Step, j.Status.Training.LastUpdateTime = 4, &now
			j.Status.Training.MeanStepReward = trainingv1alpha1.NewMetric(0.5)
		}, false},
		{"stage and epoch", func(j *trainingv1alpha1.ESPOJob) {
			j.Status.Training.Stage, j.Status.Training.Epoch = trainingv1alpha1.StageESPO, 1
		}, false},
		{"outcome", func(j *trainingv1alpha1.ESPOJob) { j.Status.Training.Outcome = trainingv1alpha1.OutcomeCompleted }, true},
		{"message", func(j *trainingv1alpha1.ESPOJob) { j.Status.Training.Message = "stopped on SIGTERM" }, true},
		{"a wait for a worker", func(j *trainingv1alpha1.ESPOJob) {
			j.Status.Training.WaitingForWorker = "waiting 10s for worker 0 (10.0.0.5:50051): connection refused"
		}, true},
		{"tracking degraded", func(j *trainingv1alpha1.ESPOJob) {
			j.Status.Training.Tracking = &trainingv1alpha1.TrackingStatus{Degraded: "spec.tracking.mlflow: http://mlflow:5000 does not answer", Pending: 40}
		}, true},
		{"tracking pending", func(j *trainingv1alpha1.ESPOJob) {
			j.Status.Training.Tracking = &trainingv1alpha1.TrackingStatus{Pending: 40}
		}, false},
		{"first report", func(j *trainingv1alpha1.ESPOJob) { j.Status.Training = nil }, true},
		{"phase", func(j *trainingv1alpha1.ESPOJob) { j.Status.Phase = trainingv1alpha1.PhaseSucceeded }, true},
		{"spec", func(j *trainingv1alpha1.ESPOJob) { j.Generation, j.Spec.Trainer.Replicas = 2, 2 }, true},
		{"label", func(j *trainingv1alpha1.ESPOJob) { j.Labels = map[string]string{"a": "b"} }, true},
		{"deletion", func(j *trainingv1alpha1.ESPOJob) { now := metav1.Now(); j.DeletionTimestamp = &now }, true},
	}
	p := ignoreTrainingProgress()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, cur := base.DeepCopy(), base.DeepCopy()
			cur.ResourceVersion = "2"
			if c.name == "first report" {
				c.change(old) // nothing reported before this update
			} else {
				c.change(cur)
			}
			if got := p.Update(ctrlevent.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != c.pass {
				t.Errorf("Update passes %v, want %v", got, c.pass)
			}
		})
	}
}
