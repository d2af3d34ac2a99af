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

package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

var installGangCRDs sync.Once

// gangCRDs installs the cut-down PodGroup CRDs of scheduler-plugins and Volcano
// (test/testdata/gang-crds) into the test control plane, once.
func gangCRDs(t *testing.T) {
	t.Helper()
	var err error
	installGangCRDs.Do(func() {
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(env.RepoRoot, "test", "testdata", "gang-crds")}, ErrorIfPathMissing: true,
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// podGroup is a function for Eventually: the job's PodGroup of kind gvk, or nil.
func podGroup(g Gomega, job *trainingv1alpha1.ESPOJob, gvk schema.GroupVersionKind) func() *unstructured.Unstructured {
	return func() *unstructured.Unstructured {
		pg := &unstructured.Unstructured{}
		pg.SetGroupVersionKind(gvk)
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: job.Namespace, Name: job.Name + "-trainer"}, pg)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		if err != nil {
			return nil
		}
		return pg
	}
}

// gangTestResources are the worker container's resources of the gang test jobs.
var gangTestResources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
	corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
}}

// TestGangPodGroupsFollowTheSpec: under the coscheduling and volcano policies the job
// gets a PodGroup it controls, with minMember and minResources for its pods, its pods
// name the group, a PodGroup in line is not written again, and a resume after the
// gang grew recreates the PodGroup from the new spec (kuberay#5205).
func TestGangPodGroupsFollowTheSpec(t *testing.T) {
	gangCRDs(t)
	cases := []struct {
		policy trainingv1alpha1.GangPolicy
		queue  string
		gvk    schema.GroupVersionKind
		member func(*corev1.Pod) string
	}{
		{trainingv1alpha1.GangCoscheduling, "", schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
			func(p *corev1.Pod) string { return p.Labels[controllers.LabelCoschedulingPodGroup] }},
		{trainingv1alpha1.GangVolcano, "gpu", schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"},
			func(p *corev1.Pod) string { return p.Annotations[controllers.AnnotationVolcanoGroupName] }},
	}
	for _, c := range cases {
		t.Run(string(c.policy), func(t *testing.T) {
			g, ns, writes := NewWithT(t), newNamespace(t), new(atomic.Int64)
			startManager(t, ns, writes)
			job := create(g, builders.MakeESPOJob("gang", ns).Replicas(2).Resources(gangTestResources).Gang(c.policy, c.queue).Obj())

			g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2), func() string { return fmt.Sprint(getJob(g, job).Status.Conditions) })
			pg := podGroup(g, job, c.gvk)()
			g.Expect(pg).NotTo(BeNil())
			g.Expect(metav1.IsControlledBy(pg, getJob(g, job))).To(BeTrue(), "owners %v", pg.GetOwnerReferences())
			g.Expect(pg.Object["spec"]).To(HaveKeyWithValue("minMember", BeEquivalentTo(2)))
			g.Expect(pg.Object["spec"]).To(HaveKeyWithValue("minResources", map[string]any{"cpu": "500m", "memory": "1Gi"}))
			if c.queue != "" {
				g.Expect(pg.Object["spec"]).To(HaveKeyWithValue("queue", c.queue))
			}
			for _, p := range pods(g, job) {
				g.Expect(c.member(&p)).To(Equal("gang-trainer"), "pod %s", p.Name)
				g.Expect(p.Labels[controllers.LabelPodTemplateHash]).To(Equal(pg.GetLabels()[controllers.LabelPodTemplateHash]))
			}

			// In line: a reconcile (a pod changed) writes nothing.
			runAll(g, job)
			g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
			quiet(g, job)
			before := writes.Load()
			touchPod(g, &pods(g, job)[0])
			g.Consistently(writes.Load, quietPeriod, poll).Should(Equal(before), "a reconcile wrote to a PodGroup in line")

			// Changed by someone else: put back.
			pg.Object["spec"].(map[string]any)["minMember"] = int64(1)
			g.Expect(env.Client.Update(context.Background(), pg)).To(Succeed())
			touchPod(g, &pods(g, job)[0])
			g.Eventually(func() any { return podGroup(g, job, c.gvk)().Object["spec"].(map[string]any)["minMember"] }, reconcileTimeout, poll).
				Should(BeEquivalentTo(2))

			// Suspend, grow the gang to three, resume: a PodGroup of the new spec.
			changeGangJob(g, job, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.Suspend = true })
			g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(BeZero())
			finishDeletions(g, ns)
			changeGangJob(g, job, func(j *trainingv1alpha1.ESPOJob) { j.Spec.Trainer.Replicas = 3 })
			changeGangJob(g, job, func(j *trainingv1alpha1.ESPOJob) { j.Spec.RunPolicy.Suspend = false })
			g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(3))
			recreated := podGroup(g, job, c.gvk)()
			g.Expect(recreated).NotTo(BeNil())
			g.Expect(recreated.GetUID()).NotTo(Equal(pg.GetUID()), "the PodGroup of the old spec was not recreated")
			g.Expect(recreated.Object["spec"]).To(HaveKeyWithValue("minMember", BeEquivalentTo(3)))
			g.Expect(recreated.Object["spec"]).To(HaveKeyWithValue("minResources", map[string]any{"cpu": "750m", "memory": "1536Mi"}))
			for _, p := range pods(g, job) {
				g.Expect(p.Labels[controllers.LabelPodTemplateHash]).To(Equal(recreated.GetLabels()[controllers.LabelPodTemplateHash]))
			}
		})
	}
}

// TestGangPolicyWithoutItsKindSaysWhatToInstall: the podGroup policy on a control
// plane that does not serve scheduling.k8s.io/v1beta1 PodGroups (GenericWorkload off,
// the default) leaves the job Created=False with PodGroupUnavailable and the fix, no
// pods, and no hot loop.
func TestGangPolicyWithoutItsKindSaysWhatToInstall(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("nogang", ns).Replicas(2).Gang(trainingv1alpha1.GangPodGroup, "").Obj())

	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).Should(And(
		Not(BeNil()), HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", trainingv1alpha1.ReasonPodGroupUnavailable),
		HaveField("Message", And(ContainSubstring("scheduling.k8s.io/v1beta1"), ContainSubstring("GenericWorkload"),
			ContainSubstring("spec.trainer.scheduling.gang to none")))))
	quiet(g, job)
	g.Expect(pods(g, job)).To(BeEmpty())
}

// changeGangJob changes the job's spec by change, retrying on conflicts.
func changeGangJob(g Gomega, job *trainingv1alpha1.ESPOJob, change func(*trainingv1alpha1.ESPOJob)) {
	g.Eventually(func() error {
		cur := getJob(g, job)
		change(cur)
		return env.Client.Update(context.Background(), cur)
	}, reconcileTimeout, poll).Should(Succeed())
}

// touchPod changes an annotation of the pod, which makes the controller reconcile its
// job.
func touchPod(g Gomega, p *corev1.Pod) {
	g.Eventually(func() error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, "test.espo.dev/touched", fmt.Sprint(time.Now().UnixNano()))
		return env.Client.Update(context.Background(), cur)
	}, reconcileTimeout, poll).Should(Succeed())
}
