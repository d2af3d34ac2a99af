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
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// Fixtures of the unit tests.
var (
	// now is the fake clock's reading in the unit tests.
	now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// testOpts are the operator settings the unit tests build pods with.
	testOpts = PodOptions{TrainerImage: "espo:v1", CUDAWorkerImage: "espo-cuda:v1"}
)

// makeJob starts a job named demo in namespace ns, with a UID and a generation.
func makeJob() *builders.ESPOJobWrapper {
	return builders.MakeESPOJob("demo", "ns").UID("uid-1").Generation(1)
}

// podOption changes a test pod.
type podOption func(*corev1.Pod)

// testPod builds the job's pod of a rank, as the controller would, then applies opts.
func testPod(job *trainingv1alpha1.ESPOJob, rank int32, opts ...podOption) corev1.Pod {
	p := buildPod(job, rank, testOpts)
	p.UID = "pod-uid"
	for _, o := range opts {
		o(p)
	}
	return *p
}

// phase sets the pod's phase (Running pods are also Ready).
func phase(ph corev1.PodPhase) podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = ph
		if ph == corev1.PodRunning {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		}
	}
}

// exit makes the pod's first container exit with code and message: the pod is
// Succeeded for 0, else Failed.
func exit(code int32, reason, message string) podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		if code == 0 {
			p.Status.Phase = corev1.PodSucceeded
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}},
		}}
	}
}

// waiting makes the pod Pending with its first container waiting for reason.
func waiting(reason, message string) podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}}
	}
}

// unschedulable makes the pod Pending with the scheduler's message.
func unschedulable(message string) podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message,
		}}
	}
}

// disruptionTarget gives the pod the condition DisruptionTarget with status, reason
// and message, as the scheduler, the eviction API, kubelet or the pod GC set it.
func disruptionTarget(status corev1.ConditionStatus, reason, message string) podOption {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: status, Reason: reason, Message: message,
		})
	}
}

// attempt labels the pod with another restart attempt.
func attempt(a string) podOption {
	return func(p *corev1.Pod) { p.Labels[LabelRestartAttempt] = a }
}

// deleting marks the pod as being deleted.
func deleting() podOption {
	return func(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }
}

// cond is a condition as the controller writes it at now for generation 1.
func cond(typ string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(now)}
}

// mtime is t as a *metav1.Time.
func mtime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// typed is the object an apply configuration declares, decoded into a T: what the
// API server is sent, in the shape the unit tests compare.
func typed[T any](t *testing.T, ac runtime.ApplyConfiguration) *T {
	t.Helper()
	raw, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}
