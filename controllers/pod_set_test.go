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
)

func TestSplitPods(t *testing.T) {
	job := makeJob().Replicas(2).Restarts(1).Obj()
	pods := []corev1.Pod{
		testPod(job, 0),
		testPod(job, 1, attempt("0")),
		testPod(makeJob().Replicas(3).Restarts(1).Obj(), 2), // a rank the job no longer has
		testPod(job, 1, func(p *corev1.Pod) { p.Name = "demo-trainer-1-old" }, deleting()),
	}
	s := splitPods(job, pods)
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"demo-trainer-0"}, names(s.ranks())); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"demo-trainer-1", "demo-trainer-2"}, names(s.stale)); diff != "" {
		t.Errorf("stale (-want +got):\n%s", diff)
	}
	if got := s.missingRanks(job); len(got) != 0 {
		t.Errorf("missingRanks = %v: rank 1's name is still taken", got)
	}
	if got := splitPods(job, pods[:1]).missingRanks(job); !cmp.Equal(got, []int32{1}) {
		t.Errorf("missingRanks = %v, want [1]", got)
	}
}

// TestRanksAreInRankOrder checks rank order past rank 9, where names sort otherwise
// ("demo-trainer-10" < "demo-trainer-2"), for the current pods and the failed ones.
func TestRanksAreInRankOrder(t *testing.T) {
	job := makeJob().Replicas(12).Obj()
	var pods []corev1.Pod
	for r := int32(11); r >= 0; r-- {
		pods = append(pods, testPod(job, r, phase(corev1.PodFailed)))
	}
	s := splitPods(job, pods)
	for name, got := range map[string][]*corev1.Pod{"ranks": s.ranks(), "finished": s.finished()} {
		for i, p := range got {
			if want := podName(job, int32(i)); p.Name != want {
				t.Fatalf("%s[%d] = %s, want %s", name, i, p.Name, want)
			}
		}
	}
}
