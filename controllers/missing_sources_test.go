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

func TestFindMissingSourceNamesTheConfigMapAScheduledPodWaitsFor(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "here"}}).Build()
	want := `spec.datasets.sources[1] (src-gone): ConfigMap "gone" does not exist in namespace ns: ` +
		`create it, or name an existing one in spec.datasets.sources[1].configMap.name`
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		job  *trainingv1alpha1.ESPOJob
		want string
	}{
		"a scheduled pending pod, one ConfigMap missing":  {pod: podOn("node-1"), job: jobOnConfigMaps("here", "gone"), want: want},
		"every ConfigMap exists":                          {pod: podOn("node-1"), job: jobOnConfigMaps("here")},
		"the pod is not scheduled yet: nothing looked up": {pod: podOn(""), job: jobOnConfigMaps("gone")},
	} {
		t.Run(name, func(t *testing.T) {
			u := newStatusUpdate(tc.job, time.Unix(0, 0))
			u.pods = []corev1.Pod{tc.pod}
			if err := findMissingSource(context.Background(), c, u); err != nil {
				t.Fatal(err)
			}
			if u.missingSource != tc.want {
				t.Errorf("missingSource = %q, want %q", u.missingSource, tc.want)
			}
		})
	}
}

func TestRunningConditionNamesAMissingSource(t *testing.T) {
	job := jobOnConfigMaps("gone")
	u := newStatusUpdate(job, time.Unix(0, 0))
	u.missingSource = "spec.datasets.sources[0] (src-gone): ConfigMap \"gone\" does not exist"
	pod := podOn("node-1")
	pod.Labels = map[string]string{LabelRole: RoleTrainer}
	updatePodStatus(u, splitPods(u.job, []corev1.Pod{pod}))
	c := meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionRunning)
	if c == nil || c.Reason != trainingv1alpha1.ReasonVolumeUnavailable || c.Message != u.missingSource {
		t.Fatalf("Running condition %+v, want reason VolumeUnavailable and the missing source", c)
	}
}
