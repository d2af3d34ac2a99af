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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// ReasonResumedOnAnotherSize is the reason of the Normal event that says the trainer
// resumed from a checkpoint written by another number of policy workers than the job
// now has (status.training.resumedFrom). It is an event reason only, no condition's,
// like ReasonPodTemplateChanged.
const ReasonResumedOnAnotherSize = "ResumedOnAnotherSize"

// resumeOnAnotherSize returns the event that a change of status.training from old to
// cur calls for, and whether there is one: ResumedOnAnotherSize when cur's resumedFrom
// differs from old's and is a resume on another size (ResumeStatus.OnAnotherSize).
// There is none for an unchanged record, for a resume on the same size or by writers
// the checkpoint does not name, and for no record. Either status may be nil.
func resumeOnAnotherSize(old, cur *trainingv1alpha1.TrainingStatus) (event, bool) {
	r := resumedFrom(cur)
	if !r.OnAnotherSize() || equality.Semantic.DeepEqual(resumedFrom(old), r) {
		return event{}, false
	}
	return event{Type: corev1.EventTypeNormal, Reason: ReasonResumedOnAnotherSize,
		Message: trainingv1alpha1.BoundMessage(r.Describe())}, true
}

// resumedFrom is s's resumedFrom; nil when s is.
func resumedFrom(s *trainingv1alpha1.TrainingStatus) *trainingv1alpha1.ResumeStatus {
	if s == nil {
		return nil
	}
	return s.ResumedFrom
}

// resumeEventHandler handles the update events of ESPOJobs: it sends the event that
// resumeOnAnotherSize finds between the two versions' status.training, and enqueues
// nothing (the reconciler acts on no part of resumedFrom). The trainer writes
// status.training and a reconcile reads only the current job, so an update event is
// where the controller sees a report's record beside the one before it. A resync
// (the same version twice) sends nothing; a resume reported while no manager watched
// (none leading, or one starting, whose cache lists the job as new) has no event, and
// its record stays in the status.
func resumeEventHandler(recorder events.EventRecorder) handler.Funcs {
	return handler.Funcs{UpdateFunc: func(_ context.Context, e ctrlevent.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		old, okOld := e.ObjectOld.(*trainingv1alpha1.ESPOJob)
		cur, okNew := e.ObjectNew.(*trainingv1alpha1.ESPOJob)
		if !okOld || !okNew {
			return
		}
		if ev, ok := resumeOnAnotherSize(old.Status.Training, cur.Status.Training); ok {
			ev.send(recorder, cur)
		}
	}}
}
