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
	"strconv"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Names of the children. They are derived from the job's name alone, so that a retry
// or a restarted controller finds what an earlier reconcile created. trainingv1alpha1.MaxNameLength
// keeps every one of them a valid DNS label.

// configMapName is the name of the job's ConfigMap.
func configMapName(job *trainingv1alpha1.ESPOJob) string { return job.Name + "-config" }

// serviceName is the name of the job's headless Service, also the pods' subdomain.
func serviceName(job *trainingv1alpha1.ESPOJob) string { return job.Name }

// workerTokenSecretName names the Secret with the job's worker token.
func workerTokenSecretName(job *trainingv1alpha1.ESPOJob) string { return job.Name + "-worker-token" }

// networkPolicyName names the NetworkPolicy that guards the job's trainer pods.
func networkPolicyName(job *trainingv1alpha1.ESPOJob) string { return job.Name + "-trainer" }

// podName is the name (and hostname) of the trainer pod of a rank.
func podName(job *trainingv1alpha1.ESPOJob, rank int32) string {
	return job.Name + "-trainer-" + strconv.Itoa(int(rank))
}
