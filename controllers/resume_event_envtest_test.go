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

package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// TestAResumeOnAnotherSizeIsAnEvent: the trainer reports a resume on 2 workers from a
// checkpoint written by 1, then progress under the same record, then a resume on the
// same size: the job has one ResumedOnAnotherSize event, sent once.
func TestAResumeOnAnotherSizeIsAnEvent(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("resized", ns).Replicas(2).Obj())
	created(g, job) // the trainer's RoleBinding is applied alongside the pods
	at := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	resized := &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 1, Step: 12,
		ResumedFrom: &trainingv1alpha1.ResumeStatus{Step: 12, Path: "resized/step-000000000012", WrittenBy: 1, Workers: 2, Time: &at}}
	resized.Message = resized.ResumedFrom.Describe()
	reportOutcome(g, job, resized)
	g.Eventually(sentEvents(g, job, controllers.ReasonResumedOnAnotherSize), reconcileTimeout, poll).Should(ConsistOf(resized.Message))

	progress := resized.DeepCopy()
	progress.Step, progress.Message = 13, ""
	reportOutcome(g, job, progress)
	later := metav1.NewTime(at.Add(time.Hour))
	sameSize := &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 1, Step: 14,
		ResumedFrom: &trainingv1alpha1.ResumeStatus{Step: 14, Path: "resized/step-000000000014", WrittenBy: 2, Workers: 2, Time: &later}}
	reportOutcome(g, job, sameSize)
	g.Consistently(sentEvents(g, job, controllers.ReasonResumedOnAnotherSize), quietPeriod, poll).Should(ConsistOf(resized.Message))
}

// sentEvents is a function for Eventually: the notes of the events about the job with
// the reason, each followed by " (sent n times)" when it was sent more than once (the
// recorder counts an event sent again in its series).
func sentEvents(g Gomega, job *trainingv1alpha1.ESPOJob, reason string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.UID != job.UID || e.Reason != reason {
				continue
			}
			note := e.Note
			if e.Series != nil {
				note += fmt.Sprintf(" (sent %d times)", e.Series.Count)
			}
			notes = append(notes, note)
		}
		return notes
	}
}
