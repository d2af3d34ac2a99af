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
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd and kube-apiserver, started with controller-runtime's
// envtest from the binaries hack/setup-envtest.sh builds: RBAC authorization, the
// admission plugins kube-apiserver enables by default (ServiceAccount included, which
// envtest turns off), service-account tokens signed by keys of its own (TokenRequest
// works), and of kube-controller-manager only what gives every namespace its default
// service account and root CA ConfigMap (see namespaceDefaults), without which the
// ServiceAccount plugin refuses pods. No kubelet; kube-scheduler only when
// StartKubeScheduler starts it.
type ControlPlane struct {
	// Config reaches the API server as a cluster administrator.
	Config       *rest.Config
	env          *envtest.Environment
	admin        *envtest.AuthenticatedUser
	certDir      string // kube-apiserver's certificates and keys, kept across RestartAPIServer
	stopDefaults context.CancelFunc
}

// Start starts etcd and kube-apiserver from the folder assets (see Assets) and
// installs the CRDs of crdDirs, if any.
func Start(assets string, crdDirs ...string) (*ControlPlane, error) {
	return start(newEnvironment(assets, crdDirs))
}

// apiServerRestartTimeout is how long RestartAPIServer waits for kube-apiserver to
// serve again: on a loaded machine it takes longer than envtest's 20 s.
const apiServerRestartTimeout = 2 * time.Minute

// apiServerRestartStopTimeout is how long RestartAPIServer lets kube-apiserver drain
// before it kills it; with clients watching, kube-apiserver rarely exits on SIGTERM
// alone, and envtest's default (20 s) was a third of the fault test's run time.
const apiServerRestartStopTimeout = 5 * time.Second

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling update would; one
// still draining requests after apiServerRestartStopTimeout is killed, as if it had
// crashed) and starts it again on the same etcd, address, port, serving certificate
// and service-account keys: kubeconfigs and pod tokens issued before stay valid, and
// clients reconnect as they would to a restarted API server of a real cluster. The
// error is the start's: a stop that timed out still ends the old process.
func (c *ControlPlane) RestartAPIServer() error {
	s := c.env.ControlPlane.GetAPIServer()
	s.StopTimeout = apiServerRestartStopTimeout
	stopErr := s.Stop()
	s.StartTimeout = apiServerRestartTimeout
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w (stopping it: %v)", err, stopErr)
	}
	return nil
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

// startTimeout bounds the start of etcd, then of kube-apiserver: on two busy cores
// kube-apiserver can take longer than envtest's 20 s to serve /healthz (as it can to
// restart: apiServerRestartTimeout), and envtest then fails the start.
const startTimeout = time.Minute

// newEnvironment is envtest's environment with kube-apiserver's default admission
// plugins (envtest passes --disable-admission-plugins=ServiceAccount, which this
// drops) and startTimeout.
func newEnvironment(assets string, crdDirs []string) *envtest.Environment {
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: len(crdDirs) > 0,
		ControlPlaneStartTimeout: startTimeout}
	env.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
	return env
}

// start starts env with kube-apiserver's certificates in a folder of its own, which
// envtest keeps when kube-apiserver stops (it removes a folder it made itself), so that
// RestartAPIServer serves the same certificate and signs with the same keys.
func start(env *envtest.Environment) (*ControlPlane, error) {
	certDir, err := os.MkdirTemp("", "espo-kube-apiserver-")
	if err != nil {
		return nil, err
	}
	env.ControlPlane.GetAPIServer().CertDir = certDir
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &ControlPlane{Config: cfg, env: env, certDir: certDir, stopDefaults: cancel}
	if c.admin, err = env.AddUser(envtest.User{Name: "espo-local-admin", Groups: []string{"system:masters"}}, nil); err != nil {
		_ = c.Stop()
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := newNamespaceDefaults(client, cfg.CAData).start(ctx); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("giving the namespaces their default service account and root CA: %w", err)
	}
	return c, nil
}

// AdminKubeconfig is a kubeconfig for kubectl, as a cluster administrator.
func (c *ControlPlane) AdminKubeconfig() ([]byte, error) { return c.admin.KubeConfig() }

// Stop stops kube-apiserver and etcd and removes their data.
func (c *ControlPlane) Stop() error {
	c.stopDefaults()
	return errors.Join(c.env.Stop(), os.RemoveAll(c.certDir))
}
