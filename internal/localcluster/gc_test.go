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

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// ownedConfigMap is a ConfigMap whose controller is owner.
func ownedConfigMap(name string, owner *corev1.ConfigMap) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.Namespace,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
}

func configMapGone(ns, name string) func() bool {
	return func() bool {
		_, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
}

// sweepUntilGone sweeps until ConfigMap ns/name is gone; a sweep that fails is
// retried, and its error is in the failure message if the ConfigMap stays.
func sweepUntilGone(g Gomega, gc *GarbageCollector, ns, name string) {
	g.Eventually(func(g Gomega) {
		g.Expect(gc.Sweep(context.Background())).To(Succeed())
		g.Expect(configMapGone(ns, name)()).To(BeTrue(), "ConfigMap %s/%s is gone", ns, name)
	}, gcTimeout, pollInterval).Should(Succeed())
}

// deleteOwnerUntilGone creates ConfigMaps "owner" and "child" (owned by "owner"),
// deletes the owner with propagation and sweeps until the owner is gone.
func deleteOwnerUntilGone(g Gomega, gc *GarbageCollector, ns string, propagation metav1.DeletionPropagation) {
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps(ns)
	owner := create(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}, cms.Create)
	create(g, ownedConfigMap("child", owner), cms.Create)
	g.Expect(cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &propagation})).To(Succeed())
	sweepUntilGone(g, gc, ns, "owner")
}

func TestGarbageCollector(t *testing.T) {
	ctx := context.Background()
	gc, err := NewGarbageCollector(cp.Config, clock.RealClock{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gc.Close)
	cms := func(ns string) interface {
		Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
	} {
		return client.CoreV1().ConfigMaps(ns)
	}

	t.Run("background: the dependents of a deleted owner go", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		owner := create(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}, cms(ns).Create)
		create(g, ownedConfigMap("child", owner), cms(ns).Create)
		kept := create(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept-owner", Namespace: ns}}, cms(ns).Create)
		create(g, ownedConfigMap("kept-child", kept), cms(ns).Create)

		g.Expect(gc.Sweep(ctx)).To(Succeed())
		g.Expect(configMapGone(ns, "child")()).To(BeFalse(), "the owner still exists")
		g.Expect(client.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{})).To(Succeed())
		sweepUntilGone(g, gc, ns, "child")
		g.Expect(configMapGone(ns, "kept-child")()).To(BeFalse(), "an owned object whose owner exists stays")
	})

	t.Run("foreground: dependents go first, then the owner", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deleteOwnerUntilGone(g, gc, ns, metav1.DeletePropagationForeground)
		g.Expect(configMapGone(ns, "child")()).To(BeTrue())
	})

	t.Run("orphan: dependents stay, without the owner reference", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deleteOwnerUntilGone(g, gc, ns, metav1.DeletePropagationOrphan)
		child, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "child", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(child.OwnerReferences).To(BeEmpty())
	})
}
