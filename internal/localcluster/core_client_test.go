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

package localcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestCoreInformerFactorySharesStartsOnceAndSyncs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"keep": "yes"}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
	client := fake.NewClientset(pod, other)
	f := newCoreInformerFactory(client, 0, func(o *metav1.ListOptions) { o.LabelSelector = "keep=yes" })
	if f.Core().Pods().Informer().GetIndexer() != f.Core().Pods().Informer().GetIndexer() {
		t.Fatal("two informers for one kind")
	}
	lister := f.Core().Pods().Lister()

	stop := make(chan struct{})
	f.Start(stop)
	f.Start(stop) // a second Start runs nothing twice
	f.WaitForCacheSync(stop)
	if !f.Core().Pods().Informer().HasSynced() {
		t.Fatal("WaitForCacheSync returned before the pod informer synced")
	}
	pods, err := lister.List(labels.Everything())
	if err != nil || len(pods) != 1 || pods[0].Name != "p" {
		t.Errorf("listed %v, %v; want only pod p (the list options' label selector)", pods, err)
	}

	// An informer asked for after Start runs at the next Start.
	secrets := f.Core().Secrets().Informer()
	f.Start(stop)
	f.WaitForCacheSync(stop)
	if !secrets.HasSynced() {
		t.Error("an informer asked for after the first Start did not run at the second")
	}

	close(stop)
	done := make(chan struct{})
	go func() { f.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return after stop closed")
	}
}

func TestCoreClientServesTheCoreAndCoordinationGroups(t *testing.T) {
	c, err := newCoreClient(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.CoreV1() == nil || c.CoordinationV1() == nil {
		t.Fatal("a group the process node uses is missing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// No API server listens there: the request must fail, not panic.
	if _, err := c.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); err == nil {
		t.Error("a GET with no API server succeeded")
	}
}
