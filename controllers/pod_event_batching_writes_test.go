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
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// countStatusWrites counts the requests that write an ESPOJob's status.
func countStatusWrites(n *atomic.Int64) func(rt http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/espojobs/") && strings.HasSuffix(req.URL.Path, "/status") {
				n.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
}

// TestAGangBecomingReadyIsOneStatusWrite makes the 8 pods of a job ready at once
// under a pod event batch period and checks that the job's status reaches 8 ready
// pods in at most two status writes (one per pod without batching).
func TestAGangBecomingReadyIsOneStatusWrite(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	var writes atomic.Int64
	cfg := operatorConfig(t, nil)
	cfg.WrapTransport = countStatusWrites(&writes)
	env.StartManager(t, cfg, ns, func(_ *ctrl.Options, o *controllers.Options) { o.PodEventBatchPeriod = 2 * time.Second })

	job := create(g, builders.MakeESPOJob("gang", ns).Replicas(8).Obj())
	g.Eventually(func() int { return len(pods(g, job)) }, reconcileTimeout, poll).Should(Equal(8))
	g.Eventually(func() int32 { return getJob(g, job).Status.Active }, reconcileTimeout, poll).Should(Equal(int32(8)))
	before := writes.Load()
	for _, p := range pods(g, job) {
		setPodStatus(g, &p, running(&p))
	}
	g.Eventually(func() int32 { return getJob(g, job).Status.Ready }, reconcileTimeout, poll).Should(Equal(int32(8)))
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	g.Expect(writes.Load()-before).To(BeNumerically("<=", 2), "status writes while 8 pods became ready")
}
