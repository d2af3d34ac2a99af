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

package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/espo-dev/espo-operator/controllers"
)

// TrainerImage and CUDAWorkerImage are the images the test manager gives trainer pods.
const (
	TrainerImage    = "espo:test"
	CUDAWorkerImage = "espo-cuda:test"
)

// StartManager runs the ESPOJob controller in the test process as the operator runs it
// (its cache and client options), reaching the API server with cfg and watching
// namespace ns only, without metrics or probe servers; tune, when not nil, adjusts the
// manager's options (leader election, say) and the controller's (its pod event batch
// period, which is 0 here unless tuned: tests see every pod event at once). The manager stops when the test ends or when the
// returned stop is called, whichever comes first; an error from it fails the test.
func (e *Env) StartManager(t testing.TB, cfg *rest.Config, ns string, tune func(*ctrl.Options, *controllers.Options)) (stop func()) {
	t.Helper()
	cacheOpts := controllers.CacheOptions()
	cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Cache:                  cacheOpts,
		Client:                 controllers.ClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	ropts := controllers.Options{
		PodOptions: controllers.PodOptions{TrainerImage: TrainerImage, CUDAWorkerImage: CUDAWorkerImage},
	}
	if tune != nil {
		tune(&opts, &ropts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := controllers.NewESPOJobReconciler(mgr, ropts)
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	return RunManager(t, mgr)
}

// managerStopTimeout bounds the wait for a test's manager to stop.
const managerStopTimeout = time.Minute

// RunManager starts mgr and returns a function that stops it and waits until it has
// stopped; the test's end calls it too. An error from the manager fails the test, and
// so does a manager that has not stopped within managerStopTimeout: one whose caches
// cannot sync (the role its user is bound to lacks a list or watch) does not stop,
// and the test would otherwise hang until go test's timeout.
func RunManager(t testing.TB, mgr ctrl.Manager) (stop func()) {
	t.Helper()
	return runManager(t, mgr, managerStopTimeout)
}

// runManager is RunManager with the bound on the wait for the manager to stop.
func runManager(t testing.TB, mgr ctrl.Manager, stopTimeout time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager: %v", err)
				}
			case <-time.After(stopTimeout):
				t.Errorf("the manager did not stop within %v: are its caches waiting for a list or watch its role does not allow?", stopTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
