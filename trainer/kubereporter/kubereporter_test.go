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

package kubereporter_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/test/testenv"
	"github.com/espo-dev/espo-operator/trainer/kubereporter"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// TestReportAppliesTrainingStatusAndLeavesTheRestAlone checks that the report lands
// in status.training under the field manager espo-trainer, that a later report
// replaces it, and that a controller-owned status field written by another manager
// survives both.
func TestReportAppliesTrainingStatusAndLeavesTheRestAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	job := builders.MakeESPOJob("reported", "default").Obj()
	g.Expect(env.Client.Create(ctx, job)).To(Succeed())
	job.Status.Phase = trainingv1alpha1.PhaseRunning
	g.Expect(env.Client.Status().Update(ctx, job, client.FieldOwner("espo-controller"))).To(Succeed())

	r := &kubereporter.Reporter{Client: env.Client, Job: trainingv1alpha1.JobRef{Namespace: "default", Name: "reported"}}
	now := metav1.Now()
	first := &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageSFT, Epoch: 1, Step: 3, TotalSteps: 10, LastUpdateTime: &now,
		Evaluation: &trainingv1alpha1.EvaluationStatus{RecommendationAccuracy: trainingv1alpha1.NewMetric(0.25)}}
	g.Expect(r.Report(ctx, first)).To(Succeed())
	second := &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 1, Step: 4, TotalSteps: 10, MeanStepReward: trainingv1alpha1.NewMetric(0.125)}
	g.Expect(r.Report(ctx, second)).To(Succeed())

	got := &trainingv1alpha1.ESPOJob{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(trainingv1alpha1.PhaseRunning))
	g.Expect(got.Status.Training).NotTo(BeNil())
	g.Expect(got.Status.Training.Stage).To(Equal(trainingv1alpha1.StageESPO))
	g.Expect(got.Status.Training.Step).To(Equal(int64(4)))
	g.Expect(string(got.Status.Training.MeanStepReward)).To(Equal("0.125"))
	g.Expect(got.Status.Training.Evaluation).To(BeNil(), "a field dropped from the report is removed")
	var managers []string
	for _, mf := range got.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	g.Expect(managers).To(ContainElement(trainingv1alpha1.TrainerFieldManager))
}
