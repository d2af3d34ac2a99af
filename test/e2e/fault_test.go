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
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// faultJobs is how many jobs TestFaultsUnderLoad runs at once.
const faultJobs = 20

// TestFaultsUnderLoad runs 20 checkpointing copies of job-load.yaml at once and, while
// they train, kills one trainer's process after a checkpoint, kills the manager (and
// starts it again once the trainers have gone on without it) and restarts the API
// server. Every job succeeds; the killed one restarts once and resumes at or after its
// last reported checkpoint, the others never restart; no replica ever had two pods
// alive at once; the accepted ESPOJob status writes stay within what statusInterval
// allows.
//
// It is not parallel: it kills the manager and stops the API server under every
// test's feet, and counts the API server's writes, which carry no namespace.
func TestFaultsUnderLoad(t *testing.T) {
	g := NewWithT(t)
	t.Cleanup(func() { _ = manager.start() }) // if the test stops while the manager is down
	ns := newNamespace(t, "e2e-faults")
	pods := watchPods(t, ns)
	meter, err := startRequestMeter()
	g.Expect(err).NotTo(HaveOccurred())
	began := time.Now()
	apply(g, ns, testdata("checkpoint-claim.yaml"))
	names := createLoad(t, ns, faultJobs, func(job *trainingv1alpha1.ESPOJob) {
		job.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{
			PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "e2e-checkpoints", Path: job.Name},
			EverySteps:            5,
			Keep:                  2,
		}
	})
	waitForAll(t, ns, names, trainingStarts, func(g Gomega, job *trainingv1alpha1.ESPOJob) {
		g.Expect(training(job).Step).To(BeNumerically(">", 0), "job %s trains", job.Name)
	})

	killed := names[0]
	pod := runningPods(t, ns, killed, 1)[0]
	checkpoint := waitForCheckpoint(t, ns, killed)
	pid := containerPID(&pod, controllers.ContainerTrainer)
	g.Expect(pid).To(BeNumerically(">", 0))
	g.Expect(syscall.Kill(-pid, syscall.SIGKILL)).To(Succeed())

	manager.kill()
	stepsWithoutManager := totalSteps(g, ns)
	g.Eventually(func(g Gomega) int64 { return totalSteps(g, ns) }).WithTimeout(trainingStarts).WithPolling(poll).
		Should(BeNumerically(">", stepsWithoutManager), "the trainers go on and report without the manager")
	g.Expect(manager.start()).To(Succeed())

	g.Expect(meter.restart(controlPlane.RestartAPIServer)).To(Succeed())

	finishesResumed(t, &pod, checkpoint, 1)
	waitForAllSucceeded(t, ns, names, jobTimeout)
	wall := time.Since(began)
	counts, err := meter.read()
	g.Expect(err).NotTo(HaveOccurred())

	jobs := listJobs(g, ns)
	for _, name := range names {
		restarts := 0
		if name == killed {
			restarts = 1
		}
		g.Expect(jobs[name].Status.Restarts).To(BeEquivalentTo(restarts), "job %s", name)
		g.Expect(jobs[name].Status.CompletionTime).NotTo(BeNil(), "job %s", name)
		g.Eventually(func() map[string][]string { return pods.podsSeen(name) }).WithTimeout(podsChange).WithPolling(poll).
			Should(Equal(podsOfAttempts(restarts)), "job %s: one pod per restart attempt", name)
	}
	g.Expect(pods.duplicatesSeen()).To(BeEmpty())

	bound := statusWriteBound(jobs)
	t.Logf("%d jobs with faults in %s: %.0f ESPOJob status writes (%.0f conflicts; at most %.0f allowed), %.0f other writes, %.0f requests (%.1f/s); %s",
		len(names), wall.Round(time.Second), counts.statusWrites(), counts.statusConflicts(), bound, counts.otherWrites(), counts.requests(),
		counts.requests()/wall.Seconds(), counts.topWrites(6))
	g.Expect(counts.statusWrites()-counts.statusConflicts()).To(BeNumerically("<=", bound),
		"accepted ESPOJob status writes over %s", wall.Round(time.Second))
}

// totalSteps is the sum of the namespace's jobs' reported steps.
func totalSteps(g Gomega, ns string) int64 {
	var sum int64
	for _, job := range listJobs(g, ns) {
		sum += training(job).Step
	}
	return sum
}

// podsOfAttempts is what podWatch.podsSeen holds for a one-replica job restarted
// restarts times: rank 0 had one pod for each attempt.
func podsOfAttempts(restarts int) map[string][]string {
	var attempts []string
	for a := range restarts + 1 {
		attempts = append(attempts, strconv.Itoa(a))
	}
	return map[string][]string{"0": attempts}
}

// controllerStatusWritesPerRun bounds the controller's accepted status writes for one
// run of a one-pod job: it writes only when the status it computes changed, at the
// job's transitions (children created, the pod pending, running, ready, finished, the
// job finished: six), and up to four more for a transition it sees in two steps or
// for a restart of its own or of the API server. Its writes refused as conflicts
// (guarded by a resourceVersion the trainer's report moved) change nothing, wake no
// watcher and are not counted: TestFaultsUnderLoad logs them.
const controllerStatusWritesPerRun = 10

// statusWriteBound is the most accepted ESPOJob status writes the jobs may have
// caused, each from its creation to its completion. Each run of a job's trainer (one,
// and one more per restart) reports (see trainer/throttle.go):
//   - a training step only when statusInterval has passed since its last report: all
//     its runs together at most (completion - creation) / statusInterval times,
//   - the first step of each epoch (spec.algorithm.sftEpochs + epochs of them) and the
//     validation evaluation after each, at once,
//   - the test evaluation and the end;
//
// and the controller writes at most controllerStatusWritesPerRun per run. Reporting
// every step instead would write status.training.totalSteps times per run (48 for
// job-load.yaml, against about 11 + 8 + 10 allowed for a run of 110 s).
func statusWriteBound(jobs map[string]*trainingv1alpha1.ESPOJob) float64 {
	var bound float64
	for _, job := range jobs {
		lived := job.Status.CompletionTime.Sub(job.CreationTimestamp.Time)
		epochs := float64(*job.Spec.Algorithm.SFTEpochs + job.Spec.Algorithm.Epochs)
		runs := float64(1 + job.Status.Restarts)
		bound += lived.Seconds()/job.Spec.Trainer.StatusInterval.Seconds() + runs*(2*epochs+2+controllerStatusWritesPerRun)
	}
	return bound
}
