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
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Gang scheduling: with spec.trainer.scheduling.gang other than none, the job's
// trainer pods are a gang of minimum size spec.trainer.replicas, described to the gang
// scheduler by a PodGroup companion ("<job>-trainer", of the policy's kind, owned by
// the job) and named by every pod. The PodGroup carries the pod template hash of the
// spec it was built from: one built from another spec (a resume after spec.trainer
// changed) is deleted and created anew, so that neither an immutable field nor the
// scheduler's state of the old gang outlives it (the bug of kuberay#5205). When the
// cluster does not serve the kind, the job is Created=False with the reason
// PodGroupUnavailable, gets no pods, and is looked at again after
// podGroupUnavailableRetry.

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;create;patch;delete

const (
	// LabelCoschedulingPodGroup names a pod's PodGroup for scheduler-plugins'
	// coscheduling plugin.
	LabelCoschedulingPodGroup = "scheduling.x-k8s.io/pod-group"
	// AnnotationVolcanoGroupName names a pod's PodGroup for Volcano.
	AnnotationVolcanoGroupName = "scheduling.k8s.io/group-name"
	// VolcanoSchedulerName is the schedulerName of Volcano's scheduler, the trainer
	// pods' default under the volcano policy.
	VolcanoSchedulerName = "volcano"
	// podGroupUnavailableRetry is how long a job whose PodGroup kind the cluster does
	// not serve waits before it is looked at again.
	podGroupUnavailableRetry = time.Minute
)

// podGroupKind is the PodGroup kind of each gang policy, and what a cluster needs to
// serve it.
var podGroupKind = map[trainingv1alpha1.GangPolicy]struct {
	gvk     schema.GroupVersionKind
	install string
}{
	trainingv1alpha1.GangPodGroup: {schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PodGroup"},
		"enable the feature gate GenericWorkload on the API server (with --runtime-config=scheduling.k8s.io/v1beta1=true) and on kube-scheduler (where it turns on the GangScheduling plugin)"},
	trainingv1alpha1.GangCoscheduling: {schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
		"install scheduler-plugins with the coscheduling plugin and its PodGroup CRD"},
	trainingv1alpha1.GangVolcano: {schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"},
		"install Volcano"},
}

// podGroupName is the name of the job's PodGroup.
func podGroupName(job *trainingv1alpha1.ESPOJob) string { return job.Name + "-trainer" }

// joinGang makes a trainer pod of job a member of the job's PodGroup, as its gang
// policy names members: spec.schedulingGroup (podGroup), a label (coscheduling) or an
// annotation and, unless the job names another, Volcano's scheduler (volcano). It
// leaves the pod alone under the policy none.
func joinGang(job *trainingv1alpha1.ESPOJob, pod *corev1.Pod) {
	name := podGroupName(job)
	switch job.Spec.Trainer.Gang() {
	case trainingv1alpha1.GangPodGroup:
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
	case trainingv1alpha1.GangCoscheduling:
		pod.Labels[LabelCoschedulingPodGroup] = name
	case trainingv1alpha1.GangVolcano:
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationVolcanoGroupName] = name
		if pod.Spec.SchedulerName == "" {
			pod.Spec.SchedulerName = VolcanoSchedulerName
		}
	}
}

// gangRequests is the sum of the resource requests of all the job's trainer pods, as
// the scheduler counts a pod's (its containers', init containers and overhead
// included).
func gangRequests(job *trainingv1alpha1.ESPOJob, o PodOptions) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for rank := range job.Spec.Trainer.Replicas {
		for name, q := range resourcehelper.PodRequests(buildPod(job, rank, o), resourcehelper.PodResourcesOptions{}) {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	return sum
}

// desiredPodGroup is the job's PodGroup as the controller wants it, or nil under the
// gang policy none: the fields the controller owns, in the kind of the job's policy.
// minMember (minCount) is spec.trainer.replicas; coscheduling and Volcano also get
// minResources, the sum of the pods' requests, and Volcano the queue and the pods'
// priority class.
func desiredPodGroup(job *trainingv1alpha1.ESPOJob, o PodOptions) *unstructured.Unstructured {
	policy := job.Spec.Trainer.Gang()
	kind, ok := podGroupKind[policy]
	if !ok {
		return nil
	}
	t := &job.Spec.Trainer
	spec := map[string]any{}
	switch policy {
	case trainingv1alpha1.GangPodGroup:
		spec["schedulingPolicy"] = map[string]any{"gang": map[string]any{"minCount": int64(t.Replicas)}}
		setIfNotEmpty(spec, "priorityClassName", t.PriorityClassName)
	case trainingv1alpha1.GangCoscheduling:
		spec["minMember"] = int64(t.Replicas)
		spec["minResources"] = quantities(gangRequests(job, o))
	case trainingv1alpha1.GangVolcano:
		spec["minMember"] = int64(t.Replicas)
		spec["minResources"] = quantities(gangRequests(job, o))
		setIfNotEmpty(spec, "queue", t.Scheduling.Queue)
		setIfNotEmpty(spec, "priorityClassName", t.PriorityClassName)
	}
	labels := jobLabels(job)
	if h := podTemplateHash(job); h != "" {
		labels[LabelPodTemplateHash] = h
	}
	pg := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	pg.SetGroupVersionKind(kind.gvk)
	pg.SetName(podGroupName(job))
	pg.SetNamespace(job.Namespace)
	pg.SetLabels(labels)
	pg.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(job, trainingv1alpha1.GroupVersion.WithKind("ESPOJob"))})
	return pg
}

// setIfNotEmpty sets m[key] to v unless v is empty.
func setIfNotEmpty(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

// quantities is a resource list as unstructured content: each quantity in its
// canonical form, as the API server keeps it.
func quantities(l corev1.ResourceList) map[string]any {
	m := make(map[string]any, len(l))
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		m[string(name)] = q.String()
	}
	return m
}

// unstructuredConfig adapts a PodGroup, an object of a kind the operator has no Go
// types for, to companionConfig: it is applied as controller-runtime applies
// unstructured objects.
type unstructuredConfig struct{ Object *unstructured.Unstructured }

func (unstructuredConfig) IsApplyConfiguration() {}

func (c unstructuredConfig) GetName() *string      { return ptr.To(c.Object.GetName()) }
func (c unstructuredConfig) GetNamespace() *string { return ptr.To(c.Object.GetNamespace()) }
func (c unstructuredConfig) GetKind() *string      { return ptr.To(c.Object.GetKind()) }

// applyConfiguration is the object as controller-runtime's client applies it.
func (c unstructuredConfig) applyConfiguration() runtime.ApplyConfiguration {
	return client.ApplyConfigurationFromUnstructured(c.Object.DeepCopy())
}

// podGroupCompanion is the companion of a desired PodGroup: the fields FieldManager
// applied to the live object are read from its managed fields, its schema deduced
// from the object.
func podGroupCompanion(desired *unstructured.Unstructured) companion {
	gvk := desired.GroupVersionKind()
	return companion{
		desired:  unstructuredConfig{desired},
		uncached: true,
		newObject: func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		applied: func(live client.Object) (companionConfig, error) {
			applied := &unstructured.Unstructured{Object: map[string]any{}}
			if err := managedfields.ExtractInto(live, smdtyped.DeducedParseableType, FieldManager, &applied.Object, ""); err != nil {
				return nil, err
			}
			applied.SetGroupVersionKind(gvk)
			applied.SetName(live.GetName())
			applied.SetNamespace(live.GetNamespace())
			return unstructuredConfig{applied}, nil
		},
	}
}

// podGroupUnavailableError says the cluster does not serve the PodGroup kind of the
// job's gang policy, and what to do about it.
type podGroupUnavailableError struct{ message string }

func (e *podGroupUnavailableError) Error() string { return e.message }

// applyPodGroup brings the job's PodGroup in line with its gang policy: none under the
// policy none, else the desired one, recreated when the live one was built from
// another spec. It returns a *podGroupUnavailableError, whose message is for the
// job's condition, when the cluster does not serve the kind.
func (r *ESPOJobReconciler) applyPodGroup(ctx context.Context, job *trainingv1alpha1.ESPOJob) error {
	desired := desiredPodGroup(job, r.opts.PodOptions)
	if desired == nil {
		return nil
	}
	c := podGroupCompanion(desired)
	err := r.recreateOutdatedPodGroup(ctx, job, c)
	if err == nil {
		err = r.applyCompanion(ctx, job, c)
	}
	if meta.IsNoMatchError(err) {
		kind := podGroupKind[job.Spec.Trainer.Gang()]
		return &podGroupUnavailableError{fmt.Sprintf("spec.trainer.scheduling.gang is %s, but the cluster does not serve %s (%s): %s, "+
			"or suspend the job and set spec.trainer.scheduling.gang to none",
			job.Spec.Trainer.Gang(), kind.gvk.Kind, kind.gvk.GroupVersion(), kind.install)}
	}
	return err
}

// recreateOutdatedPodGroup deletes the job's live PodGroup if it was built from
// another spec than the job's current one (its pod template hash differs), so that
// it is created anew from the current spec.
func (r *ESPOJobReconciler) recreateOutdatedPodGroup(ctx context.Context, job *trainingv1alpha1.ESPOJob, c companion) error {
	live, err := r.liveCompanion(ctx, c)
	if err != nil || live == nil || !metav1.IsControlledBy(live, job) {
		return err
	}
	want := podTemplateHash(job)
	if have := live.GetLabels()[LabelPodTemplateHash]; have == want || want == "" {
		return nil
	}
	err = r.client.Delete(ctx, live, client.Preconditions{UID: ptr.To(live.GetUID())}, client.DisableReadYourWritesConsistency)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s, built from an older spec: %w", c, err)
	}
	return nil
}

// reconcilePodGroup applies the job's PodGroup (applyPodGroup) and reports whether
// the reconcile stops here: on an error, or when the cluster does not serve the kind,
// which makes the job Created=False (PodGroupUnavailable) without pods and looks at
// it again after podGroupUnavailableRetry, rather than failing the reconcile.
func (r *ESPOJobReconciler) reconcilePodGroup(ctx context.Context, u *statusUpdate) (ctrl.Result, bool, error) {
	err := r.applyPodGroup(ctx, u.job)
	var unavailable *podGroupUnavailableError
	switch {
	case err == nil:
		return ctrl.Result{}, false, nil
	case errors.As(err, &unavailable):
		u.setCondition(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonPodGroupUnavailable, err.Error())
		return ctrl.Result{RequeueAfter: podGroupUnavailableRetry}, true, nil
	default:
		u.setCondition(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonCreateFailed, err.Error())
		return ctrl.Result{}, true, err
	}
}
