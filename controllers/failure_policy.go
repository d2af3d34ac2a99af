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

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The failure policy: a trainer pod of the current attempt that terminated without
// finishing the job (see the success policy) fails the whole gang, since the trainer
// and its workers hold one run between them. Up to spec.runPolicy.backoffLimit times
// the gang restarts: status.restarts is bumped, which makes every pod of the attempt
// stale, so the next reconcile deletes them and creates the next attempt's, and the
// trainer resumes from its newest checkpoint. Past the limit the job fails with
// BackoffLimitExceeded, naming the pod, the container and its exit code or message.
//
// The decision is written to the status before any pod is deleted, so a controller
// that restarts in between neither loses the failure nor counts it twice.

// podFailure says which pod of the gang failed and how.
type podFailure struct {
	Pod       string
	Container string // empty when the pod failed without a container exit (evicted)
	ExitCode  int32
	Reason    string // of the container's termination or of the pod (Evicted, OOMKilled...)
	Message   string // the container's termination message or the pod's
}

// String is the failure as condition messages give it:
// "pod j-trainer-1, container worker: exit code 137 (OOMKilled): ...".
func (f *podFailure) String() string {
	var b strings.Builder
	b.WriteString("pod " + f.Pod)
	if f.Container != "" {
		fmt.Fprintf(&b, ", container %s: exit code %d", f.Container, f.ExitCode)
	} else {
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

// firstFailure returns the failure of the lowest rank whose pod terminated, or nil.
// It is called after the success policy, so a terminated rank 0 is a failure too:
// it exited non-zero, or 0 with the outcome Error.
func firstFailure(u *statusUpdate, pods *podSet) *podFailure {
	for _, p := range pods.ranks() {
		if !terminated(p) {
			continue
		}
		f := &podFailure{Pod: p.Name, Reason: p.Status.Reason, Message: p.Status.Message}
		if cs := exitedContainer(p); cs != nil {
			t := cs.State.Terminated
			f.Container, f.ExitCode, f.Reason, f.Message = cs.Name, t.ExitCode, t.Reason, t.Message
		}
		if p.Labels[LabelRole] == RoleWorker && p.Status.Phase == corev1.PodSucceeded {
			f.Message = strings.TrimSpace(f.Message + " the worker exited before the trainer finished")
		}
		if t := u.status().Training; p.Labels[LabelRole] == RoleTrainer && t != nil && t.Outcome == v1.OutcomeError {
			f.Message = strings.TrimSpace(f.Message + " the trainer reported: " + t.Message)
		}
		return f
	}
	return nil
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
// have reached the backoff limit.
func applyFailurePolicy(u *statusUpdate, f *podFailure) {
	st := u.status()
	limit := backoffLimit(u.job)
	if st.Restarts >= limit {
		finish(u, false, v1.ReasonBackoffLimitExceeded,
			fmt.Sprintf("%s; the job was restarted %d times (backoffLimit %d)", f, st.Restarts, limit))
		return
	}
	st.Restarts++
	u.setCondition(v1.ConditionRestarting, true, v1.ReasonPodFailed,
		fmt.Sprintf("restart %d of at most %d after %s", st.Restarts, limit, f))
}

// backoffLimit is spec.runPolicy.backoffLimit, 3 when unset.
func backoffLimit(job *v1.ESPOJob) int32 {
	p := job.Spec.RunPolicy.DeepCopy()
	p.Default()
	return *p.BackoffLimit
}
