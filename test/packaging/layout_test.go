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
	"bytes"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the repository's Go module path.
const module = "github.com/espo-dev/espo-operator"

// layers says which of the module's packages a package may import, by path prefix
// (relative to the module): the first rule whose prefix matches a package applies.
// Imports point down this list's direction: the algorithm and the API at the bottom,
// the binary and the scripts at the top. A package of the module that matches no rule
// fails the test, so a new folder has to be placed here.
var layers = []struct {
	pkg     string
	mayUse  []string
	because string
}{
	{"api/", nil, "the API types stand alone"},
	{"config/", nil, "the shipped manifests stand alone"},
	{"espo", []string{"espo/internal/"}, "the algorithm imports the standard library and its own kernels only"},
	{"trainer/workerpb", nil, "generated protocol code"},
	{"trainer/environmentpb", nil, "generated protocol code"},
	// The trainer's parts, each below the loop in trainer/ that wires them: none
	// imports the loop, and each knows only the parts it names.
	{"trainer/checkpoint", nil, "checkpoints are files and digests"},
	{"trainer/dataset", []string{"espo"}, "the dataset format knows the algorithm's answers, nothing of training"},
	{"trainer/embedding", []string{"espo"}, "the embedding client knows the algorithm's embedder, nothing of training"},
	{"trainer/plan", []string{"api/"}, "the plan counts epochs and batches, and knows nothing of what is in them"},
	{"trainer/estimator", []string{"espo"}, "an estimator is a formula of the algorithm, chosen by name"},
	{"trainer/metrics", []string{"espo", "trainer/dataset"}, "the evaluator scores answers against episodes"},
	{"trainer/kubereporter", []string{"api/"}, "the reporter writes the status, and knows nothing of the loop"},
	{"trainer/worker", []string{"api/", "espo", "trainer/dataset", "trainer/workerpb"}, "a policy worker answers prompts and takes steps; it knows nothing of the loop"},
	{"trainer/environment", []string{"espo", "trainer/dataset", "trainer/environmentpb", "trainer/worker"}, "an environment shows screens and judges answers; it knows nothing of the loop"},
	{"trainer/permanent", []string{"api/", "trainer/worker"}, "the outcomes of input errors know the API and the workers' errors"},
	{"trainer/experience", []string{"api/", "espo", "trainer/dataset", "trainer/environment", "trainer/permanent", "trainer/plan", "trainer/worker"},
		"a source of experience gets its data, its environment and the policy: never the loop, the estimators or the rewards"},
	{"trainer/intents", []string{"api/", "espo", "trainer/dataset", "trainer/embedding", "trainer/experience", "trainer/permanent"},
		"the intent judge embeds what a batch or an evaluation scores; it knows nothing of the loop"},
	{"trainer/tracking", []string{"trainer/tracking"}, "a tracker records points and knows nothing of the loop"},
	{"trainer", []string{"api/", "espo"}, "the trainer runs in pods: it knows the API and the algorithm, not the controller"},
	{"controllers", []string{"api/", "config/"}, "the controller knows the API and the shipped manifests, not the trainer"},
	{"internal/", []string{"api/", "internal/"}, "the local cluster is the product's, not the controller's or the trainer's"},
	{"cmd/", []string{"api/", "controllers", "espo", "trainer", "internal/"}, "the binary wires the product; never hack/ or test/"},
	{"hack/", []string{"api/", "espo", "trainer", "internal/", "hack/"}, "scripts use the product"},
	{"test/", []string{"api/", "config/", "controllers", "espo", "trainer", "internal/", "test/"}, "tests use anything but scripts"},
}

// TestImportsPointDownTheLayers checks the non-test imports of every package of the
// module against layers: nothing outside hack/ imports hack/, no product package
// imports test/, and the algorithm, the API, the controller and the trainer import
// only what their layer may.
func TestImportsPointDownTheLayers(t *testing.T) {
	for pkg, imports := range moduleImports(t) {
		rule := -1
		for i, l := range layers {
			if under(pkg, l.pkg) {
				rule = i
				break
			}
		}
		if rule < 0 {
			t.Errorf("package %s is in no layer: add it to layers in test/packaging/layout_test.go", pkg)
			continue
		}
		for _, imp := range imports {
			if !under(imp, layers[rule].pkg) && !underAny(imp, layers[rule].mayUse) {
				t.Errorf("%s imports %s: %s (it may import %v)", pkg, imp, layers[rule].because, layers[rule].mayUse)
			}
		}
	}
}

// moduleImports maps each package of the module (relative path) to the packages of
// the module it imports, tests left out.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = env.RepoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, ok := relative(fields[0])
		if !ok {
			continue
		}
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := relative(imp); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages of the module, want the whole tree", len(graph))
	}
	return graph
}

// relative is path relative to the module, and whether it is in the module.
func relative(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// under reports whether pkg is prefix, or in it when prefix ends in "/"; a prefix
// without a slash also covers its subfolders ("trainer" covers "trainer/worker").
func under(pkg, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix)
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

func underAny(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(pkg, p) {
			return true
		}
	}
	return false
}

// apiAlias is the one name the API package is imported by, as kubebuilder scaffolds it.
const apiAlias = "trainingv1alpha1"

// TestTheAPIPackageHasOneImportName checks that every Go file (tests too) outside the
// API package imports it as trainingv1alpha1, so that a reader meets one name for it.
func TestTheAPIPackageHasOneImportName(t *testing.T) {
	cmd := exec.Command("go", "list", "-f",
		`{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}`, "./...")
	cmd.Dir = env.RepoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		dir := fields[0]
		if rel, _ := filepath.Rel(env.RepoRoot, dir); strings.HasPrefix(rel, "api"+string(filepath.Separator)) {
			continue
		}
		for _, name := range fields[1:] {
			file := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path != module+"/api/v1alpha1" {
					continue
				}
				checked++
				if imp.Name == nil || imp.Name.Name != apiAlias {
					t.Errorf("%s imports the API package without the name %s", file, apiAlias)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file imports the API package: the check looked at nothing")
	}
}
