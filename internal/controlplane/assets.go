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

// Package envtestassets finds the binaries of the test control plane (etcd and
// kube-apiserver) that hack/setup-envtest.sh builds, for the tests and the local mode.
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
func Assets(repoRoot string) (string, error) {
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a, nil
	}
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "setup-envtest.sh"))
	cmd.Dir = repoRoot
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/setup-envtest.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
