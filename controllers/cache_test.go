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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// managedFields are entries of FieldManager, the trainer and kubectl.
func managedFields() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "espo-trainer", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
	}
}

func TestStripUnread(t *testing.T) {
	annotations := func() map[string]string {
		return map[string]string{lastAppliedAnnotation: `{"kind":"ConfigMap"}`, "example.com/kept": "yes"}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managedFields(), Annotations: annotations()},
		Data: map[string]string{"k": "v"}}
	if _, err := stripUnread(cm); err != nil {
		t.Fatal(err)
	}
	want := []metav1.ManagedFieldsEntry{managedFields()[1], managedFields()[3]}
	if diff := cmp.Diff(want, cm.ManagedFields); diff != "" {
		t.Errorf("a ConfigMap's managed fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"example.com/kept": "yes"}, cm.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if cm.Data["k"] != "v" {
		t.Errorf("data = %v: the content is kept", cm.Data)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managedFields()}}
	if _, err := stripUnread(pod); err != nil {
		t.Fatal(err)
	}
	if pod.ManagedFields != nil {
		t.Errorf("a pod keeps managed fields %v", pod.ManagedFields)
	}
}

// TestStripPodSpecKeepsWhatTheControllerReads strips a trainer pod as buildPod makes
// it, bound to a node, and checks that only the node, the containers' names and the
// Secret-sourced variables are left, and that the controller's readers of a live pod
// still find what they look for.
func TestStripPodSpecKeepsWhatTheControllerReads(t *testing.T) {
	job := makeJob().Embedder("http://embedder:8080").EmbedderAPIKey("embedder-key", "token").Obj()
	pod := buildPod(job, 0, testOpts)
	pod.Spec.NodeName = "node-a"
	var names []string
	var fromSecret []corev1.EnvVar
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				fromSecret = append(fromSecret, e)
			}
		}
	}
	if len(fromSecret) == 0 {
		t.Fatal("the trainer pod takes no variable from a Secret: the test no longer checks what it should")
	}

	if _, err := stripUnread(pod); err != nil {
		t.Fatal(err)
	}
	want := corev1.PodSpec{NodeName: "node-a"}
	for _, n := range names {
		c := corev1.Container{Name: n}
		if n == ContainerTrainer {
			c.Env = fromSecret
		}
		want.Containers = append(want.Containers, c)
	}
	if diff := cmp.Diff(want, pod.Spec); diff != "" {
		t.Errorf("the stripped spec (-want +got):\n%s", diff)
	}

	pod.Status.Phase = corev1.PodPending
	if !anyScheduledPending([]corev1.Pod{*pod}) {
		t.Error("anyScheduledPending does not see the stripped pod's node")
	}
	msg := `Error: secret "embedder-key" not found`
	if got := apiKeySecretProblem(pod, ContainerTrainer, msg); got == "" {
		t.Errorf("apiKeySecretProblem(%q) of the stripped pod is empty", msg)
	}

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := stripUnread(tombstone); err != nil || got != any(tombstone) {
		t.Errorf("stripUnread(tombstone) = %v, %v; want it unchanged", got, err)
	}
}
