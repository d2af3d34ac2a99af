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
	"k8s.io/apimachinery/pkg/api/equality"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// ignoreTrainingProgress drops the update events of an ESPOJob whose only change is
// the trainer's progress in status.training (step, rewards, evaluations, times): the
// controller acts on none of it. A change of status.training.outcome or .message,
// which the success and failure policies read, of .waitingForWorker, which the
// Running condition shows, of .tracking.degraded, which the TrackingDegraded
// condition shows, or of anything else still reconciles. A new
// .resumedFrom is not for the reconciler either: the watch of resumeEventHandler,
// which this predicate does not filter, announces it.
func ignoreTrainingProgress() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*trainingv1alpha1.ESPOJob)
		cur, okNew := e.ObjectNew.(*trainingv1alpha1.ESPOJob)
		return !okOld || !okNew || !onlyTrainingProgress(old, cur)
	}}
}

// onlyTrainingProgress reports whether old and cur differ in nothing but
// status.training's progress fields (and the resourceVersion and managedFields that
// every write changes). It copies neither object deeply: it compares shallow copies
// with those fields cleared.
func onlyTrainingProgress(old, cur *trainingv1alpha1.ESPOJob) bool {
	if outcomeOf(old) != outcomeOf(cur) {
		return false
	}
	a, b := *old, *cur
	a.ResourceVersion, b.ResourceVersion = "", ""
	a.ManagedFields, b.ManagedFields = nil, nil
	a.Status.Training, b.Status.Training = nil, nil
	return equality.Semantic.DeepEqual(&a, &b)
}

// trainingOutcome is what the controller reads of status.training.
type trainingOutcome struct {
	reported bool
	outcome  trainingv1alpha1.TrainingOutcome
	message  string
	waiting  string
	// degraded is status.training.tracking.degraded, which the TrackingDegraded
	// condition shows.
	degraded string
}

func outcomeOf(j *trainingv1alpha1.ESPOJob) trainingOutcome {
	t := j.Status.Training
	if t == nil {
		return trainingOutcome{}
	}
	o := trainingOutcome{reported: true, outcome: t.Outcome, message: t.Message, waiting: t.WaitingForWorker}
	if t.Tracking != nil {
		o.degraded = t.Tracking.Degraded
	}
	return o
}
