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

package controlplane

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd and kube-apiserver, started with controller-runtime's
// envtest from the binaries hack/setup-envtest.sh builds: RBAC authorization,
// service-account tokens signed by keys of its own (TokenRequest works), and no
// kube-controller-manager or kubelet; kube-scheduler only when StartKubeScheduler
// starts it.
type ControlPlane struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	env    *envtest.Environment
	admin  *envtest.AuthenticatedUser
}

// Start starts etcd and kube-apiserver from the folder assets (see Assets) and
// installs the CRDs of crdDirs, if any.
func Start(assets string, crdDirs ...string) (*ControlPlane, error) {
	return start(newEnvironment(assets, crdDirs))
}

// StartWithPodGroups is Start with Kubernetes' own PodGroup API served: the
// GenericWorkload feature gate on and scheduling.k8s.io/v1beta1 enabled, which a
// kube-scheduler with the same gate (StartKubeScheduler) places as gangs.
func StartWithPodGroups(assets string, crdDirs ...string) (*ControlPlane, error) {
	env := newEnvironment(assets, crdDirs)
	env.ControlPlane.GetAPIServer().Configure().
		Set("feature-gates", GangFeatureGate).
		Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
	return start(env)
}

func newEnvironment(assets string, crdDirs []string) *envtest.Environment {
	return &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: len(crdDirs) > 0}
}

func start(env *envtest.Environment) (*ControlPlane, error) {
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	admin, err := env.AddUser(envtest.User{Name: "espo-local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &ControlPlane{Config: cfg, env: env, admin: admin}, nil
}

// AdminKubeconfig is a kubeconfig for kubectl, as a cluster administrator.
func (c *ControlPlane) AdminKubeconfig() ([]byte, error) { return c.admin.KubeConfig() }

// Stop stops kube-apiserver and etcd and removes their data.
func (c *ControlPlane) Stop() error { return c.env.Stop() }
