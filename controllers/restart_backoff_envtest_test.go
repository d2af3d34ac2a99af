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

package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// startManagerOnClock runs the controller on namespace ns with clk as its clock,
// until the test ends or the returned manager is stopped.
func startManagerOnClock(t *testing.T, ns string, clk *clocktesting.FakeClock) *manager {
	t.Helper()
	return &manager{stop: env.StartManager(t, operatorConfig(t, nil), ns,
		func(_ *ctrl.Options, o *controllers.Options) { o.Clock = clk })}
}

// setupOnClock gives a test a namespace and a controller watching it on a fake
// clock, which the test steps past restart backoffs (see passBackoff).
func setupOnClock(t *testing.T) (Gomega, string, *clocktesting.FakeClock) {
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	startManagerOnClock(t, ns, clk)
	return NewWithT(t), ns, clk
}

// passBackoff waits until the job's restart number restarts has been decided and
// says it waits backoff, checks that the next attempt's pods wait too, then steps
// clk past the backoff and touches the job so that it is reconciled on the new time.
func passBackoff(g Gomega, clk *clocktesting.FakeClock, job *trainingv1alpha1.ESPOJob, restarts int32, backoff time.Duration) {
	g.Eventually(func(g Gomega) {
		st := getJob(g, job).Status
		g.Expect(st.Restarts).To(Equal(restarts))
		g.Expect(condition(g, job, trainingv1alpha1.ConditionRestarting)()).To(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring(fmt.Sprintf(" in %s after ", backoff)))))
	}, reconcileTimeout, poll).Should(Succeed())
	g.Eventually(podsOfAttempt(g, job, int(restarts)-1), reconcileTimeout, poll).Should(BeZero(), "the failed attempt's pods are deleted at once")
	g.Consistently(podsOfAttempt(g, job, int(restarts)), quietPeriod, poll).Should(BeZero(), "no pod before the backoff is over")
	clk.Step(backoff)
	g.Expect(env.Client.Patch(context.Background(), job.DeepCopy(), client.RawPatch(client.Merge.Type(),
		fmt.Appendf(nil, `{"metadata":{"annotations":{"test.espo.dev/clock":%q}}}`, clk.Now().Format(time.RFC3339))))).To(Succeed())
}
