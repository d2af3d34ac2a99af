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
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The pod template policy: every trainer pod carries, in LabelPodTemplateHash, the
// hash of the spec it was built and started from (podTemplateHash). spec.trainer,
// spec.checkpoint and spec.earlyStopping may change only while the job is suspended,
// and the pods are recreated from the new values on resume; but a suspend and resume
// too quick for the controller to observe (or made while it was down) leaves the old
// pods running with the old spec. A live gang whose pods carry another hash than the
// job's is therefore deleted as a whole and recreated from the current spec, like a
// resume: status.restarts is not bumped (it is no failure, and does not count against
// backoffLimit), the checkpoints stay and the trainer resumes from the newest one.
// The Normal event PodTemplateChanged names the old and the new hash.
//
// Pods without the label, created by a controller older than it, match any spec:
// an upgrade of the operator does not restart running jobs.

// podTemplateHashLength is the length of a pod template hash: 16 hexadecimal digits
// (64 bits of SHA-256), a valid label value.
const podTemplateHashLength = 16

// podTemplateInputs are the parts of a job's spec its trainer pods are built and
// started from, named as in the spec: what pod.go reads (trainer, model, datasets,
// checkpoint, export, tracking) and what the trainer reads from the run config at its start and the API
// lets change on a resume (earlyStopping). Left out are spec.runPolicy, which the
// controller enforces and which may change at any time, and spec.algorithm and
// spec.rewards, which are immutable and reach the run config (and, for
// rewards.intent.embedder.apiKeySecretRef, the trainer container's environment; being
// immutable, it cannot differ between a job's pods), so that a default a later
// version adds to them does not restart running jobs on upgrade.
type podTemplateInputs struct {
	Trainer       *trainingv1alpha1.TrainerSpec       `json:"trainer"`
	Model         *trainingv1alpha1.ModelSpec         `json:"model"`
	Datasets      *trainingv1alpha1.Datasets          `json:"datasets"`
	Checkpoint    *trainingv1alpha1.CheckpointSpec    `json:"checkpoint,omitempty"`
	EarlyStopping *trainingv1alpha1.EarlyStoppingSpec `json:"earlyStopping,omitempty"`
	Export        *trainingv1alpha1.ExportSpec        `json:"export,omitempty"`
	Tracking      *trainingv1alpha1.TrackingSpec      `json:"tracking,omitempty"`
}

// podTemplateHash is the hash of what the job's trainer pods are built and started
// from (podTemplateInputs), as stored: 16 hexadecimal digits. It does not depend on the
// job's metadata, its status, spec.runPolicy, the restart attempt or the operator's
// settings (a new default image reaches a job at its next restart or resume, without
// restarting it), nor on the order of map keys or the spelling of a quantity ("2000m"
// and "2" are the same CPU).
//
// The inputs are hashed as canonical JSON (canonicalJSON), so that a field added to
// the API and left unset in a job (an empty struct, a nil list) does not change the
// hash of existing jobs, and an upgrade does not restart them; a field of the inputs
// that the API server defaults to a non-empty value does.
//
// It returns "" when the inputs cannot be marshalled, which their types rule out;
// pods built then carry no hash and match any spec.
func podTemplateHash(job *trainingv1alpha1.ESPOJob) string {
	s := &job.Spec
	raw, err := canonicalJSON(podTemplateInputs{Trainer: &s.Trainer, Model: &s.Model, Datasets: &s.Datasets,
		Checkpoint: s.Checkpoint, EarlyStopping: s.EarlyStopping, Export: s.Export, Tracking: s.Tracking})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:podTemplateHashLength/2])
}

// canonicalJSON is v as JSON with object keys sorted and, in every object, the members
// that are null, {} or [] (once the same is done inside them) left out. Numbers are
// kept as written, and list elements are kept even when empty, so [{}] stays apart
// from [].
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(pruneEmpty(tree))
}

// pruneEmpty removes, in place, the empty members (emptyJSON) of every object in a
// decoded JSON tree, innermost first, and returns the tree.
func pruneEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e = pruneEmpty(e); emptyJSON(e) {
				delete(t, k)
			} else {
				t[k] = e
			}
		}
	case []any:
		for i := range t {
			t[i] = pruneEmpty(t[i])
		}
	}
	return v
}

// emptyJSON reports whether a decoded JSON value is null, {} or [].
func emptyJSON(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// outdatedPodTemplate returns the hash of the first current pod, in rank order, that
// was built from another spec than the one whose hash is want, and whether there is
// one. Pods without a hash (from an older controller) match; an empty want matches
// every pod. Pods being deleted or of earlier attempts are not looked at.
func outdatedPodTemplate(pods *podSet, want string) (string, bool) {
	if want == "" {
		return "", false
	}
	for _, p := range pods.ranks() {
		if have := p.Labels[LabelPodTemplateHash]; have != "" && have != want {
			return have, true
		}
	}
	return "", false
}

// podTemplateChanged queues the Normal event PodTemplateChanged: the gang built from
// the spec of hash from is being recreated from the spec of hash to.
func podTemplateChanged(u *statusUpdate, from, to string) {
	u.events = append(u.events, event{Type: corev1.EventTypeNormal, Reason: ReasonPodTemplateChanged,
		Message: trainingv1alpha1.BoundMessage(fmt.Sprintf("the spec changed under the running trainer pods (pod template hash %s, now %s): "+
			"recreating them from the current spec; the trainer resumes from its newest checkpoint", from, to))})
}
