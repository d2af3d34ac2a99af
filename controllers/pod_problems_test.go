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
	"testing"

	corev1 "k8s.io/api/core/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestPendingProblem(t *testing.T) {
	job := makeJob().Replicas(2).Image("registry.invalid/espo:nope").Obj()
	withKey := makeJob().Embedder("http://embeddings.ml.svc/v1/embeddings").EmbedderAPIKey("embeddings", "api-key").Obj()
	cases := map[string]struct {
		pods        []corev1.Pod
		wantReason  string
		wantMessage string
	}{
		"none": {pods: []corev1.Pod{testPod(job, 0), testPod(job, 1, phase(corev1.PodRunning))}},
		"a missing claim": {
			pods:       []corev1.Pod{testPod(job, 0, unschedulable(`0/3 nodes are available: persistentvolumeclaim "logs" not found.`))},
			wantReason: trainingv1alpha1.ReasonVolumeUnavailable,
			wantMessage: `pod demo-trainer-0: a volume is unavailable: ` +
				`0/3 nodes are available: persistentvolumeclaim "logs" not found.`,
		},
		"no node fits": {
			pods:        []corev1.Pod{testPod(job, 0, phase(corev1.PodRunning)), testPod(job, 1, unschedulable("0/3 nodes are available: 3 Insufficient cpu."))},
			wantReason:  trainingv1alpha1.ReasonPodsUnschedulable,
			wantMessage: "pod demo-trainer-1 cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu.",
		},
		"an image that cannot be pulled": {
			pods:       []corev1.Pod{testPod(job, 0, waiting("ImagePullBackOff", `Back-off pulling image "registry.invalid/espo:nope"`))},
			wantReason: trainingv1alpha1.ReasonImagePullFailed,
			wantMessage: `pod demo-trainer-0, container trainer: cannot pull image "registry.invalid/espo:nope": ` +
				`ImagePullBackOff: Back-off pulling image "registry.invalid/espo:nope"`,
		},
		"a container that cannot be created": {
			pods:        []corev1.Pod{testPod(job, 0, waiting("CreateContainerConfigError", `secret "hf-token" not found`))},
			wantReason:  trainingv1alpha1.ReasonPodsPending,
			wantMessage: `pod demo-trainer-0, container trainer: CreateContainerConfigError: secret "hf-token" not found`,
		},
		"the embedding service's API key Secret is missing": {
			pods:       []corev1.Pod{testPod(withKey, 0, waiting("CreateContainerConfigError", `secret "embeddings" not found`))},
			wantReason: trainingv1alpha1.ReasonPodsPending,
			wantMessage: `pod demo-trainer-0, container trainer: cannot read key "api-key" of Secret "embeddings" ` +
				`(spec.rewards.intent.embedder.apiKeySecretRef), which must exist in namespace ns: ` +
				`CreateContainerConfigError: secret "embeddings" not found`,
		},
		"the API key Secret lacks the key": {
			pods:       []corev1.Pod{testPod(withKey, 0, waiting("CreateContainerConfigError", `couldn't find key api-key in Secret ns/embeddings`))},
			wantReason: trainingv1alpha1.ReasonPodsPending,
			wantMessage: `pod demo-trainer-0, container trainer: cannot read key "api-key" of Secret "embeddings" ` +
				`(spec.rewards.intent.embedder.apiKeySecretRef), which must exist in namespace ns: ` +
				`CreateContainerConfigError: couldn't find key api-key in Secret ns/embeddings`,
		},
		"another Secret is missing, with an API key Secret named like its prefix": {
			pods:        []corev1.Pod{testPod(withKey, 0, waiting("CreateContainerConfigError", `couldn't find key token in Secret ns/embeddings-hf`))},
			wantReason:  trainingv1alpha1.ReasonPodsPending,
			wantMessage: `pod demo-trainer-0, container trainer: CreateContainerConfigError: couldn't find key token in Secret ns/embeddings-hf`,
		},
		"containers starting are no problem": {pods: []corev1.Pod{testPod(job, 0, waiting("ContainerCreating", ""))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pods []*corev1.Pod
			for i := range tc.pods {
				pods = append(pods, &tc.pods[i])
			}
			reason, msg := pendingProblem(pods)
			if reason != tc.wantReason || msg != tc.wantMessage {
				t.Errorf("pendingProblem = %q, %q\nwant %q, %q", reason, msg, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

func TestMentionsSecret(t *testing.T) {
	for msg, want := range map[string]bool{
		`secret "embeddings" not found`:                         true,
		`secrets "embeddings" is forbidden: no relationship`:    true,
		`couldn't find key api-key in Secret ns/embeddings`:     true,
		`couldn't find key api-key in Secret ns/embeddings.`:    true,
		`couldn't find key a in Secret ns/embeddings, retrying`: true,
		`secret "embeddings-hf" not found`:                      false,
		`couldn't find key a in Secret ns/embeddings-hf`:        false,
		`couldn't find key a in Secret ns/embeddings.v2`:        false,
		`couldn't find key a in Secret other/embeddings`:        false,
		`configmap "embeddings" not found`:                      false,
		`Secret "embeddings" not found`:                         true,
	} {
		if got := mentionsSecret(msg, "ns", "embeddings"); got != want {
			t.Errorf("mentionsSecret(%q) = %v, want %v", msg, got, want)
		}
	}
}
