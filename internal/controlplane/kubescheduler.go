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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// GangFeatureGate turns on Kubernetes' PodGroup API on the API server and, on
// kube-scheduler, its GangScheduling plugin (1.37 has no gate of its own for it).
const GangFeatureGate = "GenericWorkload=true"

// kubeSchedulerCommand is kube-scheduler's file in the assets folder.
const kubeSchedulerCommand = "kube-scheduler"

// KubeScheduler is a running kube-scheduler (StartKubeScheduler).
type KubeScheduler struct {
	// LogPath is the file of its output.
	LogPath string
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
}

// StartKubeScheduler runs kube-scheduler from the folder assets (see
// AssetsWithKubeScheduler) against the control plane, as a cluster administrator of
// its own, with the gang feature on (GangFeatureGate; a control plane started by
// Start does not serve PodGroups, and the scheduler then places pods one by one), no
// leader election and no serving port. It writes its kubeconfig and its log
// (LogPath) into dir. It runs as a child of this process, in its process group, until
// Stop.
func (c *ControlPlane) StartKubeScheduler(assets, dir string) (*KubeScheduler, error) {
	user, err := c.env.AddUser(envtest.User{Name: "espo-kube-scheduler", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dir, "kube-scheduler.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	k := &KubeScheduler{LogPath: filepath.Join(dir, "kube-scheduler.log"), done: make(chan struct{})}
	out, err := os.Create(k.LogPath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(assets, kubeSchedulerCommand), "--kubeconfig="+kubeconfigPath,
		"--leader-elect=false", "--secure-port=0", "--feature-gates="+GangFeatureGate, "-v=2")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		out.Close()
		return nil, fmt.Errorf("starting kube-scheduler: %w", err)
	}
	k.cancel = cancel
	go func() {
		defer close(k.done)
		err := cmd.Wait()
		out.Close()
		if ctx.Err() == nil {
			k.err = fmt.Errorf("kube-scheduler exited (%v); its log is %s", err, k.LogPath)
		}
	}()
	return k, nil
}

// Done is closed once kube-scheduler has exited; Err then says why.
func (k *KubeScheduler) Done() <-chan struct{} { return k.done }

// Err is nil while kube-scheduler runs and after Stop, else why it ended on its own.
func (k *KubeScheduler) Err() error {
	select {
	case <-k.done:
		return k.err
	default:
		return nil
	}
}

// Stop kills kube-scheduler and waits until it has exited.
func (k *KubeScheduler) Stop() {
	k.cancel()
	<-k.done
}
