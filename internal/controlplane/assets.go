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

// Package controlplane finds the binaries of the test control plane (etcd,
// kube-apiserver and, on request, kube-scheduler) that hack/setup-envtest.sh builds,
// and starts them, for the tests and the local mode.
package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Assets is the folder of the control plane's binaries: $KUBEBUILDER_ASSETS when
// set, else what hack/setup-envtest.sh of the repository at repoRoot prints (it
// builds them on first use, streaming its progress to stderr, and reuses its cache
// after).
func Assets(repoRoot string) (string, error) { return assets(repoRoot, false) }

// AssetsWithKubeScheduler is Assets with kube-scheduler of the same release in the
// folder too: the script builds it on first use (ESPO_KUBE_SCHEDULER=1; about 1.5
// minutes on 2 cores once kube-apiserver is built). A $KUBEBUILDER_ASSETS without
// kube-scheduler is an error that says how to build one.
func AssetsWithKubeScheduler(repoRoot string) (string, error) {
	dir, err := assets(repoRoot, true)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, kubeSchedulerCommand)); err != nil {
		return "", fmt.Errorf("no kube-scheduler in %s (KUBEBUILDER_ASSETS): run ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh "+
			"and set KUBEBUILDER_ASSETS to the folder it prints, or unset KUBEBUILDER_ASSETS", dir)
	}
	return dir, nil
}

// assets runs hack/setup-envtest.sh, asking for kube-scheduler too when withScheduler,
// unless $KUBEBUILDER_ASSETS is set.
func assets(repoRoot string, withScheduler bool) (string, error) {
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a, nil
	}
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "setup-envtest.sh"))
	cmd.Dir = repoRoot
	cmd.Stderr = os.Stderr
	if withScheduler {
		cmd.Env = append(os.Environ(), "ESPO_KUBE_SCHEDULER=1")
	}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/setup-envtest.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
