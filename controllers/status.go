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
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// podSet is a job's trainer pods, sorted by restart attempt.
type podSet struct {
	// current are the pods of the current restart attempt (status.restarts) that are
	// not being deleted, by rank.
	current map[int32]*corev1.Pod
	// stale are the pods of earlier attempts, or of ranks the job no longer has, that
	// are not yet being deleted.
	stale []*corev1.Pod
	// disrupted are the pods of the current attempt that are being deleted with the
	// condition DisruptionTarget (preempted, evicted, deleted by the taint manager
	// or the pod garbage collector), by rank: a failure the gang must answer,
	// though the pod may vanish before it is seen terminated.
	disrupted map[int32]*corev1.Pod
	// all are all the job's pods, those being deleted included, by name.
	all map[string]*corev1.Pod
}

// splitPods sorts the pods controlled by job into a podSet.
func splitPods(job *trainingv1alpha1.ESPOJob, pods []corev1.Pod) *podSet {
	s := &podSet{current: map[int32]*corev1.Pod{}, disrupted: map[int32]*corev1.Pod{}, all: map[string]*corev1.Pod{}}
	for i := range pods {
		p := &pods[i]
		s.all[p.Name] = p
		rank, current := currentRank(job, p)
		switch {
		case p.DeletionTimestamp != nil:
			if current && disruption(p) != nil {
				s.disrupted[rank] = p
			}
		case current:
			s.current[rank] = p
		default:
			s.stale = append(s.stale, p)
		}
	}
	sort.Slice(s.stale, func(i, j int) bool { return s.stale[i].Name < s.stale[j].Name })
	return s
}

// currentRank returns the rank of p and whether p belongs to the job's current
// attempt: a rank the job has, the current restart attempt, and the rank's name.
func currentRank(job *trainingv1alpha1.ESPOJob, p *corev1.Pod) (int32, bool) {
	rank, err := strconv.Atoi(p.Labels[LabelRank])
	if err != nil || rank < 0 || int32(rank) >= replicas(job) {
		return 0, false
	}
	return int32(rank), p.Labels[LabelRestartAttempt] == strconv.Itoa(int(job.Status.Restarts)) &&
		p.Name == podName(job, int32(rank))
}

// ranks returns the current pods in rank order.
func (s *podSet) ranks() []*corev1.Pod {
	return inRankOrder(s.current)
}

// finished returns, in rank order, the pods of the current attempt that the failure
// policy judges: those that terminated, and those being deleted after a disruption.
func (s *podSet) finished() []*corev1.Pod {
	byRank := maps.Clone(s.disrupted)
	for r, p := range s.current {
		if terminated(p) {
			byRank[r] = p
		}
	}
	return inRankOrder(byRank)
}

// inRankOrder returns the pods of byRank by increasing rank (not by name:
// "-trainer-10" sorts before "-trainer-2").
func inRankOrder(byRank map[int32]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(byRank))
	for _, r := range slices.Sorted(maps.Keys(byRank)) {
		out = append(out, byRank[r])
	}
	return out
}

// missingRanks are the ranks of the current attempt without a pod, whose pod name is
// free (a pod of that name being deleted must go first).
func (s *podSet) missingRanks(job *trainingv1alpha1.ESPOJob) []int32 {
	var out []int32
	for rank := range replicas(job) {
		if _, ok := s.all[podName(job, rank)]; !ok {
			out = append(out, rank)
		}
	}
	return out
}

// terminated reports whether a pod has finished (Succeeded or Failed).
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// updatePodStatus recomputes the pod counts, startTime and the Running condition from
// the pods of the current attempt. A job that is finished or suspended is not running,
// for the reason of its Succeeded, Failed or Suspended condition.
func updatePodStatus(u *statusUpdate, pods *podSet) {
	st := u.status()
	st.Active, st.Ready, st.Succeeded, st.Failed = 0, 0, 0, 0
	running := int32(0)
	for _, p := range pods.current {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			st.Succeeded++
		case corev1.PodFailed:
			st.Failed++
		case corev1.PodRunning:
			running++
			st.Active++
		default:
			st.Active++
		}
		if podReady(p) {
			st.Ready++
		}
	}
	if running > 0 && st.StartTime == nil {
		t := metav1.NewTime(u.now)
		st.StartTime = &t
	}
	n := replicas(u.job)
	switch {
	case u.isTrue(trainingv1alpha1.ConditionFailed) || u.isTrue(trainingv1alpha1.ConditionSucceeded) || u.isTrue(trainingv1alpha1.ConditionSuspended):
		u.clearCondition(trainingv1alpha1.ConditionRunning, finishedReason(st), "the job has no running trainer pods")
	case running == n:
		u.setCondition(trainingv1alpha1.ConditionRunning, true, trainingv1alpha1.ReasonPodsRunning, fmt.Sprintf("all %d trainer pods are running", n))
	default:
		reason, msg := pendingProblem(pods.ranks())
		if reason == "" {
			reason, msg = trainingv1alpha1.ReasonPodsPending, fmt.Sprintf("%d of %d trainer pods are running", running, n)
		}
		u.setCondition(trainingv1alpha1.ConditionRunning, false, reason, msg)
	}
}

// finishedReason is the reason of the condition that stopped the job: its Failed,
// Succeeded or Suspended condition, whichever is True.
func finishedReason(st *trainingv1alpha1.ESPOJobStatus) string {
	for _, typ := range []string{trainingv1alpha1.ConditionFailed, trainingv1alpha1.ConditionSucceeded, trainingv1alpha1.ConditionSuspended} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return trainingv1alpha1.ReasonPodsPending
}

// podReady reports whether a pod has the Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// computePhase is the one-word summary of the conditions: Failed, Succeeded,
// Suspended, Restarting, Running or Pending, the first whose condition is True.
func computePhase(st *trainingv1alpha1.ESPOJobStatus) trainingv1alpha1.JobPhase {
	for _, p := range []struct {
		cond  string
		phase trainingv1alpha1.JobPhase
	}{
		{trainingv1alpha1.ConditionFailed, trainingv1alpha1.PhaseFailed},
		{trainingv1alpha1.ConditionSucceeded, trainingv1alpha1.PhaseSucceeded},
		{trainingv1alpha1.ConditionSuspended, trainingv1alpha1.PhaseSuspended},
		{trainingv1alpha1.ConditionRestarting, trainingv1alpha1.PhaseRestarting},
		{trainingv1alpha1.ConditionRunning, trainingv1alpha1.PhaseRunning},
	} {
		if meta.IsStatusConditionTrue(st.Conditions, p.cond) {
			return p.phase
		}
	}
	return trainingv1alpha1.PhasePending
}

// finish ends the job: its Succeeded or Failed condition True with the reason, the
// completion time, and no restart in progress.
func finish(u *statusUpdate, succeeded bool, reason, message string) {
	typ := trainingv1alpha1.ConditionFailed
	if succeeded {
		typ = trainingv1alpha1.ConditionSucceeded
	}
	u.setCondition(typ, true, reason, message)
	u.clearCondition(trainingv1alpha1.ConditionRestarting, reason, message)
	if u.status().CompletionTime == nil {
		t := metav1.NewTime(u.now)
		u.status().CompletionTime = &t
	}
}
