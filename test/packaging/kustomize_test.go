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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// operatorNamespace is where config/default installs the operator.
const operatorNamespace = "espo-system"

// clusterScoped are the kinds of config/default's cluster-scoped objects.
var clusterScoped = map[string]bool{"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}

// TestKustomizeDefault renders config/default, checks the operator's Deployment, and
// applies the whole render to the API server with server-side dry-run. Every
// namespaced object is in operatorNamespace, and no cluster-scoped one names a
// namespace.
func TestKustomizeDefault(t *testing.T) {
	objs := kustomize(t, repoPath("config", "default"))
	for _, o := range objs {
		want := operatorNamespace
		if clusterScoped[o.GetKind()] {
			want = ""
		}
		if o.GetNamespace() != want {
			t.Errorf("%s has namespace %q, want %q", describe(o), o.GetNamespace(), want)
		}
		if !strings.HasPrefix(o.GetName(), "espo") {
			t.Errorf("%s: the name does not start with espo", describe(o))
		}
	}
	ns := find(t, objs, "Namespace", operatorNamespace)
	if ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard", operatorNamespace)
	}
	find(t, objs, "CustomResourceDefinition", "espojobs.training.espo.dev")
	svc := toTyped[corev1.Service](t, find(t, objs, "Service", "espo-controller-manager-metrics-service"))
	dep := toTyped[appsv1.Deployment](t, find(t, objs, "Deployment", "espo-controller-manager"))
	checkManagerDeployment(t, dep, find(t, objs, "ServiceAccount", "espo-manager").GetName(), svc)

	c := dep.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "ESPO_TRAINER_IMAGE" && e.Value != c.Image {
			t.Errorf("ESPO_TRAINER_IMAGE is %q, the manager's image %q: the trainer pods must run the same image", e.Value, c.Image)
		}
	}
	applyDryRun(t, objs)
}

// checkManagerDeployment checks what both install methods promise of the manager's
// Deployment: probes, resources, leader election, a restricted security context, the
// service account, and metrics over HTTPS with authentication and authorization,
// published by the metrics Service svc (nil when metrics are off).
func checkManagerDeployment(t *testing.T, dep *appsv1.Deployment, serviceAccount string, svc *corev1.Service) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	if spec.ServiceAccountName != serviceAccount {
		t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, serviceAccount)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	if !slices.Equal(c.Command, []string{"espo", "manager"}) {
		t.Errorf("command %q, want [espo manager]", c.Command)
	}
	flags := strings.Join(c.Args, " ")
	for _, want := range []string{"--health-probe-bind-address=:", "--log-format="} {
		if !strings.Contains(flags, want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p != nil && p.HTTPGet != nil && !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.HTTPGet.Port.String() && strings.Contains(flags, fmt.Sprintf("--health-probe-bind-address=:%d", cp.ContainerPort))
		}) {
			t.Errorf("probe port %s is not the container port the probes are served on", p.HTTPGet.Port.String())
		}
	}
	if !slices.Contains(c.Args, "--leader-elect") && !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %q: leader election is off", c.Args)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("the manager needs a liveness probe on /healthz and a readiness probe on /readyz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %v: want CPU and memory requests and a memory limit", c.Resources)
	}
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context not restricted: pod %+v, container %+v", psc, sc)
	}
	if svc == nil {
		return
	}
	if !slices.Contains(c.Args, "--metrics-bind-address=:8443") ||
		!slices.Contains(c.Args, "--metrics-secure") && !slices.Contains(c.Args, "--metrics-secure=true") {
		t.Errorf("args %q: metrics must be served over HTTPS with authn/authz on :8443", c.Args)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the manager's pods lack", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" ||
		!slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == svc.Spec.Ports[0].TargetPort.String() }) {
		t.Errorf("the metrics Service's port %+v does not reach a container port of %+v", svc.Spec.Ports, c.Ports)
	}
}

// toTyped converts an unstructured object into its Go type, strictly.
func toTyped[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s: %v", describe(u), err)
	}
	return out
}

// TestKustomizePrometheus turns on the [PROMETHEUS] line of config/default, as its
// comment tells users to, and checks the monitors it adds: the ServiceMonitor reaches
// the metrics Service's port, the PodMonitor selects the trainer pods by the labels the
// controller sets; both pass a server-side dry-run against stand-in monitoring CRDs.
func TestKustomizePrometheus(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repoPath("config"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "default", "kustomization.yaml")
	k, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	on := strings.Replace(string(k), "#- ../prometheus", "- ../prometheus", 1)
	if on == string(k) {
		t.Fatal(`config/default/kustomization.yaml has no "#- ../prometheus" line to uncomment`)
	}
	if err := os.WriteFile(path, []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomize(t, filepath.Join(dir, "default"))
	svc := toTyped[corev1.Service](t, find(t, objs, "Service", "espo-controller-manager-metrics-service"))
	checkMonitors(t, objs, svc)
	installMonitoringCRDs(t)
	applyDryRun(t, objs)
}

// checkMonitors checks the ServiceMonitor against the metrics Service and the
// PodMonitor against the trainer pods' labels.
func checkMonitors(t *testing.T, objs []*unstructured.Unstructured, svc *corev1.Service) {
	t.Helper()
	sms, pms := byKind(objs, "ServiceMonitor"), byKind(objs, "PodMonitor")
	if len(sms) != 1 || len(pms) != 1 {
		t.Fatalf("want one ServiceMonitor and one PodMonitor, got %d and %d", len(sms), len(pms))
	}
	sm := sms[0]
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks", k, v)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if port := eps[0].(map[string]any)["port"]; port != svc.Spec.Ports[0].Name {
		t.Errorf("the ServiceMonitor scrapes port %v, the Service's is %s", port, svc.Spec.Ports[0].Name)
	}
	if scheme := eps[0].(map[string]any)["scheme"]; svc.Spec.Ports[0].Name == "https" && scheme != "https" {
		t.Errorf("the ServiceMonitor scrapes %v, the endpoint serves https", scheme)
	}
	sel, _, _ = unstructured.NestedStringMap(pms[0].Object, "spec", "selector", "matchLabels")
	want := map[string]string{"app.kubernetes.io/managed-by": "espo-operator", "training.espo.dev/role": "trainer"}
	if len(sel) != len(want) || sel["app.kubernetes.io/managed-by"] != want["app.kubernetes.io/managed-by"] ||
		sel["training.espo.dev/role"] != want["training.espo.dev/role"] {
		t.Errorf("the PodMonitor selects %v, want the trainer pods' labels %v", sel, want)
	}
}

var monitoringCRDs sync.Once

// installMonitoringCRDs installs the stand-in ServiceMonitor and PodMonitor CRDs once
// and waits until they are served.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	var err error
	monitoringCRDs.Do(func() {
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("testdata", "monitoring-crds.yaml")}, ErrorIfPathMissing: true,
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKustomizeCRD checks that config/crd renders the generated CRD unchanged.
func TestKustomizeCRD(t *testing.T) {
	got := kustomize(t, repoPath("config", "crd"))
	raw, err := os.ReadFile(repoPath("config", "crd", "bases", "training.espo.dev_espojobs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeManifests(t, raw)
	if len(got) != 1 || !equalObjects(got[0], want[0]) {
		t.Error("config/crd does not render config/crd/bases unchanged")
	}
}
