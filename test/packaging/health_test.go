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
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/testenv"
)

// How GitOps tools read an ESPOJob's health: kstatus (sigs.k8s.io/cli-utils, what Flux
// and every kstatus-based tool use by default), Flux's healthCheckExprs as the user
// guide gives them (CEL), and Argo CD's health check (docs/argocd-health.lua). The
// guide's GitOps section has one table of what each reads for each phase; these tests
// hold the three tools, and the conditions the controller writes, to that table.

// healthRow is a row of the guide's health table: the status of the conditions Ready,
// Reconciling and Stalled, and what kstatus, Flux and Argo CD read.
type healthRow struct {
	Ready, Reconciling, Stalled string
	KStatus, Flux, ArgoCD       string
}

// healthColumns are the headers of the guide's health table, in order.
var healthColumns = []string{"phase", "Ready", "Reconciling", "Stalled", "kstatus", "Flux", "Argo CD"}

// guideHealthTable reads the guide's health table (the one whose header row is
// healthColumns) by phase. A cell's first word is its value ("False, JobPending" is
// False); backquotes are dropped.
func guideHealthTable(t *testing.T) map[trainingv1alpha1.JobPhase]healthRow {
	t.Helper()
	rows := map[trainingv1alpha1.JobPhase]healthRow{}
	inTable := false
	for _, line := range guideLines(t) {
		cells := tableCells(line)
		switch {
		case slices.Equal(cells, healthColumns):
			inTable = true
		case inTable && cells == nil:
			return rows
		case inTable && len(cells) == len(healthColumns) && !strings.HasPrefix(cells[0], "---"):
			first := func(i int) string { return strings.Trim(strings.Fields(cells[i])[0], ",") }
			rows[trainingv1alpha1.JobPhase(cells[0])] = healthRow{
				Ready: first(1), Reconciling: first(2), Stalled: first(3), KStatus: first(4), Flux: first(5), ArgoCD: first(6),
			}
		}
	}
	if len(rows) == 0 {
		t.Fatalf("docs/user-guide.md has no health table with the columns %v", healthColumns)
	}
	return rows
}

// tableCells splits a Markdown table row into its trimmed cells without backquotes,
// or returns nil for a line that is no table row.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
	}
	return cells
}

// guideLines returns the lines of docs/user-guide.md.
func guideLines(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(repoPath("docs", "user-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// fluxExprs are the CEL expressions of a Flux Kustomization's healthCheckExprs entry.
type fluxExprs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Current    string `json:"current"`
	Failed     string `json:"failed"`
	InProgress string `json:"inProgress"`
}

// guideFluxExprs extracts the ESPOJob entry of the healthCheckExprs the guide gives: the
// indented code block that holds "healthCheckExprs:", decoded as YAML.
func guideFluxExprs(t *testing.T) fluxExprs {
	t.Helper()
	lines := guideLines(t)
	at := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "healthCheckExprs:" })
	if at < 0 {
		t.Fatal("docs/user-guide.md has no healthCheckExprs block")
	}
	start, end := at, at
	for start > 0 && strings.HasPrefix(lines[start-1], "    ") {
		start--
	}
	for end < len(lines) && strings.HasPrefix(lines[end], "    ") {
		end++
	}
	var block strings.Builder
	for _, l := range lines[start:end] {
		block.WriteString(strings.TrimPrefix(l, "    ") + "\n")
	}
	var kustomization struct {
		Spec struct {
			HealthCheckExprs []fluxExprs `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(block.String()), &kustomization); err != nil {
		t.Fatalf("the guide's healthCheckExprs block is no Kustomization spec: %v\n%s", err, block.String())
	}
	for _, e := range kustomization.Spec.HealthCheckExprs {
		if e.APIVersion == trainingv1alpha1.GroupVersion.String() && e.Kind == "ESPOJob" {
			return e
		}
	}
	t.Fatalf("the guide's healthCheckExprs have no entry for %s ESPOJob", trainingv1alpha1.GroupVersion)
	return fluxExprs{}
}

// fluxHealth evaluates exprs on obj the way Flux's kustomize-controller does (RFC 0009):
// InProgress while status.observedGeneration differs from metadata.generation; then
// the expressions inProgress, failed and current, the first that is true wins, and
// InProgress when none is. The expressions are parsed (not type-checked) in Flux's CEL
// environment, with the object's top-level fields as variables. An expression that
// cannot be evaluated reads as Unknown, on which Flux keeps waiting.
func fluxHealth(t *testing.T, exprs fluxExprs, obj map[string]any) string {
	t.Helper()
	if observed, ok, _ := unstructured.NestedInt64(obj, "status", "observedGeneration"); ok {
		if generation, ok, _ := unstructured.NestedInt64(obj, "metadata", "generation"); ok && generation != observed {
			return string(status.InProgressStatus)
		}
	}
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name, expr string
		status     status.Status
	}{
		{"inProgress", exprs.InProgress, status.InProgressStatus},
		{"failed", exprs.Failed, status.FailedStatus},
		{"current", exprs.Current, status.CurrentStatus},
	} {
		if e.expr == "" {
			continue
		}
		ast, issues := env.Parse(e.expr)
		if issues.Err() != nil {
			t.Fatalf("the guide's Flux expression %s %q: %v", e.name, e.expr, issues.Err())
		}
		prog, err := env.Program(ast)
		if err != nil {
			t.Fatalf("the guide's Flux expression %s %q: %v", e.name, e.expr, err)
		}
		val, _, err := prog.Eval(obj)
		if err != nil {
			return string(status.UnknownStatus)
		}
		b, ok := val.(types.Bool)
		if !ok {
			t.Fatalf("the guide's Flux expression %s %q is %v, not a boolean", e.name, e.expr, val)
		}
		if b {
			return string(e.status)
		}
	}
	return string(status.InProgressStatus)
}

// readings is what the three tools read of one object.
type readings struct {
	KStatus        *status.Result
	Flux           string
	ArgoCD         health
	Ready          string // the conditions' status and reason ("False JobPending"), "-" if absent
	Reconciling    string
	Stalled        string
	Phase          trainingv1alpha1.JobPhase
	ObservedLatest bool // status.observedGeneration is metadata.generation
}

// readHealth computes kstatus, evaluates the guide's Flux expressions and runs the Argo
// CD health check on a job as the API server stores it.
func readHealth(t *testing.T, job *trainingv1alpha1.ESPOJob) readings {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	cond := func(typ string) string {
		c := meta.FindStatusCondition(job.Status.Conditions, typ)
		if c == nil {
			return "-"
		}
		return string(c.Status) + " " + c.Reason
	}
	return readings{
		KStatus: res, Flux: fluxHealth(t, guideFluxExprs(t), obj), ArgoCD: argoHealth(t, obj),
		Ready: cond("Ready"), Reconciling: cond("Reconciling"), Stalled: cond("Stalled"),
		Phase: job.Status.Phase, ObservedLatest: job.Status.ObservedGeneration == job.Generation,
	}
}

// checkHealth checks what the tools read of a job, as the API server stores it, and
// its conditions Ready, Reconciling and Stalled against the guide's health table. A
// job whose spec change the controller has not observed yet is not checked.
func checkHealth(t *testing.T, job *trainingv1alpha1.ESPOJob) readings {
	t.Helper()
	r := readHealth(t, job)
	if !r.ObservedLatest {
		return r
	}
	want, ok := guideHealthTable(t)[r.Phase]
	if !ok {
		t.Errorf("the guide's health table has no row for phase %q", r.Phase)
		return r
	}
	for _, c := range []struct{ what, got, want string }{
		{"Ready", firstWord(r.Ready), want.Ready},
		{"Reconciling", firstWord(r.Reconciling), want.Reconciling},
		{"Stalled", firstWord(r.Stalled), want.Stalled},
		{"kstatus", r.KStatus.Status.String(), want.KStatus},
		{"Flux", r.Flux, want.Flux},
		{"Argo CD", r.ArgoCD.Status, want.ArgoCD},
	} {
		if c.got != c.want {
			t.Errorf("phase %s: %s reads %s, the guide says %s (conditions %v)", r.Phase, c.what, c.got, c.want, job.Status.Conditions)
		}
	}
	if r.ArgoCD.Message == "" || r.KStatus.Message == "" {
		t.Errorf("phase %s: Argo CD's message %q or kstatus' %q is empty", r.Phase, r.ArgoCD.Message, r.KStatus.Message)
	}
	return r
}

// firstWord is the first word of s, or s.
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

// jobHistory records every version of the ESPOJobs of a namespace that the API server
// stores, from a watch: each status the controller writes, however briefly it lasts.
type jobHistory struct {
	mu       sync.Mutex
	versions []*trainingv1alpha1.ESPOJob
}

// watchJobs records the ESPOJobs of namespace ns until the test ends.
func watchJobs(t *testing.T, ns string) *jobHistory {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := testenv.WatchFromNow(context.Background(), c, &trainingv1alpha1.ESPOJobList{}, ns)
	if err != nil {
		t.Fatal(err)
	}
	h := &jobHistory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if job, ok := ev.Object.(*trainingv1alpha1.ESPOJob); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				h.mu.Lock()
				h.versions = append(h.versions, job)
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return h
}

// seen returns the recorded versions of a job.
func (h *jobHistory) seen(name string) []*trainingv1alpha1.ESPOJob {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*trainingv1alpha1.ESPOJob
	for _, j := range h.versions {
		if j.Name == name {
			out = append(out, j)
		}
	}
	return out
}

// phases returns the phases a job went through, in order, without repeats.
func (h *jobHistory) phases(name string) []trainingv1alpha1.JobPhase {
	var out []trainingv1alpha1.JobPhase
	for _, j := range h.seen(name) {
		if p := j.Status.Phase; p != "" && (len(out) == 0 || out[len(out)-1] != p) {
			out = append(out, p)
		}
	}
	return out
}

// everyPhase is the order the health table is printed in.
var everyPhase = []trainingv1alpha1.JobPhase{
	trainingv1alpha1.PhasePending, trainingv1alpha1.PhaseRunning, trainingv1alpha1.PhaseRestarting,
	trainingv1alpha1.PhaseSuspended, trainingv1alpha1.PhaseSucceeded, trainingv1alpha1.PhaseFailed,
}

// TestHealthOfEveryPhase runs the real controller against the test API server with two
// jobs: one through Suspended, Pending, Running, a pod failure (Restarting), Running
// again and Succeeded; one with backoffLimit 0 through Pending to Failed. Every version
// of the jobs the API server stored (watched, so even the short-lived Restarting is
// seen) is read by kstatus, the guide's Flux expressions and the Argo CD health check,
// and checked with its conditions against the guide's health table, which is logged
// as read.
func TestHealthOfEveryPhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "health"
	ensureNamespace(t, ns, nil)
	history := watchJobs(t, ns)
	env.StartManager(t, env.Config, ns, nil)

	apply := func(u *unstructured.Unstructured) {
		t.Helper()
		u.SetNamespace(ns)
		g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(gitopsManager))).To(Succeed())
	}
	waitPhase := func(key client.ObjectKey, p trainingv1alpha1.JobPhase) {
		t.Helper()
		g.Eventually(func() trainingv1alpha1.JobPhase { return getJob(g, key).Status.Phase }, stepTimeout, poll).Should(Equal(p))
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}

	// The job that succeeds, after a suspend and a restart.
	ok := readSample(t, "training_v1alpha1_espojob_minimal.yaml")
	ok.SetName("health-ok")
	okKey := client.ObjectKey{Namespace: ns, Name: ok.GetName()}
	g.Expect(unstructured.SetNestedField(ok.Object, true, "spec", "runPolicy", "suspend")).To(Succeed())
	apply(ok.DeepCopy())
	waitPhase(okKey, trainingv1alpha1.PhaseSuspended)
	g.Expect(unstructured.SetNestedField(ok.Object, false, "spec", "runPolicy", "suspend")).To(Succeed())
	apply(ok.DeepCopy())
	waitPhase(okKey, trainingv1alpha1.PhasePending)
	setPodStatus(g, trainerPod(g, okKey, 0), running)
	waitPhase(okKey, trainingv1alpha1.PhaseRunning)
	setPodStatus(g, trainerPod(g, okKey, 0), exited(1, "worker lost"))
	g.Eventually(func() []trainingv1alpha1.JobPhase { return history.phases(okKey.Name) }, stepTimeout, poll).
		Should(ContainElement(trainingv1alpha1.PhaseRestarting))
	g.Eventually(func() int32 { return getJob(g, okKey).Status.Restarts }, stepTimeout, poll).Should(Equal(int32(1)))
	g.Eventually(func() string { return trainerPod(g, okKey, 0).Labels[controllers.LabelRestartAttempt] }, stepTimeout, poll).Should(Equal("1"))
	setPodStatus(g, trainerPod(g, okKey, 0), running)
	waitPhase(okKey, trainingv1alpha1.PhaseRunning)
	setPodStatus(g, trainerPod(g, okKey, 0), exited(0, ""))
	waitPhase(okKey, trainingv1alpha1.PhaseSucceeded)

	// The job that fails at its first pod failure.
	bad := readSample(t, "training_v1alpha1_espojob_minimal.yaml")
	bad.SetName("health-failed")
	badKey := client.ObjectKey{Namespace: ns, Name: bad.GetName()}
	g.Expect(unstructured.SetNestedField(bad.Object, int64(0), "spec", "runPolicy", "backoffLimit")).To(Succeed())
	apply(bad)
	waitPhase(badKey, trainingv1alpha1.PhasePending)
	setPodStatus(g, trainerPod(g, badKey, 0), exited(1, "dataset smartspot: episode 3: no steps"))
	waitPhase(badKey, trainingv1alpha1.PhaseFailed)

	// Every stored version, once the watch has delivered the last ones.
	for key, last := range map[client.ObjectKey]trainingv1alpha1.JobPhase{okKey: trainingv1alpha1.PhaseSucceeded, badKey: trainingv1alpha1.PhaseFailed} {
		g.Eventually(func() []trainingv1alpha1.JobPhase { return history.phases(key.Name) }, stepTimeout, poll).Should(ContainElement(last))
	}
	if got, want := history.phases(okKey.Name), []trainingv1alpha1.JobPhase{
		trainingv1alpha1.PhaseSuspended, trainingv1alpha1.PhasePending, trainingv1alpha1.PhaseRunning, trainingv1alpha1.PhaseRestarting,
		trainingv1alpha1.PhasePending, trainingv1alpha1.PhaseRunning, trainingv1alpha1.PhaseSucceeded,
	}; !slices.Equal(got, want) {
		t.Errorf("job %s went through %v, want %v", okKey.Name, got, want)
	}
	versions := append(history.seen(okKey.Name), history.seen(badKey.Name)...)
	first := map[trainingv1alpha1.JobPhase]readings{}
	for _, job := range versions {
		if r := readHealth(t, job); r.ObservedLatest && r.Phase != "" {
			if _, ok := first[r.Phase]; !ok {
				first[r.Phase] = r
			}
		}
	}
	t.Logf("%d stored versions; the first of each phase:\n%s", len(versions), healthTable(first))
	for _, p := range everyPhase {
		if _, ok := first[p]; !ok {
			t.Errorf("no stored version in phase %s", p)
		}
	}
	for _, job := range versions {
		if job.Status.Phase == "" {
			continue // not written by the controller yet: see TestHealthBeforeTheController
		}
		r := checkHealth(t, job)
		if failed := meta.FindStatusCondition(job.Status.Conditions, trainingv1alpha1.ConditionFailed); r.ObservedLatest &&
			r.Phase == trainingv1alpha1.PhaseFailed && r.KStatus.Message != failed.Message {
			t.Errorf("kstatus of a Failed job says %q, want the Failed condition's message %q", r.KStatus.Message, failed.Message)
		}
	}
}

// healthTable formats the readings of each phase as a Markdown table.
func healthTable(byPhase map[trainingv1alpha1.JobPhase]readings) string {
	var b strings.Builder
	b.WriteString("| phase | Ready | Reconciling | Stalled | kstatus | Flux | Argo CD |\n|---|---|---|---|---|---|---|\n")
	for _, p := range everyPhase {
		r, ok := byPhase[p]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s: %s | %s | %s: %s |\n", p, r.Ready, r.Reconciling, r.Stalled,
			r.KStatus.Status, r.KStatus.Message, r.Flux, r.ArgoCD.Status, r.ArgoCD.Message)
	}
	return b.String()
}

// TestHealthBeforeTheController reads jobs the controller has not written a status for,
// or not for their latest spec. A new job, as the API server serves it before the
// controller's first status write (with status.observedGeneration defaulted to 0),
// reads InProgress in kstatus (the generation is not observed yet) and Flux, and
// Progressing in Argo CD; without that default kstatus would read it Current (its rule
// for resources without conditions) and Flux could not evaluate its expressions. A
// spec change not observed yet reads InProgress, except in Argo CD for a finished job.
// An empty string is not checked.
func TestHealthBeforeTheController(t *testing.T) {
	exprs := guideFluxExprs(t)
	served := newJobAsServed(t)
	if og, found, _ := unstructured.NestedInt64(served, "status", "observedGeneration"); !found || og != 0 {
		t.Errorf("a new job is served with status %v, want observedGeneration 0", served["status"])
	}
	job := func(generation int64, st map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": trainingv1alpha1.GroupVersion.String(), "kind": "ESPOJob",
			"metadata": map[string]any{"name": "demo", "namespace": "ml", "generation": generation},
			"status":   st,
		}
	}
	cond := func(typ, status, reason string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": reason}
	}
	for _, tc := range []struct {
		name                string
		obj                 map[string]any
		kstatus, flux, argo string
	}{
		{"a new job, as the API server serves it", served, "InProgress", "InProgress", "Progressing"},
		{"a status without a phase", job(1, map[string]any{}), "", "InProgress", "Progressing"},
		{"a spec change not observed, running", job(2, map[string]any{"phase": "Running", "observedGeneration": int64(1), "conditions": []any{
			cond("Running", "True", "PodsRunning"), cond("Ready", "False", "JobRunning"), cond("Reconciling", "True", "JobRunning")}}),
			"InProgress", "InProgress", "Progressing"},
		{"a spec change not observed, succeeded", job(2, map[string]any{"phase": "Succeeded", "observedGeneration": int64(1), "conditions": []any{
			cond("Succeeded", "True", "Completed"), cond("Ready", "True", "Completed")}}),
			"InProgress", "InProgress", "Healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := status.Compute(&unstructured.Unstructured{Object: tc.obj})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ tool, got, want string }{
				{"kstatus", res.Status.String(), tc.kstatus},
				{"Flux", fluxHealth(t, exprs, tc.obj), tc.flux},
				{"Argo CD", argoHealth(t, tc.obj).Status, tc.argo},
			} {
				if c.want != "" && c.got != c.want {
					t.Errorf("%s reads %s, want %s", c.tool, c.got, c.want)
				}
			}
		})
	}
}

// newJobAsServed creates the minimal sample in a namespace no controller watches and
// returns it as the API server serves it.
func newJobAsServed(t *testing.T) map[string]any {
	t.Helper()
	ctx := context.Background()
	ns := "health-unwatched"
	ensureNamespace(t, ns, nil)
	job := readSample(t, "training_v1alpha1_espojob_minimal.yaml")
	job.SetNamespace(ns)
	if err := env.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	served := &unstructured.Unstructured{}
	served.SetGroupVersionKind(job.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), served); err != nil {
		t.Fatal(err)
	}
	return served.Object
}
