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
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// InstallKueueCRDs installs (or updates) Kueue's CRDs, from the Kueue module the
// build uses (its config/components/crd/bases), and waits for them to be served.
func (e *Env) InstallKueueCRDs() error {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = e.RepoRoot
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("finding the Kueue module (go list -m sigs.k8s.io/kueue): %w", err)
	}
	crds := filepath.Join(strings.TrimSpace(string(out)), "config", "components", "crd", "bases")
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Kueue's CRDs from %s: %w", crds, err)
	}
	return nil
}
