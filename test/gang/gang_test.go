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

package gang_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

const (
	// scheduleTimeout bounds how long the scheduler takes to place a gang.
	scheduleTimeout = time.Minute
	// settlePeriod is how long the placement must then stay as it is.
	settlePeriod = 5 * time.Second
	poll         = 100 * time.Millisecond
)

// oneCPU is each trainer pod's request: a node of three CPUs has room for three pods.
var oneCPU = corev1.ResourceRequirements{Requests: corev1.ResourceList{
	corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
}}

// TestGangsAreScheduledWholeOrNotAtAll: two jobs of two trainer pods each, with the
// podGroup gang policy, on a node with room for three pods. Without gangs the
// scheduler could place one pod of each job and starve both; with them, one job's
// two pods are placed and the other's none.
func TestGangsAreScheduledWholeOrNotAtAll(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "espo-gang-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	env.StartManager(t, env.Config, ns.Name, nil)
	addNode(g, "gang-node", "3")
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(schedulerLog)
			t.Logf("kube-scheduler's log:\n%s", raw)
		}
	})

	jobs := []*trainingv1alpha1.ESPOJob{
		builders.MakeESPOJob("gang-a", ns.Name).Replicas(2).Resources(oneCPU).Gang(trainingv1alpha1.GangPodGroup, "").Obj(),
		builders.MakeESPOJob("gang-b", ns.Name).Replicas(2).Resources(oneCPU).Gang(trainingv1alpha1.GangPodGroup, "").Obj(),
	}
	for _, j := range jobs {
		g.Expect(env.Client.Create(ctx, j)).To(Succeed())
	}
	placed := func() []int { return []int{boundPods(g, jobs[0]), boundPods(g, jobs[1])} }
	g.Eventually(placed, scheduleTimeout, poll).Should(Or(Equal([]int{2, 0}), Equal([]int{0, 2})))
	g.Consistently(placed, settlePeriod, poll).Should(Or(Equal([]int{2, 0}), Equal([]int{0, 2})))
	for _, j := range jobs {
		pods := podsOf(g, j)
		g.Expect(pods).To(HaveLen(2), "job %s", j.Name)
		for _, p := range pods {
			g.Expect(p.Spec.SchedulingGroup).To(HaveField("PodGroupName", HaveValue(Equal(j.Name+"-trainer"))), "pod %s", p.Name)
		}
	}
}

// addNode creates a schedulable node with cpus CPUs, 16Gi of memory and room for 110
// pods, as a kubelet would register it and the node controller would mark it ready.
func addNode(g Gomega, name, cpus string) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpus), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	g.Expect(env.Client.Create(context.Background(), node)).To(Succeed())
	node.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	g.Expect(env.Client.Status().Update(context.Background(), node)).To(Succeed())
	// The API server taints a new node not-ready; its node controller, absent here,
	// would lift the taint once the node reports Ready.
	node.Spec.Taints = nil
	g.Expect(env.Client.Update(context.Background(), node)).To(Succeed())
}

// podsOf is the job's trainer pods.
func podsOf(g Gomega, job *trainingv1alpha1.ESPOJob) []corev1.Pod {
	var list corev1.PodList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace),
		client.MatchingLabels{controllers.LabelJobName: job.Name})).To(Succeed())
	return list.Items
}

// boundPods is how many of the job's trainer pods the scheduler bound to a node.
func boundPods(g Gomega, job *trainingv1alpha1.ESPOJob) int {
	n := 0
	for _, p := range podsOf(g, job) {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}
