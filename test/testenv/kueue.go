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
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
)

// KueueCRDDir is the folder of Kueue's CRDs in the Kueue module the build uses (its
// config/components/crd/bases), found with go list from the repository root.
func KueueCRDDir(repoRoot string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the Kueue module (go list -m sigs.k8s.io/kueue): %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "components", "crd", "bases"), nil
}

// InstallKueueCRDs installs (or updates) Kueue's CRDs (KueueCRDDir) and waits for
// them to be served.
func (e *Env) InstallKueueCRDs() error {
	crds, err := KueueCRDDir(e.RepoRoot)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Kueue's CRDs from %s: %w", crds, err)
	}
	return nil
}

// AddKueueToScheme adds Kueue's API and configuration types, which SetupKueue's
// manager needs.
func AddKueueToScheme(s *runtime.Scheme) error {
	if err := kueuev1beta2.AddToScheme(s); err != nil {
		return err
	}
	return kueueconfig.AddToScheme(s)
}

// SetupKueue adds Kueue itself to mgr, as Kueue's own binary wires it with its
// default configuration: the core controllers (queues, flavors, Workloads) and the
// scheduler that admits and preempts. mgr's scheme needs AddKueueToScheme; mgr must
// reach the API server as an administrator, with an unrestricted cache.
func SetupKueue(ctx context.Context, mgr ctrl.Manager) error {
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	cc := schdcache.New(mgr.GetClient())
	expectations := preemptexpectations.New()
	requeuer := qcache.NewRequeuer()
	if err := mgr.Add(requeuer); err != nil {
		return err
	}
	queues := qcache.NewManager(mgr.GetClient(), cc, requeuer, qcache.WithPreemptionExpectations(expectations))
	cfg := &kueueconfig.Configuration{}
	mgr.GetScheme().Default(cfg)
	if name, err := core.SetupControllers(mgr, queues, cc, cfg, nil, expectations, nil); err != nil {
		return fmt.Errorf("kueue controller %s: %w", name, err)
	}
	go queues.CleanUpOnContext(ctx)
	go cc.CleanUpOnContext(ctx)
	//lint:ignore SA1019 Kueue's scheduler takes the old events API's recorder
	recorder := mgr.GetEventRecorderFor(constants.AdmissionName)
	return mgr.Add(scheduler.New(queues, cc, mgr.GetClient(), recorder, scheduler.WithPreemptionExpectations(expectations)))
}
