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

// EnvEnginePython names the variable that, when set, is the interpreter of the rollout
// engine's environment (vLLM's CPU build, hack/setup-python.sh --engine), as the
// worker reads it (espo_worker.rollout); hack/test.sh sets it too.
const EnvEnginePython = "ESPO_VLLM_PYTHON"

// Python returns the environment's interpreter: $ESPO_PYTHON when set, else what
// hack/setup-python.sh of the repository prints, which builds the environment on first
// use (a minute or two; its progress goes to stderr) and reuses it after. A test
// binary runs the script at most once.
func Python() (string, error) { return python() }

var python = sync.OnceValues(func() (string, error) { return setUp(EnvPython, "the PyTorch worker's test environment") })

// EnginePython returns the rollout engine environment's interpreter: $ESPO_VLLM_PYTHON
// when set, else what hack/setup-python.sh --engine prints, building it on first use.
func EnginePython() (string, error) { return enginePython() }

var enginePython = sync.OnceValues(func() (string, error) {
	return setUp(EnvEnginePython, "the rollout engine's environment", "--engine")
})

// setUp returns $env when set, else the last line hack/setup-python.sh with args
// prints (the environment's python), naming what in an error.
func setUp(env, what string, args ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "setup-python.sh"), args...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/setup-python.sh %s(%s): %w", strings.Join(append(args, ""), " "), what, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

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
