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

// Package gang_test runs the trainer pods of ESPOJobs with the podGroup gang policy
// against a control plane that serves Kubernetes' own PodGroup API (the GenericWorkload
// feature, beta and off by default in 1.37) and a real kube-scheduler of the same
// release with the feature on, which enables its GangScheduling plugin. Both are
// built and cached by hack/setup-envtest.sh (ESPO_KUBE_SCHEDULER=1).
package gang_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/test/testenv"
)

var (
	env *testenv.Env
	// schedulerLog is kube-scheduler's output, shown when a test fails.
	schedulerLog string
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gang:", err)
		code = 1
	}
	os.Exit(code)
}

// run starts the control plane with the PodGroup API, kube-scheduler with the gang
// plugin, runs the tests and stops both.
func run(m *testing.M) (int, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return 0, err
	}
	assets, err := controlplane.AssetsWithKubeScheduler(root)
	if err != nil {
		return 0, err
	}
	cp, err := controlplane.StartWithPodGroups(assets, filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = cp.Stop() }()
	s := controllers.NewScheme()
	c, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		return 0, err
	}
	if err := testenv.InstallTrainerStatusPolicy(cp.Config, c); err != nil {
		return 0, err
	}
	env = &testenv.Env{Config: cp.Config, Client: c, Scheme: s, RepoRoot: root}

	dir, err := os.MkdirTemp("", "espo-gang-scheduler-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	scheduler, err := cp.StartKubeScheduler(assets, dir)
	if err != nil {
		return 0, err
	}
	defer scheduler.Stop()
	schedulerLog = scheduler.LogPath
	return m.Run(), nil
}
