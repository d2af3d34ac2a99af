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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// gangResources are the worker container's resources of the gang test jobs.
var gangResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
		"nvidia.com/gpu":      resource.MustParse("1"),
	},
	Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
}

func TestDesiredPodGroupPerPolicy(t *testing.T) {
	// Three pods of 500m, 1Gi and a GPU each.
	threeTimes := map[string]any{"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "3"}
	cases := []struct {
		policy   trainingv1alpha1.GangPolicy
		queue    string
		wantGVK  string
		wantSpec map[string]any
	}{
		{trainingv1alpha1.GangPodGroup, "", "scheduling.k8s.io/v1beta1, Kind=PodGroup", map[string]any{
			"schedulingPolicy":  map[string]any{"gang": map[string]any{"minCount": int64(3)}},
			"priorityClassName": "high",
		}},
		{trainingv1alpha1.GangCoscheduling, "", "scheduling.x-k8s.io/v1alpha1, Kind=PodGroup", map[string]any{
			"minMember": int64(3), "minResources": threeTimes,
		}},
		{trainingv1alpha1.GangVolcano, "gpu", "scheduling.volcano.sh/v1beta1, Kind=PodGroup", map[string]any{
			"minMember": int64(3), "minResources": threeTimes, "queue": "gpu", "priorityClassName": "high",
		}},
	}
	for _, c := range cases {
		t.Run(string(c.policy), func(t *testing.T) {
			job := makeJob().Replicas(3).Resources(gangResources).PriorityClassName("high").Gang(c.policy, c.queue).Obj()
			pg := desiredPodGroup(job, testOpts)
			if got := pg.GroupVersionKind().String(); got != c.wantGVK {
				t.Errorf("kind %s, want %s", got, c.wantGVK)
			}
			if pg.GetName() != "demo-trainer" || pg.GetNamespace() != "ns" {
				t.Errorf("named %s/%s, want ns/demo-trainer", pg.GetNamespace(), pg.GetName())
			}
			if diff := cmp.Diff(c.wantSpec, pg.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if h := pg.GetLabels()[LabelPodTemplateHash]; h != podTemplateHash(job) || h == "" {
				t.Errorf("pod template hash label %q, want %q", h, podTemplateHash(job))
			}
			if !metav1.IsControlledBy(pg, job) {
				t.Errorf("owner references %v: the job is not the controller", pg.GetOwnerReferences())
			}
		})
	}
}

func TestNoPodGroupWithoutAGangPolicy(t *testing.T) {
	for _, job := range []*trainingv1alpha1.ESPOJob{
		makeJob().Replicas(2).Obj(),
		makeJob().Replicas(2).Gang(trainingv1alpha1.GangNone, "").Obj(),
	} {
		if pg := desiredPodGroup(job, testOpts); pg != nil {
			t.Errorf("scheduling %+v: PodGroup %v, want none", job.Spec.Trainer.Scheduling, pg.Object)
		}
		pod := buildPod(job, 1, testOpts)
		if pod.Spec.SchedulingGroup != nil || pod.Labels[LabelCoschedulingPodGroup] != "" ||
			pod.Annotations[AnnotationVolcanoGroupName] != "" || pod.Spec.SchedulerName != "" {
			t.Errorf("scheduling %+v: the pod names a gang: %+v %v %v", job.Spec.Trainer.Scheduling,
				pod.Spec.SchedulingGroup, pod.Labels, pod.Annotations)
		}
	}
}

func TestGangRequestsSumEveryPod(t *testing.T) {
	cases := map[string]*trainingv1alpha1.ESPOJob{
		// CPU: the trainer container of rank 0, the worker container of the others.
		"cpu": makeJob().Replicas(3).Resources(gangResources).Obj(),
		// CUDA: a worker container in every pod, beside the trainer in rank 0.
		"cuda": makeJob().CUDA("Qwen/Qwen2.5-VL-3B-Instruct").Replicas(3).Resources(gangResources).Obj(),
	}
	want := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("3Gi"),
		"nvidia.com/gpu":      resource.MustParse("3"),
	}
	for name, job := range cases {
		got := gangRequests(job, testOpts)
		if !equalQuantities(got, want) {
			t.Errorf("%s: requests %v, want %v", name, got, want)
		}
	}
}

// equalQuantities reports whether two resource lists hold the same quantities.
func equalQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if w, ok := b[k]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestPodsJoinTheirGang(t *testing.T) {
	cases := []struct {
		policy        trainingv1alpha1.GangPolicy
		schedulerName string
		check         func(*corev1.Pod) string
	}{
		{trainingv1alpha1.GangPodGroup, "", func(p *corev1.Pod) string {
			return cmp.Diff(&corev1.PodSchedulingGroup{PodGroupName: ptr.To("demo-trainer")}, p.Spec.SchedulingGroup) +
				cmp.Diff("", p.Spec.SchedulerName)
		}},
		{trainingv1alpha1.GangCoscheduling, "scheduler-plugins-scheduler", func(p *corev1.Pod) string {
			return cmp.Diff("demo-trainer", p.Labels[LabelCoschedulingPodGroup]) +
				cmp.Diff("scheduler-plugins-scheduler", p.Spec.SchedulerName)
		}},
		{trainingv1alpha1.GangVolcano, "", func(p *corev1.Pod) string {
			return cmp.Diff("demo-trainer", p.Annotations[AnnotationVolcanoGroupName]) +
				cmp.Diff("volcano", p.Spec.SchedulerName)
		}},
		{trainingv1alpha1.GangVolcano, "volcano-gpu", func(p *corev1.Pod) string {
			return cmp.Diff("volcano-gpu", p.Spec.SchedulerName)
		}},
	}
	for _, c := range cases {
		job := makeJob().Replicas(2).Gang(c.policy, "").Obj()
		job.Spec.Trainer.SchedulerName = c.schedulerName
		for rank := range int32(2) {
			if diff := c.check(buildPod(job, rank, testOpts)); diff != "" {
				t.Errorf("%s, schedulerName %q, rank %d (-want +got):\n%s", c.policy, c.schedulerName, rank, diff)
			}
		}
	}
}

// TestAppliedPodGroupFieldsCompareEqual: the fields read back from a live PodGroup
// equal the desired ones when nothing changed, and differ when someone changed one,
// so that a PodGroup in line costs no write.
func TestAppliedPodGroupFieldsCompareEqual(t *testing.T) {
	job := makeJob().Replicas(2).Resources(gangResources).Gang(trainingv1alpha1.GangVolcano, "gpu").Obj()
	desired := desiredPodGroup(job, testOpts)
	c := podGroupCompanion(desired)

	live := liveAppliedBy(t, desired)
	applied, err := c.applied(live)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(c.desired, applied) {
		t.Errorf("applied fields of an unchanged PodGroup differ (-desired +applied):\n%s",
			cmp.Diff(c.desired.(unstructuredConfig).Object.Object, applied.(unstructuredConfig).Object.Object))
	}

	if err := unstructured.SetNestedField(live.Object, int64(1), "spec", "minMember"); err != nil {
		t.Fatal(err)
	}
	if applied, _ := c.applied(live); equality.Semantic.DeepEqual(c.desired, applied) {
		t.Error("a PodGroup whose minMember someone changed compares equal to the desired one")
	}
}

// liveAppliedBy is desired as the API server would hold it after FieldManager applied
// it: with server-set metadata, a status, and managed fields naming the applied
// fields (without apiVersion, kind, name and namespace, which the server leaves out).
func liveAppliedBy(t *testing.T, desired *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	tv, err := smdtyped.DeducedParseableType.FromUnstructured(desired.Object)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	set = set.Difference(fieldpath.NewSet(
		fieldpath.MakePathOrDie("apiVersion"), fieldpath.MakePathOrDie("kind"),
		fieldpath.MakePathOrDie("metadata", "name"), fieldpath.MakePathOrDie("metadata", "namespace")))
	raw, err := set.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	live := desired.DeepCopy()
	live.SetUID("pg-uid")
	live.SetResourceVersion("7")
	live.Object["status"] = map[string]any{"phase": "Pending"}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "volcano", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(string(raw))},
	})
	return live
}
