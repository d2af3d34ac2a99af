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

package localcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func TestNodeUnfit(t *testing.T) {
	node := &corev1.Node{}
	node.Labels = map[string]string{"pool": "gpu"}
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "espo", Effect: corev1.TaintEffectNoSchedule}}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), GPUResource: resource.MustParse("1"),
		corev1.ResourcePods: resource.MustParse("10")}
	tolerate := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "espo", Effect: corev1.TaintEffectNoSchedule}}
	pod := func(selector map[string]string, tol []corev1.Toleration, gpus string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: selector, Tolerations: tol,
			Containers: []corev1.Container{{Name: "c"}}}}
		if gpus != "" {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: resource.MustParse(gpus)}
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{GPUResource: resource.MustParse(gpus)}
		}
		return p
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		used corev1.ResourceList
		want []string
	}{
		"fits":          {pod: pod(map[string]string{"pool": "gpu"}, tolerate, "1")},
		"selector":      {pod: pod(map[string]string{"pool": "cpu"}, tolerate, ""), want: []string{"node(s) didn't match Pod's node affinity/selector"}},
		"taint":         {pod: pod(nil, nil, ""), want: []string{"node(s) had untolerated taint {dedicated: espo}"}},
		"gpus":          {pod: pod(nil, tolerate, "2"), want: []string{"Insufficient nvidia.com/gpu"}},
		"gpus used":     {pod: pod(nil, tolerate, "1"), used: corev1.ResourceList{GPUResource: resource.MustParse("1")}, want: []string{"Insufficient nvidia.com/gpu"}},
		"too many pods": {pod: pod(nil, tolerate, ""), used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}, want: []string{"Too many pods"}},
	} {
		got := nodeUnfit(tc.pod, node, tc.used)
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: nodeUnfit = %q, want %q", name, got, tc.want)
		}
	}
}

func TestPendingPodsSkipsGatedAndOtherSchedulers(t *testing.T) {
	gated := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}}}}
	other := &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: "kueue"}}
	ready := &corev1.Pod{}
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}
	if got := pendingPods([]*corev1.Pod{gated, other, ready, bound}); len(got) != 1 || got[0] != ready {
		t.Errorf("pendingPods = %v", got)
	}
}

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	never := corev1.RestartPolicyNever
	for name, tc := range map[string]struct {
		inits, mains []corev1.ContainerStatus
		started      bool
		want         corev1.PodPhase
	}{
		"preparing":         {mains: []corev1.ContainerStatus{{}}, want: corev1.PodPending},
		"stopped unstarted": {mains: []corev1.ContainerStatus{exited(137)}, want: corev1.PodFailed},
		"init running":      {inits: []corev1.ContainerStatus{running}, mains: []corev1.ContainerStatus{{}}, started: true, want: corev1.PodPending},
		"init failed":       {inits: []corev1.ContainerStatus{exited(1)}, mains: []corev1.ContainerStatus{{}}, started: true, want: corev1.PodFailed},
		"one running":       {mains: []corev1.ContainerStatus{running, exited(0)}, started: true, want: corev1.PodRunning},
		"all exited 0":      {mains: []corev1.ContainerStatus{exited(0), exited(0)}, started: true, want: corev1.PodSucceeded},
		"one failed":        {mains: []corev1.ContainerStatus{exited(0), exited(3)}, started: true, want: corev1.PodFailed},
	} {
		if got := podPhase(never, tc.inits, tc.mains, tc.started); got != tc.want {
			t.Errorf("%s: podPhase = %s, want %s", name, got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "x", "B": "y"}
	for in, want := range map[string]string{
		"$(A)/$(B)": "x/y", "$$(A)": "$(A)", "$(C)": "$(C)", "$A": "$A", "a$": "a$", "$(A": "$(A",
	} {
		if got := expand(in, env); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in           string
		lines, bytes int
		want         string
	}{
		{"a\nb\nc\n", 2, 0, "b\nc\n"},
		{"a\nb\nc", 2, 0, "b\nc"},
		{"a\nb\n", 5, 0, "a\nb\n"},
		{"abcdef", 0, 3, "def"},
		{"", 3, 0, ""},
	} {
		if got := string(tail([]byte(tc.in), tc.lines, tc.bytes)); got != tc.want {
			t.Errorf("tail(%q, %d, %d) = %q, want %q", tc.in, tc.lines, tc.bytes, got, tc.want)
		}
	}
}

func TestIPPool(t *testing.T) {
	p, err := newIPPool("127.9.9.0/30")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.allocate(types.UID("a"))
	b, _ := p.allocate(types.UID("b"))
	if a != "127.9.9.1" || b != "127.9.9.2" {
		t.Fatalf("allocate = %s, %s", a, b)
	}
	if _, err := p.allocate(types.UID("c")); err == nil {
		t.Error("a full pool should refuse")
	}
	p.release(types.UID("a"))
	if c, _ := p.allocate(types.UID("c")); c != "127.9.9.1" {
		t.Errorf("after release, allocate = %s", c)
	}
	if _, err := newIPPool("10.0.0.0/24"); err == nil {
		t.Error("a prefix outside 127/8 should be refused")
	}
}
