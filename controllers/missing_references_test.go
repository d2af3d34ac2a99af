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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// jobOnConfigMaps is a job whose dataset sources are the named ConfigMaps.
func jobOnConfigMaps(names ...string) *trainingv1alpha1.ESPOJob {
	job := &trainingv1alpha1.ESPOJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}}
	for _, n := range names {
		job.Spec.Datasets.Sources = append(job.Spec.Datasets.Sources, trainingv1alpha1.DatasetSource{
			Name: "src-" + n, ConfigMap: &trainingv1alpha1.ConfigMapSource{Name: n}})
	}
	return job
}

// podOn is a pending pod of the job, bound to node ("" for none).
func podOn(node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j-trainer-0"},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

// withServiceAccount is job running its trainer pods as the service account sa.
func withServiceAccount(job *trainingv1alpha1.ESPOJob, sa string) *trainingv1alpha1.ESPOJob {
	job.Spec.Trainer.ServiceAccountName = sa
	return job
}

func TestFindMissingReferenceNamesWhatAScheduledPodWaitsFor(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "here"}}).Build()
	gone := &missingReference{trainingv1alpha1.ReasonVolumeUnavailable,
		`spec.datasets.sources[1] (src-gone): ConfigMap "gone" does not exist in namespace ns: ` +
			`create it, or name an existing one in spec.datasets.sources[1].configMap.name`}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		job  *trainingv1alpha1.ESPOJob
		want *missingReference
	}{
		"a scheduled pending pod, one ConfigMap missing":  {pod: podOn("node-1"), job: jobOnConfigMaps("here", "gone"), want: gone},
		"every ConfigMap exists":                          {pod: podOn("node-1"), job: jobOnConfigMaps("here")},
		"the pod is not scheduled yet: nothing looked up": {pod: podOn(""), job: jobOnConfigMaps("gone")},
		"the first missing ConfigMap is named": {pod: podOn("node-1"), job: jobOnConfigMaps("gone", "here", "gone2"),
			want: &missingReference{gone.reason, strings.ReplaceAll(gone.message, "[1]", "[0]")}},
	} {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, time.Unix(0, 0))
			u.pods = []corev1.Pod{tc.pod}
			if err := findMissingReference(context.Background(), c, u); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, u.missing, cmp.AllowUnexported(missingReference{})); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingServiceAccountNamesTheField(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "runner"}}).Build()
	noSA := &missingReference{trainingv1alpha1.ReasonPodsPending,
		`spec.trainer.serviceAccountName: ServiceAccount "absent" does not exist in namespace ns: create it (allowed to ` +
			`patch this job's status), or leave the field unset for the job's own identity; the trainer pods are ` +
			`created once it exists`}
	for name, tc := range map[string]struct {
		sa   string
		want *missingReference
	}{
		"unset: the job's own identity": {},
		"it exists":                     {sa: "runner"},
		"it is missing":                 {sa: "absent", want: noSA},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := missingServiceAccount(context.Background(), c, withServiceAccount(jobOnConfigMaps(), tc.sa))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(missingReference{})); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunningConditionNamesAMissingSource(t *testing.T) {
	job := jobOnConfigMaps("gone")
	u := newStatusUpdate(job, time.Unix(0, 0))
	u.missing = &missingReference{trainingv1alpha1.ReasonVolumeUnavailable, "spec.datasets.sources[0] (src-gone): ConfigMap \"gone\" does not exist"}
	pod := podOn("node-1")
	pod.Labels = map[string]string{LabelRole: RoleTrainer}
	updatePodStatus(u, splitPods(u.job, []corev1.Pod{pod}))
	c := meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionRunning)
	if c == nil || c.Reason != trainingv1alpha1.ReasonVolumeUnavailable || c.Message != u.missing.message {
		t.Fatalf("Running condition %+v, want reason VolumeUnavailable and the missing source", c)
	}
}
