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

package localcluster

import (
	"bytes"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of a termination message, as kubelet applies them.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// statusLocked computes the pod's status from its containers; r.mu must be held.
// It starts from the status Kubernetes has (keeping the scheduler's condition and
// the QoS class) and sets the phase, addresses, conditions and container states.
func (r *podRun) statusLocked() corev1.PodStatus {
	st := *r.pod.Status.DeepCopy()
	st.HostIP, st.HostIPs = nodeIP, []corev1.HostIP{{IP: nodeIP}}
	st.PodIP, st.PodIPs = r.ip, []corev1.PodIP{{IP: r.ip}}
	if r.started {
		st.StartTime = &r.startTime
	}
	st.InitContainerStatuses = containerStatuses(r.inits, false)
	st.ContainerStatuses = containerStatuses(r.containers, true)
	st.Phase = podPhase(r.pod.Spec.RestartPolicy, st.InitContainerStatuses, st.ContainerStatuses, r.started)
	if r.waiting != nil {
		for _, statuses := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
			for i := range statuses {
				if w := statuses[i].State.Waiting; w != nil {
					w.Reason, w.Message = r.waiting.containerWaiting(statuses[i].Name, w.Reason)
				}
			}
		}
	}
	now := metav1.NewTime(r.node.clock.Now())
	ready := st.Phase == corev1.PodRunning && allRunning(st.ContainerStatuses)
	setCondition(&st, corev1.PodScheduled, true, "", "", now)
	setCondition(&st, corev1.PodReadyToStartContainers, r.started, r.waitingReason(), r.waitingMessage(), now)
	setCondition(&st, corev1.PodInitialized, r.initDone || len(r.inits) == 0 && r.started, "", "", now)
	setCondition(&st, corev1.ContainersReady, ready, r.waitingReason(), r.waitingMessage(), now)
	setCondition(&st, corev1.PodReady, ready, r.waitingReason(), r.waitingMessage(), now)
	return st
}

// containerWaiting is the waiting reason and message of the container name while the
// pod cannot start for e, as a kubelet gives them: a container whose configuration
// cannot be made (a missing Secret, ConfigMap or key of its environment) waits with
// reason CreateContainerConfigError and the cause, "secret \"x\" not found"; the
// others keep reason, ContainerCreating, with why the pod cannot start.
func (e *prepError) containerWaiting(name, reason string) (string, string) {
	if e.reason == reasonConfigError && e.container == name {
		return reasonConfigError, bounded(e.err.Error())
	}
	return reason, bounded(e.Error())
}

func (r *podRun) waitingReason() string {
	if r.waiting == nil {
		return ""
	}
	return r.waiting.reason
}

func (r *podRun) waitingMessage() string {
	if r.waiting == nil {
		return ""
	}
	return bounded(r.waiting.Error())
}

// containerStatuses reports the containers' states; running containers are ready
// (the process node has no probes).
func containerStatuses(cs []*containerRun, main bool) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		s := corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image, ImageID: "process://" + c.spec.Image,
			State: *c.state.DeepCopy(), LastTerminationState: *c.last.DeepCopy(), RestartCount: c.restarts,
			Ready: c.state.Running != nil,
		}
		if main {
			s.Started = &s.Ready
		}
		if c.proc != nil {
			s.ContainerID = "process://" + strconv.Itoa(c.proc.pid())
		}
		out = append(out, s)
	}
	return out
}

// podPhase is the pod's phase from its container states, as kubelet computes it:
// Pending until the pod started and its init containers succeeded; Failed when an
// init container failed for good, or when every container ended and one failed;
// Succeeded when every container ended with 0; Running otherwise.
func podPhase(policy corev1.RestartPolicy, inits, mains []corev1.ContainerStatus, started bool) corev1.PodPhase {
	if !started {
		if anyFailed(inits) || anyFailed(mains) { // stopped before it could start
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	for _, s := range inits {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return corev1.PodPending
		}
	}
	ended, failed := 0, false
	for _, s := range mains {
		if t := s.State.Terminated; t != nil {
			ended++
			failed = failed || t.ExitCode != 0
		}
	}
	switch {
	case ended < len(mains):
		return corev1.PodRunning
	case failed:
		return corev1.PodFailed
	default:
		return corev1.PodSucceeded
	}
}

func anyFailed(ss []corev1.ContainerStatus) bool {
	for _, s := range ss {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return true
		}
	}
	return false
}

func allRunning(ss []corev1.ContainerStatus) bool {
	for _, s := range ss {
		if s.State.Running == nil {
			return false
		}
	}
	return len(ss) > 0
}

// setCondition sets a pod condition, keeping its transition time when the status
// does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason, message string, now metav1.Time) {
	status := corev1.ConditionFalse
	if ok {
		status, reason, message = corev1.ConditionTrue, "", ""
	}
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now}
	for i := range st.Conditions {
		if st.Conditions[i].Type != t {
			continue
		}
		if st.Conditions[i].Status == status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		st.Conditions[i] = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

// terminationMessage is what a container leaves as its termination message, as
// kubelet reads it: the last maxTerminationMessage bytes of its termination
// message file, or, when that is empty, with FallbackToLogsOnError and a failure,
// the end of its log.
func terminationMessage(c *containerRun, code int32) string {
	b, _ := os.ReadFile(c.messagePath())
	b = tail(b, 0, maxTerminationMessage)
	if len(b) > 0 || code == 0 || c.spec.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return string(b)
	}
	log, _ := os.ReadFile(c.logPath(c.restarts))
	return string(tail(log, fallbackLogLines, fallbackLogBytes))
}

// tail is the last lines of b, at most maxBytes of them (lines <= 0: no line limit,
// maxBytes <= 0: no byte limit).
func tail(b []byte, lines, maxBytes int) []byte {
	if lines > 0 {
		end := len(b)
		if end > 0 && b[end-1] == '\n' {
			end-- // the final newline does not start a line
		}
		for n, i := 0, end; i >= 0; i-- {
			if i == 0 || b[i-1] == '\n' {
				if n++; n == lines {
					b = b[i:]
					break
				}
			}
		}
	}
	if maxBytes > 0 && len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	return bytes.Clone(b)
}
