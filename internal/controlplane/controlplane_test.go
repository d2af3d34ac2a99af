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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRestartAPIServerKeepsTheDataAndTheCredentials: after a restart the API server
// serves what etcd held before, at the same address, to a client of the kubeconfig
// issued before (same serving certificate, same client CA); the certificate folder
// is gone after Stop.
func TestRestartAPIServerKeepsTheDataAndTheCredentials(t *testing.T) {
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
