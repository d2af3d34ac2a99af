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

// Package kueue makes ESPOJobs a job kind of Kueue (kueue.x-k8s.io): a job that names a
// LocalQueue (the label kueue.x-k8s.io/queue-name) is represented by one Workload
// whose one pod set is its trainer pods, and runs only while Kueue admits it. The
// package implements Kueue's jobframework.GenericJob for ESPOJob; Kueue's own generic
// reconciler creates, updates and finishes the Workloads, suspends and unsuspends the
// jobs, and writes the admitted flavor's node labels and tolerations (and admission
// checks' pod-set updates) into spec.trainer, from which the ESPOJob controller builds
// the pods.
package kueue

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	controllerconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/podset"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// QueueLabel is the label by which a job names its LocalQueue; a job without it is
// not Kueue's.
const QueueLabel = controllerconstants.QueueLabel

// AdmittedAnnotation marks a job that Kueue admitted (RunWithPodSetsInfo) and has not
// suspended since (RestorePodSetsInfo): only such a job of a queue may have pods.
const AdmittedAnnotation = "training.espo.dev/kueue-admitted"

// Admission is the ESPOJob controller's admission gate (controllers.Options.Admission)
// with the integration on: a job that names a queue may have pods only once Kueue
// admitted it. Kueue defaults its own Jobs to suspended with a webhook; this gate
// holds the pods of a job created running instead, until Kueue suspends it and later
// admits it.
func Admission(job *trainingv1alpha1.ESPOJob) (admitted bool, why string) {
	if job.Labels[QueueLabel] == "" || job.Annotations[AdmittedAnnotation] == "true" {
		return true, ""
	}
	return false, "the job names a queue (label " + QueueLabel + ") and Kueue has not admitted its Workload"
}

// PodSetName is the name of the one pod set of an ESPOJob's Workload: its trainer pods.
const PodSetName kueuev1beta2.PodSetReference = "trainer"

// GVK is the ESPOJob kind, as Kueue's configuration names it in
// integrations.externalFrameworks ("ESPOJob.v1alpha1.training.espo.dev").
var GVK = trainingv1alpha1.GroupVersion.WithKind("ESPOJob")

// Job is an ESPOJob seen by Kueue's jobframework. PodOptions are the operator's, so
// that the Workload's pod template is the one the controller builds.
type Job struct {
	*trainingv1alpha1.ESPOJob
	PodOptions controllers.PodOptions
}

var (
	_ jobframework.GenericJob           = (*Job)(nil)
	_ jobframework.JobWithPriorityClass = (*Job)(nil)
	_ jobframework.TopLevelJob          = (*Job)(nil)
)

// Object is the ESPOJob.
func (j *Job) Object() client.Object { return j.ESPOJob }

// IsSuspended reports spec.runPolicy.suspend.
func (j *Job) IsSuspended() bool { return j.Spec.RunPolicy.Suspend }

// Suspend sets spec.runPolicy.suspend: the controller deletes the trainer pods after
// their grace period, in which the trainer checkpoints the step in flight.
func (j *Job) Suspend() { j.Spec.RunPolicy.Suspend = true }

// GVK is the ESPOJob kind.
func (j *Job) GVK() schema.GroupVersionKind { return GVK }

// PriorityClass is spec.trainer.priorityClassName: Kueue orders and preempts by it
// unless the job names a WorkloadPriorityClass (label kueue.x-k8s.io/priority-class).
func (j *Job) PriorityClass() string { return j.Spec.Trainer.PriorityClassName }

// PodSets is the job's one pod set: spec.trainer.replicas copies of the trainer pod
// template the controller builds (each asks for spec.trainer.resources). Its labels
// and annotations are spec.trainer's own, without those the controller adds to every
// pod: Kueue restores spec.trainer from this template when it suspends the job again.
func (j *Job) PodSets(context.Context) ([]kueuev1beta2.PodSet, error) {
	template := controllers.TrainerPodTemplate(j.ESPOJob, j.PodOptions)
	template.ObjectMeta = metav1.ObjectMeta{Labels: maps.Clone(j.Spec.Trainer.Labels), Annotations: maps.Clone(j.Spec.Trainer.Annotations)}
	return []kueuev1beta2.PodSet{{Name: PodSetName, Count: j.Spec.Trainer.Replicas, Template: template}}, nil
}

// RunWithPodSetsInfo unsuspends the job, marked AdmittedAnnotation, with the
// admission's pod-set info (the flavor's node labels and tolerations, admission
// checks' labels, annotations and scheduling gates) merged into spec.trainer. It fails when the info does not name
// exactly the one pod set, or conflicts with what spec.trainer already sets.
func (j *Job) RunWithPodSetsInfo(_ context.Context, infos []podset.PodSetInfo) error {
	if len(infos) != 1 {
		return podset.BadPodSetsInfoLenError(1, len(infos))
	}
	meta, spec := j.trainerPodFields()
	if err := podset.Merge(meta, spec, infos[0]); err != nil {
		return err
	}
	j.setTrainerPodFields(meta, spec)
	j.Spec.RunPolicy.Suspend = false
	metav1.SetMetaDataAnnotation(&j.ObjectMeta, AdmittedAnnotation, "true")
	return nil
}

// RestorePodSetsInfo puts back the spec.trainer fields RunWithPodSetsInfo changed, as
// they were before admission (Kueue keeps them in the Workload), and removes
// AdmittedAnnotation. It reports whether anything changed.
func (j *Job) RestorePodSetsInfo(infos []podset.PodSetInfo) bool {
	if len(infos) == 0 {
		return false
	}
	_, admitted := j.Annotations[AdmittedAnnotation]
	delete(j.Annotations, AdmittedAnnotation)
	meta, spec := j.trainerPodFields()
	changed := podset.RestorePodSpec(meta, spec, infos[0])
	j.setTrainerPodFields(meta, spec)
	return changed || admitted
}

// trainerPodFields are the spec.trainer fields that Kueue's pod-set info sets, as the
// pod metadata and spec podset's helpers work on.
func (j *Job) trainerPodFields() (*metav1.ObjectMeta, *corev1.PodSpec) {
	t := &j.Spec.Trainer
	return &metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations},
		&corev1.PodSpec{NodeSelector: t.NodeSelector, Tolerations: t.Tolerations, SchedulingGates: t.SchedulingGates}
}

func (j *Job) setTrainerPodFields(meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	t := &j.Spec.Trainer
	t.Labels, t.Annotations = meta.Labels, meta.Annotations
	t.NodeSelector, t.Tolerations, t.SchedulingGates = spec.NodeSelector, spec.Tolerations, spec.SchedulingGates
}

// Finished reports the job's Succeeded or Failed condition, with its message.
func (j *Job) Finished(context.Context) (message string, success, finished bool) {
	if c := apimeta.FindStatusCondition(j.Status.Conditions, trainingv1alpha1.ConditionSucceeded); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message, true, true
	}
	if c := apimeta.FindStatusCondition(j.Status.Conditions, trainingv1alpha1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message, false, true
	}
	return "", false, false
}

// IsActive reports whether trainer pods still run (status.active): after a suspend
// Kueue waits for them to stop before it releases the quota.
func (j *Job) IsActive() bool { return j.Status.Active > 0 }

// PodsReady reports whether every trainer pod is ready (status.ready equals
// spec.trainer.replicas), for Kueue's waitForPodsReady.
func (j *Job) PodsReady(context.Context) bool {
	return j.Spec.Trainer.Replicas > 0 && j.Status.Ready >= j.Spec.Trainer.Replicas
}

// IsTopLevel is true: an ESPOJob is never the child of another Kueue-managed job.
func (j *Job) IsTopLevel() bool { return true }
