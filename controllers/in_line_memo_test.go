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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestInLineMemo: a companion is in line only at the resourceVersion and for the
// desired state it was found in line with, and not after its job is forgotten.
func TestInLineMemo(t *testing.T) {
	var m inLineMemo
	job := types.NamespacedName{Namespace: "ns", Name: "demo"}
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "cm-uid", ResourceVersion: "7"}}
	desired, ok := fingerprint(corev1ac.ConfigMap("demo-config", "ns").WithData(map[string]string{"k": "v"}))
	other, ok2 := fingerprint(corev1ac.ConfigMap("demo-config", "ns").WithData(map[string]string{"k": "w"}))
	if !ok || !ok2 || desired == other {
		t.Fatalf("fingerprints %d, %d (%v, %v): want two different ones", desired, other, ok, ok2)
	}
	if m.has(job, live, desired) {
		t.Fatal("in line before anything was put")
	}
	m.put(job, live, desired)
	if !m.has(job, live, desired) {
		t.Error("not in line right after put")
	}
	if m.has(job, live, other) {
		t.Error("in line for another desired state")
	}
	changed := live.DeepCopy()
	changed.ResourceVersion = "8"
	if m.has(job, changed, desired) {
		t.Error("in line at another resourceVersion")
	}
	m.forget(job)
	if m.has(job, live, desired) {
		t.Error("in line after the job was forgotten")
	}
}
