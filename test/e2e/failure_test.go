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
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// A job on a corrupt ConfigMap dataset: its restart waits the 10 s backoff, and it
// fails with backoffLimit 1 spent, its conditions quoting the trainer's own error
// (its termination message), with no log line before it.
func TestCorruptDatasetFailsWithTheTrainersErrorAfterABackoff(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-corrupt")
	apply(g, ns, testdata("corrupt-dataset.yaml"))
	name := apply(g, ns, testdata("job-corrupt-dataset.yaml"))
	trainerError := `container trainer: exit code 1 \(Error\): spec\.datasets\.sources\[0\] \(corrupt\): dataset: 1 problem\(s\)\n` +
		`  \S+/corrupt/episodes\.jsonl:1: [^\n]+`

	var failedAt metav1.Time
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRestarting)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(MatchRegexp(`^restart 1 of at most 1 in 10s after pod %s-trainer-0, %s$`, name, trainerError))
		failedAt = c.LastTransitionTime
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())

	g.Eventually(func(g Gomega) trainingv1alpha1.JobPhase { return getJob(g, ns, name).Status.Phase }).
		WithTimeout(trainingStarts).WithPolling(poll).Should(Equal(trainingv1alpha1.PhaseFailed))
	job := getJob(g, ns, name)
	failed := meta.FindStatusCondition(job.Status.Conditions, trainingv1alpha1.ConditionFailed)
	g.Expect(failed.Reason).To(Equal(trainingv1alpha1.ReasonBackoffLimitExceeded))
	g.Expect(failed.Message).To(MatchRegexp(`^pod %s-trainer-0, %s; the job was restarted 1 times \(backoffLimit 1\)$`,
		name, trainerError))
	g.Expect(failed.Message).NotTo(ContainSubstring("serving metrics"))

	pods := jobPods(g, ns, name)
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].Labels).To(HaveKeyWithValue(controllers.LabelRestartAttempt, "1"))
	waited := pods[0].CreationTimestamp.Sub(failedAt.Time)
	g.Expect(waited).To(BeNumerically(">=", 10*time.Second), "the second attempt's pod was created %s after the first failed", waited)
	t.Logf("the second attempt's pod was created %s after the first failure; the Failed condition: %q", waited, failed.Message)
}
