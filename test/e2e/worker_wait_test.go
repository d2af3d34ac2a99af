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
	"k8s.io/apimachinery/pkg/api/meta"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// TestUnansweredWorkerIsNamedInTheRunningCondition: a job whose external worker
// refuses connections runs its trainer pod, and its Running condition says which
// worker the trainer waits for, at which address, for how long and why, refreshed
// as the wait grows: not only "all 1 trainer pods are running".
func TestUnansweredWorkerIsNamedInTheRunningCondition(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t, "e2e-unanswered")
	name := apply(g, ns, testdata("job-unanswered-endpoint.yaml"))

	const wait = `^waiting (\d+)s for worker 0 \(127\.0\.0\.1:1\): .*connection refused`
	var first string
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRunning)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(BeEquivalentTo("True"))
		g.Expect(c.Reason).To(Equal(trainingv1alpha1.ReasonWorkerUnavailable))
		g.Expect(c.Message).To(MatchRegexp(wait))
		first = c.Message
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(Succeed())
	t.Logf("the Running condition: %q", first)
	g.Eventually(func(g Gomega) string {
		return meta.FindStatusCondition(getJob(g, ns, name).Status.Conditions, trainingv1alpha1.ConditionRunning).Message
	}).WithTimeout(trainingStarts).WithPolling(poll).Should(SatisfyAll(MatchRegexp(wait), Not(Equal(first))))
}
