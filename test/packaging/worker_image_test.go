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

package packaging

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// workerDir is the PyTorch worker's image context.
var workerDir = filepath.Join("trainer", "worker", "torch")

// baseImageModules are the worker's imports that the CUDA PyTorch base image brings.
var baseImageModules = map[string]bool{"torch": true}

// distributionOf names the pip distribution of an import whose name differs from it.
var distributionOf = map[string]string{"PIL": "pillow", "google": "protobuf", "grpc": "grpcio"}

// runtimeOnly are pins the worker never imports, each needed by a pinned package at
// run time.
var runtimeOnly = map[string]string{
	"accelerate":  "transformers loads a model with device_map and low_cpu_mem_usage through it",
	"safetensors": "transformers reads model.safetensors weights through it",
}

// pinPattern is a requirements line that pins one distribution to one version.
var pinPattern = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+-]*)$`)

// importPattern matches a Python import statement, at any indentation (the worker
// imports transformers, peft and PIL inside the functions that need them).
var importPattern = regexp.MustCompile(`^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)`)

// workerPins reads the worker's requirements.txt: distribution name (lower case) to
// version. Every line that is not a comment must be an exact pin.
func workerPins(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(repoPath(workerDir, "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pins := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := pinPattern.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("requirements.txt:%d: %q is not an exact pin (name==version)", n, line)
			continue
		}
		pins[strings.ToLower(m[1])] = m[2]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pins
}

// workerImports returns the top-level modules the worker package imports, less its
// own and the standard library's, with the files that import each.
func workerImports(t *testing.T) map[string][]string {
	t.Helper()
	stdlib := pythonStdlib(t)
	files, err := filepath.Glob(repoPath(workerDir, "espo_worker", "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Python files in %s/espo_worker: %v", workerDir, err)
	}
	imports := map[string][]string{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			m := importPattern.FindStringSubmatch(line)
			if m == nil || stdlib[m[1]] || m[1] == "espo_worker" {
				continue
			}
			if name := filepath.Base(path); !slices.Contains(imports[m[1]], name) {
				imports[m[1]] = append(imports[m[1]], name)
			}
		}
	}
	return imports
}

// pythonStdlib returns the names of the standard library's top-level modules, as the
// machine's python3 lists them (sys.stdlib_module_names, Python 3.10 and later).
func pythonStdlib(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print('\\n'.join(sys.stdlib_module_names))").Output()
	if err != nil {
		t.Skipf("python3 cannot list its standard library (3.10 or later is needed): %v", err)
	}
	names := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		names[n] = true
	}
	return names
}

// TestWorkerImageBuildsOnABaseImageItIsGiven checks the PyTorch worker's Dockerfile: one
// stage from the BASE_IMAGE build argument (no registry host, no default), the pinned
// requirements installed with pip before the worker's code is copied, and the image
// started as the non-root user with python3 -m espo_worker.
func TestWorkerImageBuildsOnABaseImageItIsGiven(t *testing.T) {
	stages, globalArgs := parseDockerfileAt(t, repoPath(workerDir, "Dockerfile"))
	if len(stages) != 1 {
		t.Fatalf("%d stages, want 1", len(stages))
	}
	if def, ok := globalArgs["BASE_IMAGE"]; !ok || def != "" {
		t.Errorf("ARG BASE_IMAGE: present %v, default %q; want it given at build time, with no default", ok, def)
	}
	if got := stages[0].from.Next.Value; got != "${BASE_IMAGE}" {
		t.Errorf("FROM %s, want FROM ${BASE_IMAGE}", got)
	}
	var order []string
	var user, entrypoint []string
	for _, n := range stages[0].commands {
		line := strings.Join(args(n), " ")
		switch n.Value {
		case "copy", "run":
			order = append(order, n.Value+" "+line)
		case "user":
			user = args(n)
		case "entrypoint":
			entrypoint = args(n)
		}
	}
	installs := slices.IndexFunc(order, func(s string) bool {
		return strings.HasPrefix(s, "run ") && strings.Contains(s, "pip install") && strings.Contains(s, "-r /opt/espo/requirements.txt")
	})
	copiesReqs := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "copy requirements.txt ") })
	copiesCode := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "copy espo_worker ") })
	if copiesReqs < 0 || installs < 0 || copiesCode < 0 || !(copiesReqs < installs && installs < copiesCode) {
		t.Errorf("COPY and RUN steps %q: want requirements.txt copied, then pip install -r of it, then espo_worker copied", order)
	}
	if !slices.Equal(user, []string{"65532:65532"}) {
		t.Errorf("USER %q, want 65532:65532 (the trainer pods' user)", user)
	}
	if !slices.Equal(entrypoint, []string{"python3", "-m", "espo_worker"}) {
		t.Errorf("ENTRYPOINT %q, want python3 -m espo_worker", entrypoint)
	}
}

// TestWorkerImagePinsWhatTheWorkerImports checks requirements.txt against the worker's
// code: every package the worker imports is pinned to one version (or comes with the
// base image), and every pin is imported or needed at run time by a pinned package.
func TestWorkerImagePinsWhatTheWorkerImports(t *testing.T) {
	pins := workerPins(t)
	imports := workerImports(t)
	imported := map[string]bool{}
	for module, files := range imports {
		if baseImageModules[module] {
			continue
		}
		dist := module
		if d, ok := distributionOf[module]; ok {
			dist = d
		}
		dist = strings.ToLower(dist)
		imported[dist] = true
		if _, ok := pins[dist]; !ok {
			t.Errorf("%s imports %s, but requirements.txt does not pin %s: add %s==<version>", strings.Join(files, ", "), module, dist, dist)
		}
	}
	for dist := range pins {
		if _, ok := runtimeOnly[dist]; !ok && !imported[dist] {
			t.Errorf("requirements.txt pins %s, which the worker never imports: remove it, or say in this test which pinned package needs it", dist)
		}
	}
	for dist, why := range runtimeOnly {
		if _, ok := pins[dist]; !ok {
			t.Errorf("requirements.txt does not pin %s (%s)", dist, why)
		}
	}
	for _, want := range []string{"grpcio", "protobuf", "transformers"} {
		if !imported[want] {
			t.Errorf("found no import of %s in the worker: the import scan is broken", want)
		}
	}
}
