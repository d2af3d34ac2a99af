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
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The failure policy: a trainer pod of the current attempt that terminated without
// finishing the job (see the success policy) fails the whole gang, since the trainer
// and its workers hold one run between them. Up to spec.runPolicy.backoffLimit times
// the gang restarts: status.restarts is bumped, which makes every pod of the attempt
// stale, so the next reconcile deletes them and creates the next attempt's, and the
// trainer resumes from its newest checkpoint. Past the limit the job fails with
// BackoffLimitExceeded, naming the pod, the container and its exit code or message.
//
// A pod that was disrupted (the condition DisruptionTarget True: preempted by the
// scheduler, evicted through the API by a node drain or by kubelet for node
// pressure, deleted by the taint manager or the pod garbage collector) restarts the
// gang the same way, but status.disruptions is bumped with status.restarts, and
// only restarts - disruptions count against backoffLimit: the trainer checkpoints
// the step in flight on SIGTERM, so a disruption costs little and says nothing
// about the job. Past spec.runPolicy.maxDisruptions a disruption counts as a
// failure, so a pod evicted again and again still ends the job. A pod being deleted
// is judged as soon as it carries the condition, since it may vanish before it is
// seen terminated; one being deleted without it (a suspend, a pod-template change)
// is not judged.
//
// The decision is written to the status before any pod is deleted, so a controller
// that restarts in between neither loses the failure nor counts it twice: the
// bumped restart attempt makes the judged pods stale.
//
// A restart after a failure waits a backoff, as the Job controller's does before it
// recreates a failed pod: 10 s after the first failed attempt in a row, doubled per
// further one (status.consecutiveFailures), at most 6 minutes. The failed pods are
// deleted at once; the next attempt's are created once the wait, counted from the
// Restarting condition's lastTransitionTime, is over (the reconcile asks to be woken
// then). The row ends with an attempt that ran, every pod Running, for 10 minutes
// (kubelet resets a container's crash-loop backoff after the same 10 minutes): a
// stretch that long is taken for progress, whatever the step the trainer reached.
// A disruption ends the row too, since its attempt did not fail, and its restart
// does not wait.

// podFailure says which pod of the gang failed and how.
type podFailure struct {
	Pod       string
	Container string // empty when the pod failed without a container exit (evicted)
	ExitCode  int32
	Reason    string // of the container's termination or of the pod (Evicted, OOMKilled...)
	Message   string // the container's termination message or the pod's
	// Disruption is the pod's DisruptionTarget condition, when it is True.
	Disruption *podDisruption
}

// podDisruption is why a pod was disrupted: its DisruptionTarget condition's reason
// (PreemptionByScheduler, EvictionByEvictionAPI, TerminationByKubelet,
// DeletionByTaintManager, DeletionByPodGC) and message.
type podDisruption struct {
	Reason  string
	Message string
}

// String is "DisruptionTarget: <reason>: <message>", without empty parts.
func (d *podDisruption) String() string {
	s := string(corev1.DisruptionTarget)
	for _, part := range []string{d.Reason, strings.TrimSpace(d.Message)} {
		if part != "" {
			s += ": " + part
		}
	}
	return s
}

// disruption returns why p was disrupted, or nil when its DisruptionTarget
// condition is absent or not True.
func disruption(p *corev1.Pod) *podDisruption {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &podDisruption{Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}

// String is the failure as condition messages give it:
// "pod j-trainer-1, container worker: exit code 137 (OOMKilled): ...", or for a
// disrupted pod "pod j-trainer-1 was disrupted (DisruptionTarget: <reason>:
// <message>); container worker: exit code 143 (Error): ...", whose container part
// is left out when no container exited (the pod's own reason and message then
// repeat the condition's).
func (f *podFailure) String() string {
	var b strings.Builder
	b.WriteString("pod " + f.Pod)
	switch {
	case f.Disruption != nil && f.Container == "":
		fmt.Fprintf(&b, " was disrupted (%s)", f.Disruption)
		return b.String()
	case f.Disruption != nil:
		fmt.Fprintf(&b, " was disrupted (%s); container %s: exit code %d", f.Disruption, f.Container, f.ExitCode)
	case f.Container != "":
		fmt.Fprintf(&b, ", container %s: exit code %d", f.Container, f.ExitCode)
	default:
		b.WriteString(": failed")
	}
	if f.Reason != "" {
		b.WriteString(" (" + f.Reason + ")")
	}
	if m := strings.TrimSpace(f.Message); m != "" {
		b.WriteString(": " + m)
	}
	return b.String()
}

// firstFailure returns the failure of the lowest rank whose pod terminated, or was
// disrupted and is being deleted, or nil. It is called after the success policy, so
// a terminated rank 0 is a failure too: it exited non-zero, or 0 with the outcome
// Error. The message is the container's termination message (the trainer writes
// its final error there; kubelet falls back to the log's tail), with the trainer's
// reported Error message added when the termination message does not quote it.
func firstFailure(u *statusUpdate, pods *podSet) *podFailure {
	finished := pods.finished()
	if len(finished) == 0 {
		return nil
	}
	p := finished[0]
	f := &podFailure{Pod: p.Name, Reason: p.Status.Reason, Message: p.Status.Message, Disruption: disruption(p)}
	if cs := exitedContainer(p); cs != nil {
		t := cs.State.Terminated
		f.Container, f.ExitCode, f.Reason, f.Message = cs.Name, t.ExitCode, t.Reason, t.Message
	}
	if p.Labels[LabelRole] == RoleWorker && p.Status.Phase == corev1.PodSucceeded && f.Disruption == nil {
		f.Message = strings.TrimSpace(f.Message + " the worker exited before the trainer finished")
	}
	if t := u.status().Training; p.Labels[LabelRole] == RoleTrainer && t != nil && t.Outcome == trainingv1alpha1.OutcomeError &&
		!strings.Contains(f.Message, t.Message) {
		f.Message = strings.TrimSpace(f.Message + " the trainer reported: " + t.Message)
	}
	return f
}

// exitedContainer is the first container of p that exited non-zero, else the first
// that exited at all, else nil.
func exitedContainer(p *corev1.Pod) *corev1.ContainerStatus {
	var first *corev1.ContainerStatus
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		if t := cs.State.Terminated; t != nil {
			if t.ExitCode != 0 {
				return cs
			}
			if first == nil {
				first = cs
			}
		}
	}
	return first
}

// applyFailurePolicy restarts the gang after f, or fails the job once the restarts
// counted against the backoff limit (restarts - disruptions) have reached it. A
// restart after a failure counts one more failed attempt in a row, after a reset
// when the attempt ran long enough, and says in its message how long it waits. A
// disruption within maxDisruptions restarts the gang at once whatever the backoff
// limit, bumping disruptions too; past maxDisruptions it counts as a failure.
func applyFailurePolicy(u *statusUpdate, f *podFailure) {
	st := u.status()
	if f.Disruption != nil && disruptionAllowed(u.job) {
		st.Restarts++
		st.Disruptions++
		st.ConsecutiveFailures = 0
		startRestart(u, trainingv1alpha1.ReasonPodFailed, fmt.Sprintf("%s; restarting the gang, not counted against backoffLimit (disruption %d%s)",
			f, st.Disruptions, ofAtMost(u.job.Spec.RunPolicy.MaxDisruptions)))
		return
	}
	cause := f.String()
	if f.Disruption != nil {
		cause += fmt.Sprintf(", counted as a failure past maxDisruptions %d", *u.job.Spec.RunPolicy.MaxDisruptions)
	}
	restartOrFail(u, trainingv1alpha1.ReasonPodFailed, cause)
}

// restartOrFail restarts the gang after a failed attempt, cause saying what failed
// and reason the Restarting condition's, or fails the job with BackoffLimitExceeded
// once the restarts counted against the backoff limit (restarts - disruptions) have
// reached it. The restart counts one more failed attempt in a row, after a reset when
// the attempt ran long enough, and its message says how long it waits.
func restartOrFail(u *statusUpdate, reason, cause string) {
	st := u.status()
	limit := backoffLimit(u.job)
	if failures := st.Restarts - st.Disruptions; failures >= limit {
		finish(u, false, trainingv1alpha1.ReasonBackoffLimitExceeded,
			fmt.Sprintf("%s; the job was restarted %d times%s (backoffLimit %d)", cause, failures, afterDisruptions(st), limit))
		return
	}
	st.Restarts++
	if ranLongEnough(u) {
		st.ConsecutiveFailures = 0
	}
	st.ConsecutiveFailures++
	startRestart(u, reason, fmt.Sprintf("restart %d of at most %d in %s after %s",
		st.Restarts-st.Disruptions, limit, restartBackoff(st.ConsecutiveFailures), cause))
}

// Restart backoff, as the Job controller's for failed pods, and when it resets.
const (
	restartBackoffBase = 10 * time.Second
	restartBackoffMax  = 6 * time.Minute
	backoffResetAfter  = 10 * time.Minute
)

// restartBackoff is the wait before the restart after n failed attempts in a row:
// restartBackoffBase doubled n-1 times, at most restartBackoffMax; none for n <= 0.
func restartBackoff(n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	d := restartBackoffBase
	for i := int32(1); i < n && d < restartBackoffMax; i++ {
		d *= 2
	}
	return min(d, restartBackoffMax)
}

// ranLongEnough reports whether the attempt being judged ran for backoffResetAfter:
// its Running condition (every pod Running) has been True that long.
func ranLongEnough(u *statusUpdate) bool {
	c := meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionRunning)
	return c != nil && c.Status == metav1.ConditionTrue && !u.now.Before(c.LastTransitionTime.Add(backoffResetAfter))
}

// startRestart sets the Restarting condition True with reason and message, its
// lastTransitionTime now even when it was True already (a pod of an attempt still
// being created failed; the warning event is then queued here): the backoff counts
// from it.
func startRestart(u *statusUpdate, reason, message string) {
	again := u.isTrue(trainingv1alpha1.ConditionRestarting)
	u.setCondition(trainingv1alpha1.ConditionRestarting, true, reason, message)
	meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionRestarting).LastTransitionTime = metav1.NewTime(u.now)
	if again {
		u.events = append(u.events, event{Type: corev1.EventTypeWarning, Reason: reason,
			Message: trainingv1alpha1.BoundMessage(message)})
	}
}

// restartWaitLeft is how long the restart in progress must still wait before the
// next attempt's pods are created: the backoff of status.consecutiveFailures from
// the Restarting condition's lastTransitionTime; 0 when no restart waits.
func restartWaitLeft(u *statusUpdate) time.Duration {
	st := u.status()
	c := meta.FindStatusCondition(st.Conditions, trainingv1alpha1.ConditionRestarting)
	if c == nil || c.Status != metav1.ConditionTrue {
		return 0
	}
	return max(c.LastTransitionTime.Add(restartBackoff(st.ConsecutiveFailures)).Sub(u.now), 0)
}

// disruptionAllowed reports whether one more disruption stays within
// spec.runPolicy.maxDisruptions (always, when it is unset).
func disruptionAllowed(job *trainingv1alpha1.ESPOJob) bool {
	limit := job.Spec.RunPolicy.MaxDisruptions
	return limit == nil || job.Status.Disruptions < *limit
}

// ofAtMost is " of at most N" for a limit N, or "" when there is none.
func ofAtMost(limit *int32) string {
	if limit == nil {
		return ""
	}
	return fmt.Sprintf(" of at most %d", *limit)
}

// afterDisruptions is " after failures and N times after disruptions" when the
// status counts disruptions, else "", for the BackoffLimitExceeded message.
func afterDisruptions(st *trainingv1alpha1.ESPOJobStatus) string {
	if st.Disruptions == 0 {
		return ""
	}
	return fmt.Sprintf(" after failures and %d times after disruptions", st.Disruptions)
}

// backoffLimit is spec.runPolicy.backoffLimit, 3 when unset.
func backoffLimit(job *trainingv1alpha1.ESPOJob) int32 {
	p := job.Spec.RunPolicy.DeepCopy()
	p.Default()
	return *p.BackoffLimit
}

// sooner is the earlier of two wake-ups, where 0 is none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
