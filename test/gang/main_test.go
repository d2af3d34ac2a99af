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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/test/testenv"
)

// gangFeature is the feature gate of the PodGroup API and of the scheduler's gang
// plugin.
const gangFeature = "GenericWorkload=true"

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
	os.Setenv("ESPO_KUBE_SCHEDULER", "1")
	assets, err := controlplane.Assets(root)
	if err != nil {
		return 0, err
	}
	scheduler := filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(scheduler); err != nil {
		return 0, fmt.Errorf("no kube-scheduler in %s (KUBEBUILDER_ASSETS): run ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh and use the folder it prints", assets)
	}
	s := controllers.NewScheme()
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	te.ControlPlane.GetAPIServer().Configure().
		Set("feature-gates", gangFeature).
		Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
	cfg, err := te.Start()
	if err != nil {
		return 0, fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { _ = te.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return 0, err
	}
	env = &testenv.Env{Config: cfg, Client: c, Scheme: s, RepoRoot: root}

	stop, err := startScheduler(te, scheduler)
	if err != nil {
		return 0, err
	}
	defer stop()
	return m.Run(), nil
}

// startScheduler runs kube-scheduler against the control plane, as a cluster
// administrator, with the gang feature on and no leader election or serving port, its
// output into schedulerLog, and returns how to stop it.
func startScheduler(te *envtest.Environment, binary string) (func(), error) {
	user, err := te.AddUser(envtest.User{Name: "kube-scheduler-under-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "espo-gang-scheduler-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	schedulerLog = filepath.Join(dir, "kube-scheduler.log")
	out, err := os.Create(schedulerLog)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "--kubeconfig="+path, "--leader-elect=false", "--secure-port=0",
		"--feature-gates="+gangFeature, "-v=2")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting kube-scheduler: %w", err)
	}
	return func() {
		cancel()
		_ = cmd.Wait()
		out.Close()
		os.RemoveAll(dir)
	}, nil
}
