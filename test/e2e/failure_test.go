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

package e2e

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/api/meta"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// TestCorruptDatasetFailsAtOnceWithDatasetInvalid: a dataset that cannot be read
// fails the job at once with the reason DatasetInvalid and the trainer's error, the
// file named as the pod sees it; no restart, though backoffLimit allows one: a new pod
// would read the same bytes.
func TestCorruptDatasetFailsAtOnceWithDatasetInvalid(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-corrupt")
	apply(g, ns, testdata("corrupt-dataset.yaml"))
	name := apply(g, ns, testdata("job-corrupt-dataset.yaml"))

	g.Eventually(func(g Gomega) trainingv1alpha1.JobPhase { return getJob(g, ns, name).Status.Phase }).
		WithTimeout(trainingStarts).WithPolling(poll).Should(Equal(trainingv1alpha1.PhaseFailed))
	job := getJob(g, ns, name)
	failed := meta.FindStatusCondition(job.Status.Conditions, trainingv1alpha1.ConditionFailed)
	g.Expect(failed.Reason).To(Equal(trainingv1alpha1.ReasonDatasetInvalid))
	g.Expect(failed.Message).To(MatchRegexp(`^spec\.datasets\.sources\[0\] \(corrupt\): dataset: 1 problem\(s\)\n` +
		`  /data/corrupt/episodes\.jsonl:1: [^\n]+$`))
	g.Expect(job.Status.Restarts).To(BeZero())
	g.Expect(meta.FindStatusCondition(job.Status.Conditions, trainingv1alpha1.ConditionRestarting)).To(BeNil())

	pods := jobPods(g, ns, name)
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].Labels).To(HaveKeyWithValue(controllers.LabelRestartAttempt, "0"))
	t.Logf("the Failed condition: %q", failed.Message)
}

// TestMissingConfigMapIsNamedInTheRunningCondition: a ConfigMap source that does not
// exist leaves the pod waiting for its volume; the job's Running condition names the
// source and the ConfigMap, not only "0 of 1 trainer pods are running".
func TestMissingConfigMapIsNamedInTheRunningCondition(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-missing-cm")
	name := apply(g, ns, testdata("job-missing-configmap.yaml"))

	waitForRunningCondition(t, ns, name, trainingv1alpha1.ReasonVolumeUnavailable, Equal(`spec.datasets.sources[0] (web): `+
		`ConfigMap "e2e-no-such-configmap" does not exist in namespace `+ns+`: create it, or name an existing one in `+
		`spec.datasets.sources[0].configMap.name`))
}

// TestMissingAPIKeySecretIsNamedInTheRunningCondition: the embedder's apiKeySecretRef
// naming a Secret that does not exist leaves the trainer container waiting, as under a
// kubelet, with reason CreateContainerConfigError; the job's Running condition names
// the field, the Secret and the key, not only "the trainer pod is not running yet".
func TestMissingAPIKeySecretIsNamedInTheRunningCondition(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "e2e-missing-secret")
	const name = "missing-secret"
	createEdited(t, ns, "job-small.yaml", name, func(job *trainingv1alpha1.ESPOJob) {
		job.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Endpoint: "http://embeddings.invalid:8080/v1/embeddings",
			APIKeySecretRef: &trainingv1alpha1.SecretKeyRef{Name: "e2e-no-such-secret", Key: "api-key"}}
	})
	waitForRunningCondition(t, ns, name, trainingv1alpha1.ReasonPodsPending, HavePrefix(`pod missing-secret-trainer-0, `+
		`container trainer: cannot read key "api-key" of Secret "e2e-no-such-secret" `+
		`(spec.rewards.intent.embedder.apiKeySecretRef), which must exist in namespace `+ns+`: CreateContainerConfigError: `))
}

// TestMissingServiceAccountIsNamedInTheRunningCondition: trainer pods that would run
// as a service account that does not exist are not created (the API server's
// ServiceAccount admission plugin refuses them, here as on a real cluster); the job's
// Running condition names the field and the account.
func TestMissingServiceAccountIsNamedInTheRunningCondition(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "e2e-missing-sa")
	const name = "missing-sa"
	createEdited(t, ns, "job-small.yaml", name, func(job *trainingv1alpha1.ESPOJob) {
		job.Spec.Trainer.ServiceAccountName = "e2e-no-such-sa"
	})
	waitForRunningCondition(t, ns, name, trainingv1alpha1.ReasonPodsPending,
		HavePrefix(`spec.trainer.serviceAccountName: ServiceAccount "e2e-no-such-sa" does not exist in namespace `+ns))
	NewWithT(t).Expect(kubectl("get", "pods", "-n", ns, "-o", "name")).To(BeEmpty())
}

// waitForRunningCondition waits until the job's Running condition has reason and a
// message that message matches.
func waitForRunningCondition(t *testing.T, ns, name, reason string, message types.GomegaMatcher) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRunning)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(c.Message).To(message)
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
}
