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

// Package testenv starts a real Kubernetes control plane (etcd and kube-apiserver built
// by hack/setup-envtest.sh) for tests, with the project's CRDs installed.
//
// Start one per test package from TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/test/repo"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme.
	Client client.Client
	// Scheme holds the built-in kinds and the project's API.
	Scheme *runtime.Scheme
	// RepoRoot is the repository's root folder.
	RepoRoot string

	env *envtest.Environment
}

// Main starts the control plane, stores it in *env, runs the package's tests and stops
// the control plane. It exits the process with the tests' status.
func Main(m *testing.M, env **Env) {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping:", err)
	}
	os.Exit(code)
}

// controlPlaneStartTimeout bounds the start of each test control plane process.
const controlPlaneStartTimeout = time.Minute

// Start starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS (building them with
// hack/setup-envtest.sh when the variable is unset) and installs config/crd/bases and
// the trainer's admission policy (config/policy).
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := controlplane.Assets(root)
	if err != nil {
		return nil, err
	}
	os.Setenv("KUBEBUILDER_ASSETS", assets)
	s := controllers.NewScheme()
	te := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// Test packages start their control planes while others train and compile:
		// on two busy cores kube-apiserver can take longer than envtest's 20 s.
		ControlPlaneStartTimeout: controlPlaneStartTimeout,
	}
	cfg, err := te.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when a later part of its
		// start fails (a CRD the API server refuses): stop what did start.
		_ = te.Stop()
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err == nil {
		err = InstallTrainerStatusPolicy(cfg, c)
	}
	if err != nil {
		_ = te.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: s, RepoRoot: root, env: te}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// RepoRoot finds the repository root: the nearest folder above the working directory
// that holds go.mod.
func RepoRoot() (string, error) { return repo.Root() }
