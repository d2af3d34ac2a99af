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

// Package packaging tests how espo-operator is shipped: the image's Dockerfile, the
// kustomize tree, the Helm chart, the Argo CD health check, the Grafana dashboard,
// what GitOps tools rely on (the controller never writes the spec; kubectl wait works),
// and the user guide's examples and uninstall commands.
// The manifests are applied to a real API server (envtest) with server-side dry-run.
package packaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/espo-dev/espo-operator/test/testenv"
)

var env *testenv.Env

// TestMain starts the test control plane. The controllers the tests run log nowhere
// (without a logger, controller-runtime would complain once the process is 30 s old).
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, &env)
}

// repoPath is a path relative to the repository root.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{env.RepoRoot}, elem...)...)
}

// decodeManifests splits a multi-document YAML stream into objects, skipping empty
// documents.
func decodeManifests(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding manifests: %v", err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// kustomize renders a kustomization folder with kubectl kustomize.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return decodeManifests(t, out)
}

// warnings collects the warnings the API server sends with its responses (Pod
// Security admission, deprecated fields).
type warnings struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader records a warning.
func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// dryRunClient is a client whose responses' warnings go to w.
func dryRunClient(t *testing.T, w *warnings) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ensureNamespace creates a namespace for real (a dry-run of the objects in it needs
// it to exist), if it does not exist yet.
func ensureNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// applyDryRun applies every object with server-side apply and dry-run, the way
// `kubectl apply --server-side --dry-run=server` does, after creating the Namespaces
// among them for real. It fails the test on any refusal and on any warning (so a pod
// template that breaks the namespace's Pod Security level fails).
func applyDryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	w := &warnings{}
	c := dryRunClient(t, w)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ensureNamespace(t, o.GetName(), o.GetLabels())
		}
	}
	for _, o := range objs {
		err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner("packaging-test"), client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("server-side dry-run apply of %s: %v", describe(o), err)
		}
	}
	for _, text := range w.list {
		t.Errorf("API server warning: %s", text)
	}
}

// describe names an object in messages: Kind namespace/name.
func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
	}
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// byKind returns the objects of a kind.
func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object of a kind and name, or fails the test.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	var have []string
	for _, o := range objs {
		have = append(have, describe(o))
	}
	t.Fatalf("no %s %s among: %s", kind, name, strings.Join(have, ", "))
	return nil
}
