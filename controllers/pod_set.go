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
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

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
// policy judges: those that ended (terminated, or their trainer exited), and those
// being deleted after a disruption.
func (s *podSet) finished() []*corev1.Pod {
	byRank := maps.Clone(s.disrupted)
	for r, p := range s.current {
		if ended(p) {
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

// ended reports whether p's part in the run is over: it terminated, or its trainer
// container exited while the worker beside it still serves.
func ended(p *corev1.Pod) bool {
	done, _ := trainerExit(p)
	return done
}

// trainerExit reports whether the trainer of p (rank 0) has ended, and whether it exited 0:
// when its pod terminated, or when its trainer container did while the cuda worker
// beside it still serves (the worker exits only when the pod is stopped).
func trainerExit(p *corev1.Pod) (ended, exited0 bool) {
	if terminated(p) {
		return true, p.Status.Phase == corev1.PodSucceeded
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == ContainerTrainer && t != nil {
			return true, t.ExitCode == 0
		}
	}
	return false, false
}
