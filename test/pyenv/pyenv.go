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

// Package pyenv finds the Python environment that the PyTorch worker's tests run in:
// the one hack/setup-python.sh builds, outside the repository, from the worker's locks
// (trainer/worker/torch/requirements.txt and requirements-test.txt).
package pyenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/espo-dev/espo-operator/test/repo"
)

// EnvPython names the variable that, when set, is the environment's interpreter
// (hack/test.sh sets it once for every package).
const EnvPython = "ESPO_PYTHON"

// Python returns the environment's interpreter: $ESPO_PYTHON when set, else what
// hack/setup-python.sh of the repository prints, which builds the environment on first
// use (a minute or two; its progress goes to stderr) and reuses it after. A test
// binary runs the script at most once.
func Python() (string, error) { return python() }

var python = sync.OnceValues(func() (string, error) {
	if p := os.Getenv(EnvPython); p != "" {
		return p, nil
	}
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "setup-python.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/setup-python.sh (the PyTorch worker's test environment): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
})

// Require returns the environment's interpreter, or fails the test saying why there is
// none: the tests of the worker are part of the suite, not skipped.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Python()
	if err != nil {
		t.Fatalf("no Python environment for the PyTorch worker: %v", err)
	}
	return p
}
