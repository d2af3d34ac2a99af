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
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// resumed is a report of the trainer that resumed at the clock's reading plus
// after, from the checkpoint of step 12 written by writtenBy workers, on workers.
func resumed(writtenBy, workers int32, after time.Duration) *trainingv1alpha1.TrainingStatus {
	at := metav1.NewTime(now.Add(after))
	return &trainingv1alpha1.TrainingStatus{Step: 12, ResumedFrom: &trainingv1alpha1.ResumeStatus{
		Step: 12, Path: "demo/step-000000000012", WrittenBy: writtenBy, Workers: workers, Time: &at}}
}

// TestResumeOnAnotherSizeEvent: a resumedFrom record that appears or changes with two
// worker counts that differ calls for one Normal event; the same record again, a
// resume on the same size, one whose writers are unknown, and no record call for none.
func TestResumeOnAnotherSizeEvent(t *testing.T) {
	onTwo := event{Type: corev1.EventTypeNormal, Reason: ReasonResumedOnAnotherSize,
		Message: "resumed from the checkpoint of step 12, written by 1 worker, on 2 workers: " +
			"training goes on from its weights and optimizer moments, re-sharded or replicated over the workers there are now"}
	later := resumed(2, 2, time.Minute) // the gang that resumed on 2 restarts, from a checkpoint of its own
	cases := map[string]struct {
		old, cur *trainingv1alpha1.TrainingStatus
		want     *event
	}{
		"the first report, resumed on another size": {old: nil, cur: resumed(1, 2, 0), want: &onTwo},
		"a report without a record before":          {old: &trainingv1alpha1.TrainingStatus{Step: 3}, cur: resumed(1, 2, 0), want: &onTwo},
		"another resume from the same checkpoint":   {old: resumed(1, 2, 0), cur: resumed(1, 2, time.Minute), want: &onTwo},
		"the same record again":                     {old: resumed(1, 2, 0), cur: resumed(1, 2, 0)},
		"the same record, the progress moved on": {old: resumed(1, 2, 0), cur: func() *trainingv1alpha1.TrainingStatus {
			s := resumed(1, 2, 0)
			s.Step = 13
			return s
		}()},
		"a resume on the same size":               {old: resumed(1, 2, 0), cur: later},
		"a first resume on the same size":         {old: nil, cur: resumed(1, 1, 0)},
		"the writers unknown (an old checkpoint)": {old: nil, cur: resumed(0, 2, 0)},
		"no record": {old: resumed(1, 2, 0), cur: &trainingv1alpha1.TrainingStatus{Step: 1}},
		"no report": {old: nil, cur: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := resumeOnAnotherSize(tc.old, tc.cur)
			if ok != (tc.want != nil) {
				t.Fatalf("an event: %v, want %v (%+v)", ok, tc.want != nil, got)
			}
			if ok {
				if diff := cmp.Diff(*tc.want, got); diff != "" {
					t.Errorf("event (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestResumeEventHandlerSendsOnce: the update that brings a resume on another size
// sends its event; the resync of that version sends none, and neither enqueues.
func TestResumeEventHandlerSendsOnce(t *testing.T) {
	before := makeJob().Obj()
	after := before.DeepCopy()
	after.Status.Training = resumed(1, 2, 0)
	recorder := events.NewFakeRecorder(4)
	h := resumeEventHandler(recorder)
	q := &fakeQueue{}
	h.Update(context.Background(), ctrlevent.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
	h.Update(context.Background(), ctrlevent.UpdateEvent{ObjectOld: after, ObjectNew: after.DeepCopy()}, q)
	close(recorder.Events)
	var sent []string
	for e := range recorder.Events {
		sent = append(sent, e)
	}
	want := []string{"Normal " + ReasonResumedOnAnotherSize + " resumed from the checkpoint of step 12, written by 1 worker, on 2 workers: " +
		"training goes on from its weights and optimizer moments, re-sharded or replicated over the workers there are now"}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(q.calls) != 0 {
		t.Errorf("the handler enqueued %+v, want nothing", q.calls)
	}
}
