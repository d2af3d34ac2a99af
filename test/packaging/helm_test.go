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
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"
)

// The release the chart tests install: named so that the chart's object names are
// the kustomize install's.
const (
	releaseName      = "espo"
	releaseNamespace = operatorNamespace
)

// loadChart loads charts/espo-operator.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(repoPath("charts", "espo-operator"))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// renderChart renders the chart as `helm template` does for an install of
// releaseName into ns with the given values (YAML) over values.yaml, the values checked
// against values.schema.json. It returns the templates' objects and the rendered NOTES.
func renderChart(t *testing.T, ns, values string) ([]*unstructured.Unstructured, string) {
	t.Helper()
	objs, notes, err := tryRenderChart(t, ns, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs, notes
}

// tryRenderChart is renderChart returning the error of the values or the templates.
func tryRenderChart(t *testing.T, ns, values string) ([]*unstructured.Unstructured, string, error) {
	t.Helper()
	ch := loadChart(t)
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	rv, err := util.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: releaseName, Namespace: ns, Revision: 1, IsInstall: true}, common.DefaultCapabilities, false)
	if err != nil {
		return nil, "", err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	notes := ""
	for _, name := range names {
		switch base := path.Base(name); {
		case base == "NOTES.txt":
			notes = files[name]
		case strings.HasPrefix(base, "_") || !strings.HasSuffix(base, ".yaml"):
		default:
			objs = append(objs, decodeManifests(t, []byte(files[name]))...)
		}
	}
	return objs, notes, nil
}

// chartCRDs returns the CRDs of the chart's crds/ folder.
func chartCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, crd := range loadChart(t).CRDObjects() {
		out = append(out, decodeManifests(t, crd.File.Data)...)
	}
	return out
}

// TestHelmLint runs Helm's linter on the chart, as `helm lint --strict` does.
func TestHelmLint(t *testing.T) {
	l := lint.RunAll(repoPath("charts", "espo-operator"), nil, releaseNamespace)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

// TestHelmDefault renders the chart with its default values, checks the manager's
// Deployment as for kustomize, and dry-runs the CRDs and the render against the API
// server.
func TestHelmDefault(t *testing.T) {
	objs, notes := renderChart(t, releaseNamespace, "")
	if len(byKind(objs, "ServiceMonitor")) != 0 || len(byKind(objs, "PodMonitor")) != 0 {
		t.Error("monitors are rendered by default; they need the Prometheus Operator's CRDs")
	}
	svc := toTyped[corev1.Service](t, find(t, objs, "Service", "espo-controller-manager-metrics-service"))
	dep := toTyped[appsv1.Deployment](t, find(t, objs, "Deployment", "espo-controller-manager"))
	checkManagerDeployment(t, dep, find(t, objs, "ServiceAccount", "espo-manager").GetName(), svc)
	c := dep.Spec.Template.Spec.Containers[0]
	if want := "--trainer-image=" + c.Image; !slices.Contains(c.Args, want) {
		t.Errorf("args %q lack %s: the trainer pods must run the operator's image by default", c.Args, want)
	}
	for _, want := range []string{"--network-policy=true", "--trainer-metrics-namespaces=monitoring"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %s: jobs are fenced in by default, Prometheus' namespace may scrape them", c.Args, want)
		}
	}
	if slices.Contains(c.Args, "--kueue") {
		t.Errorf("args %q hold --kueue: the Kueue integration is off unless kueue.enabled", c.Args)
	}
	if !strings.Contains(notes, "kubectl wait --for=condition=Succeeded") || !strings.Contains(notes, "espo-metrics-reader") {
		t.Errorf("NOTES.txt does not say how to wait for a job and who may read the metrics:\n%s", notes)
	}
	ensureNamespace(t, releaseNamespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	applyDryRun(t, append(chartCRDs(t), objs...))
}

// TestHelmValues renders the chart with every value changed from its default, checks
// that each change shows, and dry-runs the render.
func TestHelmValues(t *testing.T) {
	const values = `
image: {repository: example.invalid/espo-operator, tag: v1.2.3, pullPolicy: Always}
imagePullSecrets: [{name: pull}]
fullnameOverride: ml
replicaCount: 2
leaderElection: {enabled: true, namespace: espo-leases}
logFormat: text
trainer: {image: example.invalid/espo-trainer:v1}
cudaWorker: {image: example.invalid/espo-cuda:v1}
networkPolicy: {enabled: false, metricsNamespaces: [prom, observability]}
kueue: {enabled: true}
metrics: {enabled: true, port: 9443, secure: true, service: {port: 443, annotations: {a: b}}}
serviceMonitor: {enabled: true, labels: {release: prom}, interval: 15s, scrapeTimeout: 10s}
healthProbe: {port: 9081}
resources: {requests: {cpu: 200m, memory: 256Mi}, limits: {memory: 1Gi}}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: ops, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: ops, operator: Exists}]}]}}}
priorityClassName: system-cluster-critical
podAnnotations: {note: hello}
podLabels: {team: ml}
serviceAccount: {create: true, name: espo-sa, annotations: {iam: role}}
extraArgs: [--max-concurrent-reconciles=32, --kube-api-qps=100]
`
	const ns = "espo-values"
	objs, _ := renderChart(t, ns, values)
	dep := toTyped[appsv1.Deployment](t, find(t, objs, "Deployment", "ml-controller-manager"))
	spec := dep.Spec.Template.Spec
	c := spec.Containers[0]
	for _, want := range []string{"--leader-elect=true", "--leader-election-namespace=espo-leases", "--metrics-bind-address=:9443",
		"--health-probe-bind-address=:9081", "--log-format=text", "--trainer-image=example.invalid/espo-trainer:v1",
		"--cuda-worker-image=example.invalid/espo-cuda:v1", "--max-concurrent-reconciles=32", "--kube-api-qps=100",
		"--network-policy=false", "--trainer-metrics-namespaces=prom,observability", "--kueue"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
	}
	switch {
	case *dep.Spec.Replicas != 2:
		t.Errorf("replicas %d", *dep.Spec.Replicas)
	case c.Image != "example.invalid/espo-operator:v1.2.3" || c.ImagePullPolicy != corev1.PullAlways:
		t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
	case spec.NodeSelector["kubernetes.io/os"] != "linux" || len(spec.Tolerations) != 1 || spec.Affinity == nil:
		t.Error("nodeSelector, tolerations or affinity missing")
	case spec.PriorityClassName != "system-cluster-critical" || len(spec.ImagePullSecrets) != 1:
		t.Error("priorityClassName or imagePullSecrets missing")
	case spec.ServiceAccountName != "espo-sa" || dep.Spec.Template.Labels["team"] != "ml" || dep.Spec.Template.Annotations["note"] != "hello":
		t.Error("service account, pod labels or pod annotations missing")
	case c.Resources.Requests.Cpu().String() != "200m" || c.Resources.Limits.Memory().String() != "1Gi":
		t.Errorf("resources %v", c.Resources)
	}
	svc := toTyped[corev1.Service](t, find(t, objs, "Service", "ml-controller-manager-metrics-service"))
	if svc.Spec.Ports[0].Port != 443 || svc.Annotations["a"] != "b" {
		t.Errorf("metrics Service %+v", svc.Spec.Ports)
	}
	checkManagerDeployment(t, dep, "espo-sa", nil)
	checkMonitors(t, objs, svc)
	if ms := byKind(objs, "ServiceMonitor"); ms[0].GetLabels()["release"] != "prom" {
		t.Error("serviceMonitor.labels are not on the ServiceMonitor")
	}
	lease := find(t, objs, "Role", "ml-leader-election-role")
	if lease.GetNamespace() != "espo-leases" {
		t.Errorf("the leader election Role is in %s, want the lease's namespace", lease.GetNamespace())
	}
	ensureNamespace(t, ns, nil)
	ensureNamespace(t, "espo-leases", nil)
	installMonitoringCRDs(t)
	applyDryRun(t, objs)
}

// TestHelmOptionalParts turns the optional parts off: metrics, leader election,
// monitors, the service account and RBAC.
func TestHelmOptionalParts(t *testing.T) {
	objs, notes := renderChart(t, releaseNamespace, `
metrics: {enabled: false}
leaderElection: {enabled: false}
serviceMonitor: {enabled: true, trainers: {enabled: false}}
serviceAccount: {create: false, name: existing}
rbac: {create: false}
replicaCount: 2
`)
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	if len(kinds) != 1 || !kinds["Deployment"] {
		t.Errorf("rendered %v, want only the Deployment", kinds)
	}
	c := toTyped[appsv1.Deployment](t, find(t, objs, "Deployment", "espo-controller-manager")).Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--metrics-bind-address=0", "--leader-elect=false"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
	}
	if !strings.Contains(notes, "WARNING") {
		t.Error("NOTES.txt does not warn about two replicas without leader election")
	}
	applyDryRun(t, objs)
}

// TestHelmSchema checks that values.schema.json refuses wrong values.
func TestHelmSchema(t *testing.T) {
	for _, bad := range []string{
		`replicaCount: two`,
		`logFormat: xml`,
		`image: {pullPolicy: Sometimes}`,
		`metrics: {port: 70000}`,
		`extraArgs: [max-concurrent-reconciles]`,
		`serviceMonitor: {interval: soon}`,
		`unknownValue: 1`,
		`leaderElection: {enabled: "yes"}`,
		`networkPolicy: {enabled: true, metricsNamespaces: [Not_A_Namespace]}`,
	} {
		if _, _, err := tryRenderChart(t, releaseNamespace, bad); err == nil {
			t.Errorf("values %q accepted", bad)
		}
	}
	if _, _, err := tryRenderChart(t, releaseNamespace, `serviceAccount: {create: false}`); err == nil {
		t.Error("serviceAccount.create false without a name accepted")
	}
}

// TestHelmMatchesKustomize checks that the chart and the kustomize default install the
// same CRD and the same RBAC: every Role and ClusterRole with the same rules (compared
// as sets of permissions), every binding with the same role and subjects.
func TestHelmMatchesKustomize(t *testing.T) {
	helm, _ := renderChart(t, releaseNamespace, "")
	kust := kustomize(t, repoPath("config", "default"))

	kcrd := find(t, kust, "CustomResourceDefinition", "espojobs.training.espo.dev")
	hcrds := chartCRDs(t)
	if len(hcrds) != 1 || hcrds[0].GetName() != kcrd.GetName() || !equality.Semantic.DeepEqual(hcrds[0].Object["spec"], kcrd.Object["spec"]) {
		t.Error("the chart's crds/ differ from config/crd: run make manifests")
	}

	expectSameRBAC(t, kust, helm)
	for _, objs := range [][]*unstructured.Unstructured{kust, helm} {
		if granted := kueuePermissions(t, objs); len(granted) > 0 {
			t.Errorf("without the Kueue integration the operator is granted %v", granted)
		}
	}
}

// TestHelmMatchesKustomizeWithKueue: with kueue.enabled the chart grants what
// config/kueue (config/default with --kueue and the integration's ClusterRole) does,
// Kueue's Workloads among it.
func TestHelmMatchesKustomizeWithKueue(t *testing.T) {
	helm, _ := renderChart(t, releaseNamespace, "kueue: {enabled: true}")
	kust := kustomize(t, repoPath("config", "kueue"))
	expectSameRBAC(t, kust, helm)
	for _, objs := range [][]*unstructured.Unstructured{kust, helm} {
		if granted := kueuePermissions(t, objs); !slices.Contains(granted, "kueue.x-k8s.io/workloads/* create") {
			t.Errorf("with the Kueue integration the operator may not create Workloads: %v", granted)
		}
		if args := managerArgs(t, objs); !slices.Contains(args, "--kueue") {
			t.Errorf("the manager runs without --kueue: %v", args)
		}
	}
}

// expectSameRBAC fails the test unless kust and helm hold the same roles and bindings,
// by name, granting the same.
func expectSameRBAC(t *testing.T, kust, helm []*unstructured.Unstructured) {
	t.Helper()
	for _, kind := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"} {
		want, got := rbacByName(t, kust, kind), rbacByName(t, helm, kind)
		if !slices.Equal(sortedKeys(want), sortedKeys(got)) {
			t.Errorf("%ss: kustomize installs %v, the chart %v", kind, sortedKeys(want), sortedKeys(got))
			continue
		}
		for name := range want {
			if !equality.Semantic.DeepEqual(want[name], got[name]) {
				t.Errorf("%s %s differs (-kustomize +chart):\n%s", kind, name, diff.Diff(want[name], got[name]))
			}
		}
	}
}

// managerArgs are the arguments of the manager's container in objs.
func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	return toTyped[appsv1.Deployment](t, find(t, objs, "Deployment", "espo-controller-manager")).Spec.Template.Spec.Containers[0].Args
}

// kueuePermissions are the single permissions on Kueue's API group that the
// ClusterRoles among objs grant.
func kueuePermissions(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range byKind(objs, "ClusterRole") {
		for _, p := range permissions(toTyped[rbacv1.ClusterRole](t, o).Rules) {
			if strings.HasPrefix(p, "kueue.x-k8s.io/") {
				out = append(out, p)
			}
		}
	}
	return out
}

// rbacByName returns the RBAC objects of a kind by namespace/name, each reduced to what
// it grants: a sorted list of single permissions for roles, the role and subjects for
// bindings.
func rbacByName(t *testing.T, objs []*unstructured.Unstructured, kind string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range byKind(objs, kind) {
		key := o.GetNamespace() + "/" + o.GetName()
		switch kind {
		case "ClusterRole", "Role":
			out[key] = permissions(toTyped[rbacv1.ClusterRole](t, o).Rules)
		default:
			b := toTyped[rbacv1.ClusterRoleBinding](t, o)
			out[key] = []any{b.RoleRef, b.Subjects}
		}
	}
	return out
}

// permissions expands policy rules into single permissions, sorted and without
// duplicates, so that rules compare by what they grant and not by how they group it.
func permissions(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, url := range r.NonResourceURLs {
				out = append(out, fmt.Sprintf("url %s %s", url, verb))
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{"*"}
					}
					for _, n := range names {
						out = append(out, fmt.Sprintf("%s/%s/%s %s", g, res, n, verb))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestChartCRDsAreCurrent is the stale check of the chart's copies: crds/ holds
// exactly config/crd/bases, files/manager-role.yaml is config/rbac/role.yaml and
// files/kueue-role.yaml config/kueue/role.yaml (`make manifests` copies them).
func TestChartCRDsAreCurrent(t *testing.T) {
	bases, err := os.ReadDir(repoPath("config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	copies, err := os.ReadDir(repoPath("charts", "espo-operator", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bases) != len(copies) {
		t.Errorf("config/crd/bases has %d files, the chart's crds/ %d: run make manifests", len(bases), len(copies))
	}
	pairs := [][2][]string{
		{{"config", "rbac", "role.yaml"}, {"charts", "espo-operator", "files", "manager-role.yaml"}},
		{{"config", "kueue", "role.yaml"}, {"charts", "espo-operator", "files", "kueue-role.yaml"}},
	}
	for _, b := range bases {
		pairs = append(pairs, [2][]string{{"config", "crd", "bases", b.Name()}, {"charts", "espo-operator", "crds", b.Name()}})
	}
	for _, p := range pairs {
		src, err1 := os.ReadFile(repoPath(p[0]...))
		dst, err2 := os.ReadFile(repoPath(p[1]...))
		if err1 != nil || err2 != nil || string(src) != string(dst) {
			t.Errorf("%s is not a copy of %s: run make manifests", path.Join(p[1]...), path.Join(p[0]...))
		}
	}
}

// equalObjects reports whether two objects are semantically equal.
func equalObjects(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(a.Object, b.Object)
}
