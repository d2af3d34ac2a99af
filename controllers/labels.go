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
	"strconv"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Labels and annotations the controller puts on the children of an ESPOJob. Every
// child carries LabelManagedBy, so that the manager's cache holds only these objects.
const (
	LabelJobName        = "training.espo.dev/job-name"
	LabelJobUID         = "training.espo.dev/job-uid"
	LabelRank           = "training.espo.dev/rank"
	LabelRole           = "training.espo.dev/role"
	LabelRestartAttempt = "training.espo.dev/restart-attempt"
	// LabelPodTemplateHash is the hash of the spec a trainer pod was built from
	// (podTemplateHash): a running gang with another hash than the job's is recreated.
	LabelPodTemplateHash = "training.espo.dev/pod-template-hash"
	LabelManagedBy       = "app.kubernetes.io/managed-by"
	// LabelComponent says what a shared object of the operator is for.
	LabelComponent = "app.kubernetes.io/component"

	// ManagedByValue is the value of LabelManagedBy on every child.
	ManagedByValue = "espo-operator"
	// ComponentTrainerIdentity is LabelComponent of the trainer identity's objects.
	ComponentTrainerIdentity = "trainer-identity"
)

// The roles of the trainer pods (LabelRole).
const (
	// RoleTrainer is rank 0: it runs the training loop.
	RoleTrainer = "trainer"
	// RoleWorker is every other rank: it hosts remote policy workers.
	RoleWorker = "worker"
)

// podRole is the role of a rank: trainer for rank 0, worker for the others.
func podRole(rank int32) string {
	if rank == 0 {
		return RoleTrainer
	}
	return RoleWorker
}

// jobLabels are the labels every child of the job carries.
func jobLabels(job *trainingv1alpha1.ESPOJob) map[string]string {
	return map[string]string{
		LabelJobName:   job.Name,
		LabelJobUID:    string(job.UID),
		LabelManagedBy: ManagedByValue,
	}
}

// podLabels are the labels of the trainer pod of a rank in the current restart
// attempt: the job's pod labels (spec.trainer.labels), overridden by the job's own,
// which include the hash of the spec the pod is built from.
func podLabels(job *trainingv1alpha1.ESPOJob, rank int32) map[string]string {
	l := maps.Clone(job.Spec.Trainer.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, jobLabels(job))
	l[LabelRank] = strconv.Itoa(int(rank))
	l[LabelRole] = podRole(rank)
	l[LabelRestartAttempt] = strconv.Itoa(int(job.Status.Restarts))
	if h := podTemplateHash(job); h != "" {
		l[LabelPodTemplateHash] = h
	}
	return l
}

// serviceSelector selects the job's trainer pods.
func serviceSelector(job *trainingv1alpha1.ESPOJob) map[string]string {
	return map[string]string{LabelJobName: job.Name, LabelJobUID: string(job.UID)}
}
