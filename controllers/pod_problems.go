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

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Why a trainer pod does not run: read from the pod's status, which the scheduler and
// kubelet keep current, so the job's Running condition explains a stuck job without
// the controller polling or reading events. Kubernetes keeps retrying all of these
// (the claim may be created, the image pushed), so none fails the job.

// imagePullReasons are the container waiting reasons of an image that cannot be
// pulled.
var imagePullReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
}

// pendingProblem returns the reason and message of the first problem found on the
// pods, in rank order: an image that cannot be pulled, a missing volume, a pod that
// cannot be scheduled, or a container that cannot be created. It returns "" when no
// pod reports a problem.
func pendingProblem(pods []*corev1.Pod) (reason, message string) {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			continue
		}
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			w := cs.State.Waiting
			switch {
			case w == nil:
			case imagePullReasons[w.Reason]:
				return trainingv1alpha1.ReasonImagePullFailed, fmt.Sprintf("pod %s, container %s: cannot pull image %q: %s: %s",
					p.Name, cs.Name, cs.Image, w.Reason, w.Message)
			case w.Reason == "CreateContainerConfigError" || w.Reason == "CreateContainerError":
				return trainingv1alpha1.ReasonPodsPending, fmt.Sprintf("pod %s, container %s: %s%s: %s", p.Name, cs.Name,
					apiKeySecretProblem(p, cs.Name, w.Message), w.Reason, w.Message)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
				continue
			}
			if isVolumeProblem(c.Message) {
				return trainingv1alpha1.ReasonVolumeUnavailable, fmt.Sprintf("pod %s: a volume is unavailable: %s", p.Name, c.Message)
			}
			return trainingv1alpha1.ReasonPodsUnschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, c.Message)
		}
	}
	return "", ""
}

// isVolumeProblem reports whether a scheduler message is about a claim: missing,
// unbound, or bound to a volume no node can reach.
func isVolumeProblem(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "persistentvolumeclaim") || strings.Contains(msg, "volume node affinity") ||
		strings.Contains(msg, "unbound immediate persistentvolumeclaims")
}

// apiKeySecretProblem explains a container's waiting message that is about the Secret
// of spec.rewards.intent.embedder.apiKeySecretRef (the kubelet's `secret "<name>" not
// found` or `couldn't find key <key> in Secret <namespace>/<name>`): which field names
// it, which key, and where it must be, followed by ": ". It returns "" when the
// container takes no API key from a Secret or the message is about another object.
// Only the names come from the pod's spec: the controller never reads the Secret.
func apiKeySecretProblem(p *corev1.Pod, container, message string) string {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name != container {
			continue
		}
		for _, e := range p.Spec.Containers[i].Env {
			if e.Name != trainingv1alpha1.EmbedderAPIKeyEnv || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if mentionsSecret(message, p.Namespace, ref.Name) {
				return fmt.Sprintf("cannot read key %q of Secret %q (spec.rewards.intent.embedder.apiKeySecretRef), "+
					"which must exist in namespace %s: ", ref.Key, ref.Name, p.Namespace)
			}
		}
	}
	return ""
}

// mentionsSecret reports whether a kubelet message names the Secret name of namespace
// ns: as secret "name" (or secrets "name"), or as ns/name not followed by another
// character of a name.
func mentionsSecret(message, ns, name string) bool {
	lower := strings.ToLower(message)
	if strings.Contains(lower, `secret "`+name+`"`) || strings.Contains(lower, `secrets "`+name+`"`) {
		return true
	}
	qualified := ns + "/" + name
	for rest := message; ; {
		i := strings.Index(rest, qualified)
		if i < 0 {
			return false
		}
		rest = rest[i+len(qualified):]
		if rest == "" || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-.", rune(rest[0])) ||
			(rest[0] == '.' && (len(rest) == 1 || rest[1] == ' ')) {
			return true
		}
	}
}
