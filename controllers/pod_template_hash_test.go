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
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// hashBase is the job the hash tests change: two replicas with resources, scheduling
// and checkpoints.
func hashBase() *builders.ESPOJobWrapper {
	return makeJob().Replicas(2).NodeSelector("pool", "a").
		Resources(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}).
		Toleration(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).
		Checkpoint("ckpt", "runs/1", 50)
}

func TestPodTemplateHashIsAStableLabelValue(t *testing.T) {
	job := hashBase().BackoffLimit(2).Obj()
	before := job.DeepCopy()
	h := podTemplateHash(job)
	if len(h) != podTemplateHashLength {
		t.Errorf("hash %q has %d characters, want %d", h, len(h), podTemplateHashLength)
	}
	if errs := validation.IsValidLabelValue(h); len(errs) > 0 {
		t.Errorf("hash %q is not a label value: %v", h, errs)
	}
	for i := range 20 {
		if got := podTemplateHash(job.DeepCopy()); got != h {
			t.Fatalf("call %d: hash %q, want %q", i, got, h)
		}
	}
	if !equality.Semantic.DeepEqual(before, job) {
		t.Error("podTemplateHash changed the job")
	}
}

// TestPodTemplateHashGolden pins the hash of a fixed spec. If it fails, every running
// job's pods would carry another hash than the new controller computes, and an
// upgrade would recreate every running gang once: keep new optional fields unset-able
// (omitempty, or a struct that marshals empty), or accept that and say so in the
// release notes, then update the value.
func TestPodTemplateHashGolden(t *testing.T) {
	job := &trainingv1alpha1.ESPOJob{Spec: trainingv1alpha1.ESPOJobSpec{
		Datasets: trainingv1alpha1.Datasets{Sources: []trainingv1alpha1.DatasetSource{{Name: "smartspot", Synthetic: &trainingv1alpha1.SyntheticSource{Episodes: 20, Seed: 1}}}},
		Trainer: trainingv1alpha1.TrainerSpec{Replicas: 2, Image: "espo:v1", NodeSelector: map[string]string{"pool": "a"},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}},
		Checkpoint: &trainingv1alpha1.CheckpointSpec{PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "ckpt", Path: "runs/1"}},
	}}
	if got, want := podTemplateHash(job), "752c3d19185191a0"; got != want {
		t.Errorf("podTemplateHash = %q, want %q", got, want)
	}
}

// TestPodTemplateHashCoversEverySpecField makes a field added to ESPOJobSpec a
// decision: hashed (a podTemplateInputs field of the same JSON name) when the pods
// or the trainer's start depend on it and it may change, or left out here, with why.
func TestPodTemplateHashCoversEverySpecField(t *testing.T) {
	leftOut := map[string]string{
		"runPolicy": "enforced by the controller; may change at any time",
		"algorithm": "immutable, and in the run config only",
		"rewards":   "immutable, and in the run config only",
	}
	hashed := jsonNames(reflect.TypeFor[podTemplateInputs]())
	for _, name := range jsonNames(reflect.TypeFor[trainingv1alpha1.ESPOJobSpec]()) {
		_, out := leftOut[name]
		if in := slices.Contains(hashed, name); in == out {
			t.Errorf("spec.%s: hashed %v, left out %v; want exactly one", name, in, out)
		}
	}
}

// jsonNames are the JSON names of a struct type's fields.
func jsonNames(typ reflect.Type) []string {
	var names []string
	for f := range typ.Fields() {
		names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
	}
	return names
}

func TestPodTemplateHashIgnoresMapOrderAndEmptyValues(t *testing.T) {
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	selector := func(order []string) map[string]string {
		m := map[string]string{}
		for _, k := range order {
			m[k] = "v-" + k
		}
		return m
	}
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)
	base := hashBase().Obj()
	base.Spec.Trainer.NodeSelector = selector(keys)
	want := podTemplateHash(base)

	cases := map[string]func(j *trainingv1alpha1.ESPOJob){
		"map keys inserted in another order": func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.NodeSelector = selector(reversed) },
		"a quantity spelt otherwise": func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.Trainer.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2000m")
		},
		"empty lists and structs instead of nil": func(j *trainingv1alpha1.ESPOJob) {
			j.Spec.Trainer.Env = []corev1.EnvVar{}
			j.Spec.Trainer.Labels = map[string]string{}
			j.Spec.Trainer.Affinity = &corev1.Affinity{}
			j.Spec.Trainer.Resources.Limits = corev1.ResourceList{}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			for range 10 { // map iteration order varies from call to call
				j := base.DeepCopy()
				change(j)
				if got := podTemplateHash(j); got != want {
					t.Fatalf("hash %q, want %q", got, want)
				}
			}
		})
	}
}

func TestPodTemplateHashChangesWithWhatShapesThePods(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	cases := map[string]*trainingv1alpha1.ESPOJob{
		"nodeSelector value":       hashBase().NodeSelector("pool", "b").Obj(),
		"nodeSelector key":         hashBase().NodeSelector("zone", "x").Obj(),
		"resources request":        hashBase().Resources(corev1.ResourceRequirements{Requests: cpu("3")}).Obj(),
		"resources limit":          hashBase().GPUs(1).Obj(),
		"tolerations":              hashBase().Toleration(corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}).Obj(),
		"trainer image":            hashBase().Image("espo:v2").Obj(),
		"worker image and command": hashBase().WorkerImage("worker:v2", "python", "-m", "w").Obj(),
		"replicas":                 hashBase().Replicas(3).Obj(),
		"workers per replica":      hashBase().WorkersPerReplica(2).Obj(),
		"env":                      hashBase().Env("NCCL_DEBUG", "INFO").Obj(),
		"pod labels":               hashBase().PodLabel("team", "rec").Obj(),
		"pod annotations":          hashBase().PodAnnotation("note", "x").Obj(),
		"scheduling gate":          hashBase().SchedulingGate("kueue.x-k8s.io/admission").Obj(),
		"priority class":           hashBase().PriorityClassName("high").Obj(),
		"service account":          hashBase().ServiceAccountName("reporter").Obj(),
		"checkpoint claim":         hashBase().Checkpoint("other", "runs/1", 50).Obj(),
		"checkpoint interval":      hashBase().Checkpoint("ckpt", "runs/1", 10).Obj(),
		"early stopping":           hashBase().StopAt(trainingv1alpha1.MetricRecommendationAccuracy, "0.3").Obj(),
		"export":                   hashBase().Export("models", "run-1", false, "").Obj(),
		"affinity": func() *trainingv1alpha1.ESPOJob {
			j := hashBase().Obj()
			j.Spec.Trainer.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpExists}},
				}}},
			}}
			return j
		}(),
	}
	base := podTemplateHash(hashBase().Obj())
	seen := map[string]string{}
	for name, job := range cases {
		h := podTemplateHash(job)
		if h == base {
			t.Errorf("%s: the hash did not change", name)
		}
		if other, ok := seen[h]; ok {
			t.Errorf("%s and %s have the same hash", name, other)
		}
		seen[h] = name
	}
}

func TestPodTemplateHashIgnoresWhatDoesNotShapeThePods(t *testing.T) {
	want := podTemplateHash(hashBase().Obj())
	cases := map[string]*trainingv1alpha1.ESPOJob{
		"status": hashBase().Phase(trainingv1alpha1.PhaseRunning).Restarts(2).PodCounts(2, 2, 0, 0).StartTime(now).
			Condition(cond(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, "all 2 trainer pods are running")).
			Training(&trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Step: 40}).ObservedGeneration(3).Obj(),
		"suspend":                 hashBase().Suspend(true).Obj(),
		"backoffLimit":            hashBase().BackoffLimit(7).Obj(),
		"activeDeadlineSeconds":   hashBase().ActiveDeadlineSeconds(3600).Obj(),
		"ttlSecondsAfterFinished": hashBase().TTLSecondsAfterFinished(60).Obj(),
		"algorithm and rewards (immutable; in the run config only)": hashBase().GroupSize(8).LearningRate("1e-5").
			COUTWeight("0.5").Obj(),
		"the job's metadata": func() *trainingv1alpha1.ESPOJob {
			j := hashBase().Label("team", "rec").Annotation("note", "x").Generation(9).Obj()
			j.ResourceVersion = "12345"
			j.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
			return j
		}(),
	}
	for name, job := range cases {
		if got := podTemplateHash(job); got != want {
			t.Errorf("%s: hash %q, want %q", name, got, want)
		}
	}
}

func TestOutdatedPodTemplate(t *testing.T) {
	job := hashBase().Obj()
	want := podTemplateHash(job)
	hash := func(h string) podOption {
		return func(p *corev1.Pod) {
			if h == "" {
				delete(p.Labels, LabelPodTemplateHash)
			} else {
				p.Labels[LabelPodTemplateHash] = h
			}
		}
	}
	cases := map[string]struct {
		pods    []corev1.Pod
		want    string // the job's hash; "" is the job's
		old     string
		outdate bool
	}{
		"the pods of the current spec": {
			pods: []corev1.Pod{testPod(job, 0), testPod(job, 1)},
		},
		"a worker built from an older spec": {
			pods: []corev1.Pod{testPod(job, 0), testPod(job, 1, hash("0123456789abcdef"))},
			old:  "0123456789abcdef", outdate: true,
		},
		"pods from a controller older than the label match": {
			pods: []corev1.Pod{testPod(job, 0, hash("")), testPod(job, 1, hash(""))},
		},
		"an unlabelled pod beside an older one: the older one counts": {
			pods: []corev1.Pod{testPod(job, 0, hash("")), testPod(job, 1, hash("0123456789abcdef"))},
			old:  "0123456789abcdef", outdate: true,
		},
		"an older pod being deleted": {
			pods: []corev1.Pod{testPod(job, 0, hash("0123456789abcdef"), deleting()), testPod(job, 1)},
		},
		"an older pod of an earlier restart attempt (deleted as stale)": {
			pods: []corev1.Pod{testPod(job, 0, hash("0123456789abcdef"), attempt("7")), testPod(job, 1)},
		},
		"no hash to compare with": {
			pods: []corev1.Pod{testPod(job, 0, hash("0123456789abcdef"))}, want: "none",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := want
			if tc.want == "none" {
				w = ""
			}
			old, outdated := outdatedPodTemplate(splitPods(job, tc.pods), w)
			if old != tc.old || outdated != tc.outdate {
				t.Errorf("outdatedPodTemplate = %q, %v; want %q, %v", old, outdated, tc.old, tc.outdate)
			}
		})
	}
}

func TestPodTemplateChangedEvent(t *testing.T) {
	u := newStatusUpdate(hashBase().Obj(), now)
	podTemplateChanged(u, "0123456789abcdef", "fedcba9876543210")
	if len(u.events) != 1 {
		t.Fatalf("events %+v, want one", u.events)
	}
	e := u.events[0]
	if e.Type != corev1.EventTypeNormal || e.Reason != ReasonPodTemplateChanged ||
		!strings.Contains(e.Message, "pod template hash 0123456789abcdef, now fedcba9876543210") {
		t.Errorf("event %+v", e)
	}
	if u.status().Restarts != 0 || len(u.status().Conditions) != 0 {
		t.Errorf("the status changed: %+v", u.status())
	}
}

func TestCanonicalJSON(t *testing.T) {
	cases := map[string]struct {
		in   any
		want string
	}{
		"keys sorted, empty members left out, innermost first": {
			in:   map[string]any{"b": 1, "a": map[string]any{"x": nil, "y": []any{}, "z": map[string]any{"w": map[string]any{}}}, "c": ""},
			want: `{"b":1,"c":""}`,
		},
		"empty list elements stay, so [{}] is not []": {
			in: map[string]any{"l": []any{map[string]any{"x": nil}}}, want: `{"l":[{}]}`,
		},
		"zero numbers and false stay; large integers are exact": {
			in: map[string]any{"n": 0, "f": false, "seed": int64(9007199254740993)}, want: `{"f":false,"n":0,"seed":9007199254740993}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := canonicalJSON(tc.in)
			if err != nil || string(got) != tc.want {
				t.Errorf("canonicalJSON = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}
