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

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// namespaceDefaultsTimeout bounds the wait for the namespace defaults, which are made
// asynchronously.
const namespaceDefaultsTimeout = 30 * time.Second

// startForTest starts a control plane that the test stops.
func startForTest(t *testing.T) *ControlPlane {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..")) // the repository, from this package's folder
	if err != nil {
		t.Fatal(err)
	}
	assets, err := Assets(root)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := Start(assets)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestNamespacesGetTheirDefaults: the namespaces there at the start have their default
// service account and root CA ConfigMap when Start returns; a new namespace gets them
// soon after, and a deleted or edited ConfigMap is put back, as kube-controller-manager
// does. A pod needs them: the API server refuses one of a missing service account.
func TestNamespacesGetTheirDefaults(t *testing.T) {
	cp := startForTest(t)
	defer func() { _ = cp.Stop() }()
	g := NewWithT(t)
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cp.Config)
	defaultsOf := func(ns string) func() (string, error) {
		return func() (string, error) {
			if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, DefaultServiceAccount, metav1.GetOptions{}); err != nil {
				return "", err
			}
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, RootCAConfigMap, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return cm.Data[RootCAKey], nil
		}
	}
	ca := string(cp.Config.CAData)
	g.Expect(defaultsOf("default")()).To(Equal(ca), "the default namespace when Start returned")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{ServiceAccountName: "absent", Containers: []corev1.Container{{Name: "c", Image: "none"}}}}
	_, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a pod of a missing service account: %v", err)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}
	_, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(defaultsOf("fresh"), namespaceDefaultsTimeout).Should(Equal(ca))

	g.Expect(client.CoreV1().ConfigMaps("fresh").Delete(ctx, RootCAConfigMap, metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(defaultsOf("fresh"), namespaceDefaultsTimeout).Should(Equal(ca), "after the ConfigMap was deleted")
	edited := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: "fresh"}, Data: map[string]string{RootCAKey: "not a CA"}}
	_, err = client.CoreV1().ConfigMaps("fresh").Update(ctx, edited, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(defaultsOf("fresh"), namespaceDefaultsTimeout).Should(Equal(ca), "after the ConfigMap was edited")
}

// TestRestartAPIServerKeepsTheDataAndTheCredentials: after a restart the API server
// serves what etcd held before, at the same address, to a client of the kubeconfig
// issued before (same serving certificate, same client CA); the certificate folder
// is gone after Stop.
func TestRestartAPIServerKeepsTheDataAndTheCredentials(t *testing.T) {
	cp := startForTest(t)
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(cp.certDir); !os.IsNotExist(err) {
			t.Errorf("the certificate folder %s is still there after Stop (%v)", cp.certDir, err)
		}
	}()
	kubeconfig, err := cp.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-restart", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := cp.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}

	got, err := client.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading after the restart with the kubeconfig issued before: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("after the restart the ConfigMap holds %v, want k=v", got.Data)
	}
}
