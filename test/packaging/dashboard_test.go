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
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

// dashboardPanel is a panel, or a row holding panels.
type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// registeredMetrics returns the metric names the code registers: espo_* from
// trainer/metrics.go and controllers/metrics.go, and controller_runtime_* from the
// controller-runtime module the operator is built with.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	literal := regexp.MustCompile(`(?:Name:\s*|NewDesc\(|jobCounter\()"((?:espo|controller_runtime)_[a-z0-9_]+)"`)
	files := []string{repoPath("trainer", "metrics.go"), repoPath("controllers", "metrics.go")}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("locating controller-runtime: %v", err)
	}
	crFiles, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "pkg", "internal", "controller", "metrics", "*.go"))
	if err != nil || len(crFiles) == 0 {
		t.Fatalf("controller-runtime's controller metrics not found: %v", err)
	}
	names := map[string]bool{}
	for _, f := range append(files, crFiles...) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
	}
	return names
}

// TestGrafanaDashboard checks docs/grafana-dashboard.json: valid JSON, every panel
// placed and querying the data source variable, every PromQL expression naming only
// metrics the code registers, and every espo_* metric on some panel.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(repoPath("docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("docs/grafana-dashboard.json is not valid JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, want := range []string{"datasource", "namespace", "espojob"} {
		if !slices.Contains(vars, want) {
			t.Errorf("the dashboard lacks the variable $%s", want)
		}
	}

	registered := registeredMetrics(t)
	for _, want := range []string{"espo_trainer_step_reward", "espo_trainer_cout_reward", "espo_trainer_kl",
		"espo_trainer_accuracy", "espo_jobs", "espo_jobs_restarted_total", "controller_runtime_reconcile_total"} {
		if !registered[want] {
			t.Fatalf("the metric %s is not registered by the code, or the test no longer finds it", want)
		}
	}
	// Any identifier followed by a selector is a metric; so is any espo_ or
	// controller_runtime_ identifier.
	selector := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)
	ident := regexp.MustCompile(`\b((?:espo|controller_runtime)_[a-zA-Z0-9_:]*)`)
	used := map[string]bool{}
	ids := map[int]bool{}
	var visit func(ps []dashboardPanel)
	visit = func(ps []dashboardPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d is not unique", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				t.Errorf("panel %q has no place on the grid", p.Title)
			}
			if p.Type == "row" {
				visit(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not query the $datasource variable", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				var names []string
				for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
					names = append(names, m[1])
				}
				for _, m := range ident.FindAllStringSubmatch(tg.Expr, -1) {
					names = append(names, m[1])
				}
				if len(names) == 0 {
					t.Errorf("panel %q: %q names no metric", p.Title, tg.Expr)
				}
				for _, n := range names {
					base := n
					for _, suffix := range []string{"_bucket", "_sum", "_count"} {
						if b, ok := strings.CutSuffix(n, suffix); ok && registered[b] {
							base = b
						}
					}
					if !registered[base] {
						t.Errorf("panel %q queries %s, which the code does not register", p.Title, n)
					}
					used[base] = true
				}
			}
		}
	}
	visit(d.Panels)
	for name := range registered {
		if strings.HasPrefix(name, "espo_") && !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}
