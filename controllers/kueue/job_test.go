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

package kueue

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kueue/pkg/podset"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

func queued() *Job {
	job := builders.MakeESPOJob("demo", "ns").Label(QueueLabel, "lq").Suspend(true).Replicas(3).NodeSelector("disk", "ssd").PodLabel("team", "ml").Obj()
	return &Job{ESPOJob: job}
}

// TestRunWithPodSetsInfoThenRestore: admission unsuspends the job, marks it admitted
// (Admission lets it have pods), and adds the flavor's
// node labels and tolerations and the check's labels to spec.trainer; a second
// suspension removes the mark and restores spec.trainer as it was.
func TestRunWithPodSetsInfoThenRestore(t *testing.T) {
	j := queued()
	before := j.Spec.Trainer.DeepCopy()
	ps, err := j.PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	original := podset.FromPodSet(&ps[0]) // what Kueue keeps in the Workload to restore
	admitted := podset.PodSetInfo{Name: PodSetName, Count: 3,
		NodeSelector: map[string]string{"pool": "a100"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		Labels:       map[string]string{"check": "ok"}}
	if err := j.RunWithPodSetsInfo(context.Background(), []podset.PodSetInfo{admitted}); err != nil {
		t.Fatal(err)
	}
	if admitted, why := Admission(j.ESPOJob); !admitted || j.IsSuspended() {
		t.Errorf("the admitted job: suspended %v, may have pods %v (%s)", j.IsSuspended(), admitted, why)
	}
	tr := j.Spec.Trainer
	if tr.NodeSelector["pool"] != "a100" || tr.NodeSelector["disk"] != "ssd" || len(tr.Tolerations) != 1 || tr.Labels["check"] != "ok" || tr.Labels["team"] != "ml" {
		t.Errorf("spec.trainer after admission: nodeSelector %v tolerations %v labels %v", tr.NodeSelector, tr.Tolerations, tr.Labels)
	}

	j.Suspend()
	if !j.RestorePodSetsInfo([]podset.PodSetInfo{original}) {
		t.Error("restoring reported no change")
	}
	if admitted, _ := Admission(j.ESPOJob); admitted {
		t.Error("the suspended job of a queue is still marked admitted")
	}
	if d := cmp.Diff(before, &j.Spec.Trainer); d != "" {
		t.Errorf("spec.trainer after restoring (-before +after):\n%s", d)
	}
}

// TestRunWithPodSetsInfoRefusesConflicts: a flavor that pins a node label the job
// pins to another value is an error, not an overwrite.
func TestRunWithPodSetsInfoRefusesConflicts(t *testing.T) {
	j := queued()
	err := j.RunWithPodSetsInfo(context.Background(), []podset.PodSetInfo{{Name: PodSetName, NodeSelector: map[string]string{"disk": "hdd"}}})
	if err == nil {
		t.Error("a conflicting node selector was accepted")
	}
	if err := j.RunWithPodSetsInfo(context.Background(), nil); err == nil {
		t.Error("admission info without the pod set was accepted")
	}
}

// TestPodSetIsTheTrainerPods: one pod set of spec.trainer.replicas pods, with the
// controller's pod template (its requests, its node selector).
func TestPodSetIsTheTrainerPods(t *testing.T) {
	j := queued()
	j.Spec.Trainer.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	ps, err := j.PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Name != PodSetName || ps[0].Count != 3 {
		t.Fatalf("pod sets %+v", ps)
	}
	spec := ps[0].Template.Spec
	if spec.NodeSelector["disk"] != "ssd" || spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("template: nodeSelector %v, first container's requests %v", spec.NodeSelector, spec.Containers[0].Resources.Requests)
	}
}

// TestFinishedAndPodsReady read the job's conditions and pod counts.
func TestFinishedAndPodsReady(t *testing.T) {
	j := queued()
	if _, _, finished := j.Finished(context.Background()); finished {
		t.Error("a new job is finished")
	}
	j.Status.Ready = 2
	if j.PodsReady(context.Background()) {
		t.Error("2 of 3 pods ready counts as ready")
	}
	j.Status.Ready = 3
	if !j.PodsReady(context.Background()) {
		t.Error("3 of 3 pods ready does not count as ready")
	}
	j.Status.Conditions = []metav1.Condition{{Type: trainingv1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Message: "BackoffLimitExceeded"}}
	if msg, success, finished := j.Finished(context.Background()); !finished || success || msg != "BackoffLimitExceeded" {
		t.Errorf("a failed job: finished %v success %v message %q", finished, success, msg)
	}
}

// TestAdmissionHoldsOnlyJobsOfAQueue: a job without the queue label is not Kueue's
// and may have pods; one with it may not until admitted.
func TestAdmissionHoldsOnlyJobsOfAQueue(t *testing.T) {
	if admitted, _ := Admission(builders.MakeESPOJob("free", "ns").Obj()); !admitted {
		t.Error("a job without a queue is held")
	}
	if admitted, why := Admission(queued().ESPOJob); admitted || !strings.Contains(why, QueueLabel) {
		t.Errorf("a job of a queue never admitted: admitted %v, why %q", admitted, why)
	}
}
