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
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The worker token: every job has a Secret with a random token, owned by the job and
// mounted only into the containers of its own pods. The workers refuse every call of
// the worker protocol that does not carry it, so a pod of another job or tenant that
// reaches a worker port can neither read the policy's behaviour nor change its
// training. The token is created once and kept: the controller never logs it, and it
// is in no ConfigMap, event or status. Deleting the Secret rotates it: the next
// reconcile makes a new one, which the pods read when they start (so rotate while the
// job is suspended).

// Where the token is and how the containers find it.
const (
	// WorkerTokenKey is the Secret key of the token.
	WorkerTokenKey = "token"
	// WorkerTokenDir is where the token's Secret is mounted, read-only, in every
	// container of a job's pods.
	WorkerTokenDir = "/var/run/secrets/espo.dev/worker-token"
	// EnvWorkerTokenFile names the token's file: the trainer sends it, the workers
	// demand it.
	EnvWorkerTokenFile = trainingv1alpha1.WorkerTokenFileEnv
	// workerTokenBytes is the token's entropy; it is written as hexadecimal.
	workerTokenBytes = trainingv1alpha1.WorkerTokenLength / 2
)

// desiredWorkerTokenSecret is the job's worker token Secret holding token. It is
// immutable: the token changes only by deleting the Secret.
func desiredWorkerTokenSecret(job *trainingv1alpha1.ESPOJob, token string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(workerTokenSecretName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithType(corev1.SecretTypeOpaque).
		WithImmutable(true).
		WithData(map[string][]byte{WorkerTokenKey: []byte(token)})
}

// newWorkerToken returns a fresh random token: workerTokenBytes from crypto/rand, in
// hexadecimal.
func newWorkerToken() (string, error) {
	b := make([]byte, workerTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the worker token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// validWorkerToken reports whether t has the form newWorkerToken makes.
func validWorkerToken(t []byte) bool {
	if len(t) != 2*workerTokenBytes {
		return false
	}
	_, err := hex.DecodeString(string(t))
	return err == nil
}

// workerTokenCompanion is the worker token's Secret as a companion: a new one
// holds token; a live one the job controls keeps its valid token.
func workerTokenCompanion(job *trainingv1alpha1.ESPOJob, token string) companion {
	c := companionOf(desiredWorkerTokenSecret(job, token), corev1ac.ExtractSecret)
	c.keep = func(live client.Object) companionConfig {
		if s, ok := live.(*corev1.Secret); ok && validWorkerToken(s.Data[WorkerTokenKey]) {
			return desiredWorkerTokenSecret(job, string(s.Data[WorkerTokenKey]))
		}
		return c.desired
	}
	return c
}

// workerTokenVolume is the pod volume of the job's worker token Secret.
func workerTokenVolume(job *trainingv1alpha1.ESPOJob) corev1.Volume {
	return corev1.Volume{Name: workerTokenVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: workerTokenSecretName(job), DefaultMode: new(int32(0o440)),
	}}}
}

// workerTokenMount and workerTokenEnv give a container the token: its file, mounted
// read-only, and where it is.
func workerTokenMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: workerTokenVolumeName, MountPath: WorkerTokenDir, ReadOnly: true}
}

func workerTokenEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: EnvWorkerTokenFile, Value: WorkerTokenDir + "/" + WorkerTokenKey}
}
