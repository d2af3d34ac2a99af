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

package e2e

import (
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// watchdog sets a progress deadline of seconds, reports every second, and a short
// grace period: a hung process does not answer SIGTERM, and the next attempt's pods
// wait until the old ones are gone.
func watchdog(job *trainingv1alpha1.ESPOJob, seconds int64) {
	job.Spec.RunPolicy.ProgressDeadlineSeconds = ptr.To(seconds)
	job.Spec.Trainer.StatusInterval = &metav1.Duration{Duration: time.Second}
	job.Spec.Trainer.TerminationGracePeriodSeconds = ptr.To(int64(2))
}

// A trainer that stops making progress (here stopped with SIGSTOP after a checkpoint,
// as one wedged on I/O would be, its in-process workers with it) is caught by the
// controller's watchdog: the gang restarts with reason ProgressDeadlineExceeded,
// naming the last progress, and the job resumes from its checkpoint and succeeds.
// Before the hang and after the resume the job moves, slowly or not, and is never
// restarted: exactly one restart.
func TestAWedgedTrainerIsRestartedByTheWatchdogAndResumes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-wedged-trainer")
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	const name = "wedged"
	createEdited(t, ns, "job-checkpoint.yaml", name, func(job *trainingv1alpha1.ESPOJob) { watchdog(job, 15) })
	pod := runningPods(t, ns, name, 1)[0]
	checkpoint := waitForCheckpoint(t, ns, name)

	pid := containerPID(&pod, controllers.ContainerTrainer)
	g.Expect(pid).To(BeNumerically(">", 0))
	g.Expect(syscall.Kill(-pid, syscall.SIGSTOP)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRestarting)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(trainingv1alpha1.ReasonProgressDeadlineExceeded))
		g.Expect(c.Message).To(MatchRegexp(`^restart 1 of at most 3 in 10s after no progress for (\d+m)?\d+s ` +
			`\(progressDeadlineSeconds 15\): the trainer last reported at \S+, at step \d+ of \d+ \(stage \w+, epoch \d+\)$`))
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	finishesResumed(t, &pod, checkpoint, 1)
}

// stopRank1Worker waits until the job's rank 1 pod is another than those of skip (by
// UID), running, and its trainer has taken a step in this attempt (a step line in the
// log of the rank 0 pod of the same attempt), then stops rank 1's worker with SIGSTOP,
// as a worker stuck in a collective or on a device would be, and returns the pod's UID.
func stopRank1Worker(t *testing.T, ns, name string, skip ...types.UID) types.UID {
	t.Helper()
	g := NewWithT(t)
	var rank1 corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := jobPods(g, ns, name)
		g.Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			g.Expect(skip).NotTo(ContainElement(p.UID), "pod %s is of an earlier attempt", p.Name)
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			if podRank(p) == 1 {
				rank1 = p
			}
		}
		g.Expect(logLines(g, ns, name+"-trainer-0", controllers.ContainerTrainer, "step")).NotTo(BeEmpty())
		g.Expect(containerPID(&rank1, controllers.ContainerWorker)).To(BeNumerically(">", 0))
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	g.Expect(syscall.Kill(-containerPID(&rank1, controllers.ContainerWorker), syscall.SIGSTOP)).To(Succeed())
	return rank1.UID
}

// twoPodJob creates a job of two trainer pods, rank 0's trainer driving rank 1's
// worker over the pod network, with a progress deadline of 12s (each worker call
// bounded by 6s) and a checkpoint every 5 steps, changed further by edit.
func twoPodJob(t *testing.T, ns, name string, edit func(*trainingv1alpha1.ESPOJob)) {
	apply(NewWithT(t), ns, testdata("checkpoint-claim.yaml"))
	createEdited(t, ns, "job-two-replicas-checkpoint.yaml", name, func(job *trainingv1alpha1.ESPOJob) {
		watchdog(job, 12)
		job.Spec.Checkpoint.PersistentVolumeClaim.Path = name
		job.Spec.Checkpoint.EverySteps = 5
		edit(job)
	})
}

// hungCall is what the trainer says of a call to a hung worker.
const hungCall = `worker \S+:50051: \w+ did not return ` +
	`within 6s \(half of spec\.runPolicy\.progressDeadlineSeconds\)`

// A worker that hangs once (rank 1's, stopped after a checkpoint) fails the trainer's
// call to it after half the progress deadline, naming the worker, the call and the
// wait; the gang restarts, resumes from the checkpoint and succeeds, with that one
// restart.
func TestAWorkerThatHangsOnceIsNamedAndTheJobResumes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-hung-worker-once")
	const name = "hang-once"
	twoPodJob(t, ns, name, func(*trainingv1alpha1.ESPOJob) {})
	checkpoint := waitForCheckpoint(t, ns, name)
	stopRank1Worker(t, ns, name)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRestarting)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(trainingv1alpha1.ReasonPodFailed))
		g.Expect(c.Message).To(MatchRegexp(`^restart 1 of at most 3 in 10s after pod hang-once-trainer-0, container trainer: ` +
			`exit code \d+ .*` + hungCall))
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	g.Expect(waitForSucceeded(t, ns, name).Status.Restarts).To(Equal(int32(1)))
	g.Expect(resumedAtStep(g, ns, name)).To(BeNumerically(">=", checkpoint))
}

// A worker that hangs in every attempt fails the job once its backoff is spent, with
// the trainer's words for the hung call.
func TestAWorkerThatAlwaysHangsFailsTheJobNamingTheCall(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-hung-worker")
	const name = "hang-always"
	twoPodJob(t, ns, name, func(job *trainingv1alpha1.ESPOJob) { job.Spec.RunPolicy.BackoffLimit = ptr.To(int32(1)) })
	first := stopRank1Worker(t, ns, name)
	stopRank1Worker(t, ns, name, first)
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionFailed)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(trainingv1alpha1.ReasonBackoffLimitExceeded))
		g.Expect(c.Message).To(MatchRegexp(hungCall + `.*; the job was restarted 1 times \(backoffLimit 1\)$`))
	}).WithTimeout(jobTimeout).WithPolling(poll).Should(Succeed())
}
