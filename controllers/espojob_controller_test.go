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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// create creates the job and returns it as stored.
func create(g Gomega, job *trainingv1alpha1.ESPOJob) *trainingv1alpha1.ESPOJob {
	g.Expect(env.Client.Create(context.Background(), job)).To(Succeed())
	return job
}

// condition returns the job's condition of a type, or nil.
func condition(g Gomega, job *trainingv1alpha1.ESPOJob, typ string) func() *metav1.Condition {
	return func() *metav1.Condition { return meta.FindStatusCondition(getJob(g, job).Status.Conditions, typ) }
}

// trueWithReason matches a condition that is True with the reason.
func trueWithReason(reason string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", reason))
}

func TestCreatesEveryChildWithTheRightFields(t *testing.T) {
	ctx, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("children", ns).Replicas(2).
		PVCDataset("logs", "user-logs", "smartspot/train.jsonl", trainingv1alpha1.SplitTrain).
		Checkpoint("ckpt", "runs/children", 50).NodeSelector("pool", "cpu").Obj())

	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))
	created(g, job) // the companions the pods do not wait for are applied too
	owner := metav1.OwnerReference{APIVersion: trainingv1alpha1.GroupVersion.String(), Kind: "ESPOJob", Name: job.Name,
		UID: job.UID, Controller: new(true), BlockOwnerDeletion: new(true)}

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "children-config"}, cm)).To(Succeed())
	g.Expect(cm.OwnerReferences).To(ConsistOf(owner))
	rc := &trainingv1alpha1.RunConfig{}
	g.Expect(yaml.UnmarshalStrict([]byte(cm.Data[trainingv1alpha1.RunConfigKey]), rc)).To(Succeed())
	g.Expect(rc.Job).To(Equal(trainingv1alpha1.JobRef{Namespace: ns, Name: "children", UID: job.UID}))
	g.Expect(rc.Workers).To(Equal([]string{fmt.Sprintf("children-trainer-1.children.%s.svc:50051", ns)}))
	g.Expect(rc.CheckpointDir).To(Equal("/checkpoints/runs/children"))
	g.Expect(rc.DataRoot).To(Equal("/data"))
	g.Expect(rc.Spec.Algorithm.GroupSize).To(Equal(int32(5)), "defaults applied")

	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "children"}, svc)).To(Succeed())
	g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(svc.OwnerReferences).To(ConsistOf(owner))

	for _, o := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: controllers.TrainerIdentityName}, o)).To(Succeed())
		g.Expect(o.GetOwnerReferences()).To(BeEmpty(), "the trainer identity is the namespace's")
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(controllers.LabelManagedBy, controllers.ManagedByValue))
	}

	p0, p1 := pod(g, job, 0), pod(g, job, 1)
	for _, p := range []*corev1.Pod{p0, p1} {
		g.Expect(p.OwnerReferences).To(ConsistOf(owner))
		g.Expect(p.Spec.NodeSelector).To(Equal(map[string]string{"pool": "cpu"}))
		g.Expect(p.Spec.Subdomain).To(Equal("children"))
		g.Expect(p.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		g.Expect(p.Labels).To(HaveKeyWithValue(controllers.LabelRestartAttempt, "0"))
	}
	g.Expect(p0.Spec.Containers).To(HaveLen(1))
	g.Expect(p0.Spec.Containers[0].Command).To(Equal([]string{"espo", "trainer", "--config", "/etc/espo/run.yaml"}))
	g.Expect(p0.Spec.Containers[0].Image).To(Equal("espo:test"))
	g.Expect(p1.Spec.Containers[0].Command).To(Equal([]string{"espo", "worker", "--device", "cpu"}))
	g.Expect(p0.Spec.Volumes).To(ContainElement(HaveField("Name", "checkpoints")))
	g.Expect(p1.Spec.Volumes).NotTo(ContainElement(HaveField("Name", "checkpoints")))

	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonChildrenCreated))
	st := getJob(g, job).Status
	g.Expect(st.Phase).To(Equal(trainingv1alpha1.PhasePending))
	g.Expect(st.Active).To(Equal(int32(2)))
	g.Expect(st.ObservedGeneration).To(Equal(getJob(g, job).Generation))
	g.Expect(st.Model).To(Equal("cpu policy (features)"), "status.model, the Model column")
}

func TestSucceedsWhenRankZeroExitsZero(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("succeeds", ns).Replicas(2).Obj())
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	g.Expect(getJob(g, job).Status.StartTime).NotTo(BeNil())

	reportOutcome(g, job, &trainingv1alpha1.TrainingStatus{Step: 10, Outcome: trainingv1alpha1.OutcomeTargetReached, Message: "recommendationAccuracy 0.41"})
	p0 := pod(g, job, 0)
	setPodStatus(g, p0, exited(p0, 0, ""))

	g.Eventually(condition(g, job, trainingv1alpha1.ConditionSucceeded), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonTargetReached))
	st := getJob(g, job).Status
	g.Expect(st.Phase).To(Equal(trainingv1alpha1.PhaseSucceeded))
	g.Expect(st.CompletionTime).NotTo(BeNil())
	g.Expect(st.Training.Step).To(Equal(int64(10)), "the trainer's report is kept")
	// The worker never exits by itself: the controller deletes it, and keeps rank 0.
	g.Eventually(func() []string {
		var names []string
		for _, p := range pods(g, job) {
			names = append(names, p.Name)
		}
		return names
	}, reconcileTimeout, poll).Should(Equal([]string{"succeeds-trainer-0"}))
}

func TestPodFailureRestartsTheGangThenSucceeds(t *testing.T) {
	g, ns, clk := setupOnClock(t)
	job := create(g, builders.MakeESPOJob("restarts", ns).Replicas(2).Obj())
	runAll(g, job)
	before := pod(g, job, 0).UID
	p1 := pod(g, job, 1)
	setPodStatus(g, p1, exited(p1, 137, "OOMKilled"))

	passBackoff(g, clk, job, 1, 10*time.Second)
	g.Eventually(podsOfAttempt(g, job, 1), reconcileTimeout, poll).Should(Equal(2))
	g.Expect(podsOfAttempt(g, job, 0)()).To(BeZero())
	g.Expect(pod(g, job, 0).UID).NotTo(Equal(before), "rank 0 was recreated too")
	st := getJob(g, job).Status
	g.Expect(st.Restarts).To(Equal(int32(1)))
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionRestarting), reconcileTimeout, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", trainingv1alpha1.ReasonRestarted),
		HaveField("Message", Equal("recreated the 2 trainer pods for restart 1 of at most 3 in 10s after "+
			"pod restarts-trainer-1, container worker: exit code 137 (Error): OOMKilled"))))

	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	p0 := pod(g, job, 0)
	setPodStatus(g, p0, exited(p0, 0, ""))
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseSucceeded))
	g.Expect(getJob(g, job).Status.Restarts).To(Equal(int32(1)))
	g.Eventually(func() []string { return eventReasons(g, job) }, reconcileTimeout, poll).Should(ContainElements(
		trainingv1alpha1.ReasonChildrenCreated, trainingv1alpha1.ReasonPodsRunning, trainingv1alpha1.ReasonPodFailed, trainingv1alpha1.ReasonRestarted, trainingv1alpha1.ReasonCompleted))
}

func TestDisruptionRestartsWithoutSpendingTheBackoffLimit(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("disrupted", ns).Replicas(2).BackoffLimit(0).Obj())
	runAll(g, job)
	p1 := pod(g, job, 1)
	evicted := exited(p1, 137, "")
	evicted.Conditions = append(evicted.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
		Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: "The node was low on resource: memory."})
	setPodStatus(g, p1, evicted)

	g.Eventually(podsOfAttempt(g, job, 1), reconcileTimeout, poll).Should(Equal(2))
	st := getJob(g, job).Status
	g.Expect(st.Restarts).To(Equal(int32(1)))
	g.Expect(st.Disruptions).To(Equal(int32(1)))
	g.Expect(meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionFailed)).To(BeNil())
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionRestarting), reconcileTimeout, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", trainingv1alpha1.ReasonRestarted),
		HaveField("Message", Equal("recreated the 2 trainer pods for pod disrupted-trainer-1 was disrupted "+
			"(DisruptionTarget: TerminationByKubelet: The node was low on resource: memory.); container worker: "+
			"exit code 137 (Error); restarting the gang, not counted against backoffLimit (disruption 1)"))))

	runAll(g, job)
	p1 = pod(g, job, 1)
	setPodStatus(g, p1, exited(p1, 1, "worker crashed"))
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionFailed), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonBackoffLimitExceeded))
	st = getJob(g, job).Status
	g.Expect(meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionFailed).Message).To(Equal(
		"pod disrupted-trainer-1, container worker: exit code 1 (Error): worker crashed; " +
			"the job was restarted 0 times after failures and 1 times after disruptions (backoffLimit 0)"))
	g.Expect(st.Restarts).To(Equal(int32(1)))
	g.Expect(st.Disruptions).To(Equal(int32(1)))
	g.Expect(st.Phase).To(Equal(trainingv1alpha1.PhaseFailed))
}

// eventReasons are the reasons of the events about the job.
func eventReasons(g Gomega, job *trainingv1alpha1.ESPOJob) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.UID == job.UID {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func TestBackoffLimitExhaustedFailsWithAClearReason(t *testing.T) {
	g, ns, clk := setupOnClock(t)
	job := create(g, builders.MakeESPOJob("backoff", ns).Replicas(2).BackoffLimit(1).Obj())
	for attempt := range 2 {
		g.Eventually(podsOfAttempt(g, job, attempt), reconcileTimeout, poll).Should(Equal(2))
		p0 := pod(g, job, 0)
		setPodStatus(g, p0, exited(p0, 2, "dataset smartspot: no episodes"))
		if attempt == 0 {
			passBackoff(g, clk, job, 1, 10*time.Second)
		}
	}
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionFailed), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonBackoffLimitExceeded))
	msg := meta.FindStatusCondition(getJob(g, job).Status.Conditions, trainingv1alpha1.ConditionFailed).Message
	g.Expect(msg).To(Equal("pod backoff-trainer-0, container trainer: exit code 2 (Error): dataset smartspot: no episodes; " +
		"the job was restarted 1 times (backoffLimit 1)"))
	g.Expect(getJob(g, job).Status.Phase).To(Equal(trainingv1alpha1.PhaseFailed))
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(1), "the running worker is deleted")
}

func TestNonFiniteLossFailsWithoutRestart(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("nan", ns).Obj())
	runAll(g, job)
	reportOutcome(g, job, &trainingv1alpha1.TrainingStatus{Outcome: trainingv1alpha1.OutcomeNonFiniteLoss, Message: "step 7: the loss is not finite"})
	p0 := pod(g, job, 0)
	setPodStatus(g, p0, exited(p0, 1, ""))
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionFailed), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonNonFiniteLoss))
	g.Expect(getJob(g, job).Status.Restarts).To(BeZero())
}

func TestActiveDeadlineFailsTheJob(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("deadline", ns).Replicas(2).ActiveDeadlineSeconds(1).Obj())
	runAll(g, job)
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionFailed), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonDeadlineExceeded))
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(BeZero(), "running pods are deleted")
}

func TestTTLDeletesTheFinishedJob(t *testing.T) {
	ctx, g, ns := setup(t)
	// The test's finalizer keeps the deleted job readable, so that the test sees
	// what the TTL deleted however late it looks.
	const hold = "test.espo.dev/hold"
	job := builders.MakeESPOJob("ttl", ns).TTLSecondsAfterFinished(1).Obj()
	job.Finalizers = []string{hold}
	create(g, job)
	runAll(g, job)
	p0 := pod(g, job, 0)
	setPodStatus(g, p0, exited(p0, 0, ""))
	g.Eventually(func() *metav1.Time { return getJob(g, job).DeletionTimestamp }, reconcileTimeout, poll).ShouldNot(BeNil())
	deleted := getJob(g, job)
	g.Expect(deleted.Status.Phase).To(Equal(trainingv1alpha1.PhaseSucceeded))
	g.Expect(deleted.Status.CompletionTime).NotTo(BeNil())
	ttl := time.Duration(*deleted.Spec.RunPolicy.TTLSecondsAfterFinished) * time.Second
	g.Expect(deleted.DeletionTimestamp.Time).NotTo(BeTemporally("<", deleted.Status.CompletionTime.Add(ttl)),
		"deleted no sooner than ttlSecondsAfterFinished after completionTime")
	// A merge patch, not an update: a status write of the controller meanwhile
	// cannot make it conflict.
	release := client.MergeFrom(deleted.DeepCopy())
	deleted.Finalizers = nil
	g.Expect(env.Client.Patch(ctx, deleted, release)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(job), &trainingv1alpha1.ESPOJob{}))
	}, reconcileTimeout, poll).Should(BeTrue())
}

func TestSuspendAndResumeWithAChangedNodeSelector(t *testing.T) {
	ctx, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("suspend", ns).Replicas(2).Suspend(true).Obj())
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionSuspended), reconcileTimeout, poll).Should(trueWithReason(trainingv1alpha1.ReasonSuspended))
	g.Expect(getJob(g, job).Status.Phase).To(Equal(trainingv1alpha1.PhaseSuspended))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "suspend-config"}, &corev1.ConfigMap{})).To(Succeed())
	g.Consistently(func() int { return len(pods(g, job)) }, quietPeriod/2, poll).Should(BeZero())

	setSuspend := func(s bool, nodeSelector map[string]string) {
		g.Eventually(func() error {
			cur := getJob(g, job)
			cur.Spec.RunPolicy.Suspend = s
			if nodeSelector != nil {
				cur.Spec.Trainer.NodeSelector = nodeSelector
			}
			return env.Client.Update(ctx, cur)
		}, reconcileTimeout, poll).Should(Succeed())
	}
	setSuspend(false, nil)
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))

	setSuspend(true, map[string]string{"cloud.google.com/gke-nodepool": "a100"})
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(BeZero())
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseSuspended))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "suspend"}, &corev1.Service{})).To(Succeed())

	setSuspend(false, nil)
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))
	for _, p := range pods(g, job) {
		g.Expect(p.Spec.NodeSelector).To(Equal(map[string]string{"cloud.google.com/gke-nodepool": "a100"}))
	}
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionSuspended), reconcileTimeout, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", trainingv1alpha1.ReasonResumed)))
	g.Expect(getJob(g, job).Status.Restarts).To(BeZero(), "a resume is no restart")
}

// TestASuspendAndResumeTooQuickToObserveRecreatesThePods: the job is suspended with a
// new nodeSelector and resumed while the controller is down, so it never sees the
// suspended state (as with two updates inside one informer window); it finds running
// pods built from the old spec, and must recreate them, without counting a restart.
// Then the same two updates back to back with the controller up: whichever it sees,
// the pods end up with the newest nodeSelector.
func TestASuspendAndResumeTooQuickToObserveRecreatesThePods(t *testing.T) {
	ns := newNamespace(t)
	ctx, g := context.Background(), NewWithT(t)
	first := startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("quick", ns).Replicas(2).NodeSelector("pool", "cpu").Obj())
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	oldHash := pod(g, job, 0).Labels[controllers.LabelPodTemplateHash]
	g.Expect(oldHash).NotTo(BeEmpty())

	update := func(suspend bool, nodeSelector map[string]string) {
		g.Eventually(func() error { // a status write of the controller may come between
			cur := getJob(g, job)
			cur.Spec.RunPolicy.Suspend = suspend
			if nodeSelector != nil {
				cur.Spec.Trainer.NodeSelector = nodeSelector
			}
			return env.Client.Update(ctx, cur)
		}, reconcileTimeout, poll).Should(Succeed())
	}
	// allOn is a function for Eventually: whether the job has all its pods, each of
	// them on nodeSelector and of the first attempt.
	allOn := func(nodeSelector map[string]string) func() bool {
		return func() bool {
			ps := pods(g, job)
			for _, p := range ps {
				if !equality.Semantic.DeepEqual(p.Spec.NodeSelector, nodeSelector) || p.Labels[controllers.LabelRestartAttempt] != "0" {
					return false
				}
			}
			return len(ps) == 2
		}
	}

	first.stop()
	a100 := map[string]string{"cloud.google.com/gke-nodepool": "a100"}
	update(true, a100)
	update(false, nil)
	startManager(t, ns, nil)
	g.Eventually(allOn(a100), reconcileTimeout, poll).Should(BeTrue(), func() string { return describePods(g, job) })
	newHash := pod(g, job, 0).Labels[controllers.LabelPodTemplateHash]
	g.Expect(newHash).NotTo(BeElementOf("", oldHash))
	g.Expect(pod(g, job, 1).Labels).To(HaveKeyWithValue(controllers.LabelPodTemplateHash, newHash))
	g.Eventually(func() []string { return eventMessages(g, job, controllers.ReasonPodTemplateChanged) }, reconcileTimeout, poll).
		Should(ContainElement(ContainSubstring("pod template hash %s, now %s", oldHash, newHash)))
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	st := getJob(g, job).Status
	g.Expect(st.Restarts).To(BeZero(), "a changed spec is no failure")
	g.Expect(meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionRestarting)).To(BeNil())
	g.Expect(meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionSuspended)).To(BeNil(), "the suspension was never seen")

	h100 := map[string]string{"cloud.google.com/gke-nodepool": "h100"}
	update(true, h100)
	update(false, nil)
	g.Eventually(allOn(h100), reconcileTimeout, poll).Should(BeTrue(), func() string { return describePods(g, job) })
	g.Expect(getJob(g, job).Status.Restarts).To(BeZero())
}

// describePods is a line per pod of the job, for failure messages.
func describePods(g Gomega, job *trainingv1alpha1.ESPOJob) string {
	out := ""
	for _, p := range pods(g, job) {
		out += fmt.Sprintf("%s attempt=%s hash=%s nodeSelector=%v\n", p.Name, p.Labels[controllers.LabelRestartAttempt],
			p.Labels[controllers.LabelPodTemplateHash], p.Spec.NodeSelector)
	}
	return out
}

// eventMessages are the messages of the events about the job with the reason.
func eventMessages(g Gomega, job *trainingv1alpha1.ESPOJob, reason string) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	var msgs []string
	for _, e := range list.Items {
		if e.Regarding.UID == job.UID && e.Reason == reason {
			msgs = append(msgs, e.Note)
		}
	}
	return msgs
}

func TestDeletingTheJobDeletesItsChildren(t *testing.T) {
	// envtest runs no garbage collector: what deletes the children is their owner
	// reference to the job, so check that every child carries it.
	ctx, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("cleanup", ns).Replicas(2).Obj())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))
	created(g, job)
	lists := []client.ObjectList{&corev1.PodList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}}
	children := 0
	for _, l := range lists {
		g.Expect(env.Client.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{controllers.LabelJobName: job.Name})).To(Succeed())
		g.Expect(meta.EachListItem(l, func(o runtime.Object) error {
			children++
			ref := metav1.GetControllerOf(o.(client.Object))
			g.Expect(ref).NotTo(BeNil())
			g.Expect(ref.UID).To(Equal(job.UID))
			g.Expect(*ref.BlockOwnerDeletion).To(BeTrue())
			return nil
		})).To(Succeed())
	}
	g.Expect(children).To(Equal(4))
	g.Expect(env.Client.Delete(ctx, job)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(job), &trainingv1alpha1.ESPOJob{}))
	}, reconcileTimeout, poll).Should(BeTrue())
}

func TestControllerRestartCreatesNoDuplicatePods(t *testing.T) {
	ns := newNamespace(t)
	g := NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	first := startManagerOnClock(t, ns, clk)
	job := create(g, builders.MakeESPOJob("restart", ns).Replicas(3).Obj())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(3))
	p2 := pod(g, job, 2)
	setPodStatus(g, p2, exited(p2, 1, "worker crashed"))
	g.Eventually(func() int32 { return getJob(g, job).Status.Restarts }, reconcileTimeout, poll).Should(Equal(int32(1)))
	first.stop() // in the middle of the gang restart, perhaps
	finishDeletions(g, ns)
	clk.Step(10 * time.Second) // the restart's backoff is over when the next controller starts

	uids := func() map[string]string {
		m := map[string]string{}
		for _, p := range pods(g, job) {
			m[p.Name] = string(p.UID)
		}
		return m
	}
	startManagerOnClock(t, ns, clk)
	// The second controller deletes whatever old pod the first had not deleted yet;
	// as a kubelet would, the test lets each deleted pod go.
	attemptOne := func(g Gomega) int {
		finishDeletions(g, ns)
		return podsOfAttempt(g, job, 1)()
	}
	g.Eventually(attemptOne, reconcileTimeout, poll).Should(Equal(3), func() string {
		var l corev1.PodList
		_ = env.Client.List(context.Background(), &l, client.InNamespace(ns))
		out := ""
		for _, p := range l.Items {
			out += fmt.Sprintf("%s attempt=%s deleting=%v phase=%s\n", p.Name, p.Labels[controllers.LabelRestartAttempt], p.DeletionTimestamp, p.Status.Phase)
		}
		return out + fmt.Sprintf("%+v", getJob(g, job).Status)
	})
	settled := uids()
	g.Consistently(uids, quietPeriod, poll).Should(Equal(settled))
	g.Expect(getJob(g, job).Status.Restarts).To(Equal(int32(1)), "the failure was counted once")
}

func TestTrainerReportSurvivesControllerStatusWrites(t *testing.T) {
	ctx := context.Background()
	g, ns, clk := setupOnClock(t)
	job := create(g, builders.MakeESPOJob("report", ns).Replicas(2).Obj())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))
	created(g, job) // the trainer's RoleBinding is applied alongside the pods
	report := &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Epoch: 2, Step: 40, MeanStepReward: "0.125"}
	reportOutcome(g, job, report)

	// The controller writes the status several times: running, then a restart.
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	p1 := pod(g, job, 1)
	setPodStatus(g, p1, exited(p1, 1, ""))
	passBackoff(g, clk, job, 1, 10*time.Second)
	g.Eventually(podsOfAttempt(g, job, 1), reconcileTimeout, poll).Should(Equal(2))

	got := getJob(g, job)
	g.Expect(got.Status.Training).To(Equal(report))
	g.Expect(got.Status.Restarts).To(Equal(int32(1)))
	managers := map[string]bool{}
	for _, f := range got.ManagedFields {
		if f.Subresource == "status" {
			managers[f.Manager] = true
		}
	}
	g.Expect(managers).To(HaveKey(trainingv1alpha1.TrainerFieldManager))
	g.Expect(managers).To(HaveKey(controllers.FieldManager))

	// The trainer's identity can write its own job's status and no other job's.
	other := create(g, builders.MakeESPOJob("other", ns).Suspend(true).Obj())
	err := applyTraining(trainerClient(g, job), other, report)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(trainerClient(g, job).List(ctx, &corev1.PodList{}, client.InNamespace(ns))).NotTo(Succeed())
}

func TestBadInputGivesAReadableConditionWithoutAHotLoop(t *testing.T) {
	_, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("badinput", ns).Replicas(2).
		PVCDataset("logs", "missing-claim", "", trainingv1alpha1.SplitTrain).Image("registry.invalid/espo:nope").Obj())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))

	// The scheduler's verdict on rank 0, which mounts the missing claim.
	p0 := pod(g, job, 0)
	setPodStatus(g, p0, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: `0/3 nodes are available: persistentvolumeclaim "missing-claim" not found.`,
	}}})
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionRunning), reconcileTimeout, poll).Should(And(
		HaveField("Reason", trainingv1alpha1.ReasonVolumeUnavailable),
		HaveField("Message", ContainSubstring(`badinput-trainer-0: a volume is unavailable: 0/3 nodes are available: persistentvolumeclaim "missing-claim" not found`))))
	quiet(g, job)

	// Kubelet's verdict on the image, once rank 0 is scheduled.
	setPodStatus(g, p0, corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "trainer", Image: "registry.invalid/espo:nope",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.invalid/espo:nope"`,
		}},
	}}})
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionRunning), reconcileTimeout, poll).Should(And(
		HaveField("Reason", trainingv1alpha1.ReasonImagePullFailed),
		HaveField("Message", ContainSubstring(`badinput-trainer-0, container trainer: cannot pull image "registry.invalid/espo:nope"`))))
	g.Expect(getJob(g, job).Status.Phase).To(Equal(trainingv1alpha1.PhasePending))
	quiet(g, job)
}

// TestPodsWaitForTheirServiceAccount: a job whose trainer runs as a service account
// that does not exist creates no pods (a cluster's ServiceAccount admission plugin
// would refuse them) and names the field in its Running condition; once the account
// exists the pods are created.
func TestPodsWaitForTheirServiceAccount(t *testing.T) {
	ctx, g, ns := setup(t)
	job := create(g, builders.MakeESPOJob("nosa", ns).Replicas(2).ServiceAccountName("runner").Obj())
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionRunning), reconcileTimeout, poll).Should(And(Not(BeNil()),
		HaveField("Reason", trainingv1alpha1.ReasonPodsPending),
		HaveField("Message", HavePrefix(`spec.trainer.serviceAccountName: ServiceAccount "runner" does not exist in namespace `+ns))))
	g.Expect(pods(g, job)).To(BeEmpty())

	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: ns}})).To(Succeed())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(2))
	g.Expect(pod(g, job, 0).Spec.ServiceAccountName).To(Equal("runner"))
}

// finishDeletions removes the pods that are being deleted, as kubelet (or the pod
// garbage collector) would: a delete request cut short by the stopping controller can
// leave a pod with a deletion timestamp, which envtest never completes.
func finishDeletions(g Gomega, ns string) {
	var l corev1.PodList
	g.Expect(env.Client.List(context.Background(), &l, client.InNamespace(ns))).To(Succeed())
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			g.Expect(client.IgnoreNotFound(env.Client.Delete(context.Background(), &p, client.GracePeriodSeconds(0)))).To(Succeed())
		}
	}
}

// quiet checks that a settled job is left alone: no status write for quietPeriod.
func quiet(g Gomega, job *trainingv1alpha1.ESPOJob) {
	rv := getJob(g, job).ResourceVersion
	g.Consistently(func() string { return getJob(g, job).ResourceVersion }, quietPeriod, poll).Should(Equal(rv))
}
