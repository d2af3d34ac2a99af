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
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const (
	// DefaultServiceAccount is the service account every namespace has, which a pod
	// that names none runs as.
	DefaultServiceAccount = "default"
	// RootCAConfigMap is the ConfigMap of every namespace that holds the API server's
	// CA bundle under RootCAKey; the token volume the ServiceAccount admission
	// plugin adds to a pod projects it as ca.crt.
	RootCAConfigMap = "kube-root-ca.crt"
	// RootCAKey is RootCAConfigMap's key.
	RootCAKey = "ca.crt"
)

// namespaceDefaultsResync is how often every namespace is checked again, besides the
// checks that creations and deletions trigger.
const namespaceDefaultsResync = 5 * time.Minute

// namespaceDefaults gives every namespace what kube-controller-manager's
// serviceaccounts and root-ca-cert-publisher controllers give it on a real cluster,
// and without which the ServiceAccount admission plugin refuses or strands pods:
// the service account DefaultServiceAccount, and the ConfigMap RootCAConfigMap holding
// the API server's CA. It makes them when a namespace appears and again when one is
// deleted, and puts the CA back when the ConfigMap holds another; a namespace being
// deleted is left alone. Failed writes are retried with backoff.
type namespaceDefaults struct {
	client   kubernetes.Interface
	caData   []byte
	queue    workqueue.TypedRateLimitingInterface[string]
	informer informers.SharedInformerFactory
}

func newNamespaceDefaults(client kubernetes.Interface, caData []byte) *namespaceDefaults {
	return &namespaceDefaults{
		client:   client,
		caData:   caData,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		informer: informers.NewSharedInformerFactory(client, namespaceDefaultsResync),
	}
}

// start fills every namespace there is now, then keeps doing so for new ones until
// ctx is done. It returns once the namespaces listed at the start are filled, or with
// the first error of that.
func (d *namespaceDefaults) start(ctx context.Context) error {
	namespaces, err := d.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	for i := range namespaces.Items {
		if err := d.fill(ctx, &namespaces.Items[i]); err != nil {
			return err
		}
	}
	enqueueNamespace := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			d.queue.Add(key)
		}
	}
	nsInformer := d.informer.Core().V1().Namespaces().Informer()
	if _, err := nsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueueNamespace, UpdateFunc: func(_, o any) { enqueueNamespace(o) }}); err != nil {
		return err
	}
	saInformer := d.informer.Core().V1().ServiceAccounts().Informer()
	if _, err := saInformer.AddEventHandler(d.onChangeOf(DefaultServiceAccount)); err != nil {
		return err
	}
	cmInformer := d.informer.Core().V1().ConfigMaps().Informer()
	if _, err := cmInformer.AddEventHandler(d.onChangeOf(RootCAConfigMap)); err != nil {
		return err
	}
	d.informer.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		d.queue.ShutDown()
	}()
	go wait.UntilWithContext(ctx, d.work, time.Second)
	return nil
}

// onChangeOf queues the namespace of an object called name when it is changed or
// deleted.
func (d *namespaceDefaults) onChangeOf(name string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(metav1.Object); ok && o.GetName() == name {
			d.queue.Add(o.GetNamespace())
		}
	}
	return cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
}

// work fills the queued namespaces until the queue shuts down.
func (d *namespaceDefaults) work(ctx context.Context) {
	for {
		name, shutdown := d.queue.Get()
		if shutdown {
			return
		}
		err := d.fillNamed(ctx, name)
		if err != nil && ctx.Err() == nil {
			d.queue.AddRateLimited(name)
		} else {
			d.queue.Forget(name)
		}
		d.queue.Done(name)
	}
}

// fillNamed fills the namespace called name, if it still exists.
func (d *namespaceDefaults) fillNamed(ctx context.Context, name string) error {
	ns, err := d.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return d.fill(ctx, ns)
}

// fill makes the namespace's default service account and root CA ConfigMap, unless
// the namespace is being deleted.
func (d *namespaceDefaults) fill(ctx context.Context, ns *corev1.Namespace) error {
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	if err := d.ensureServiceAccount(ctx, ns.Name); err != nil {
		return fmt.Errorf("namespace %s: service account %s: %w", ns.Name, DefaultServiceAccount, err)
	}
	if err := d.ensureRootCA(ctx, ns.Name); err != nil {
		return fmt.Errorf("namespace %s: ConfigMap %s: %w", ns.Name, RootCAConfigMap, err)
	}
	return nil
}

func (d *namespaceDefaults) ensureServiceAccount(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccount, Namespace: ns}}
	_, err := d.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	return ignoreLateOrDone(err)
}

func (d *namespaceDefaults) ensureRootCA(ctx context.Context, ns string) error {
	cms := d.client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, RootCAConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: ns}, Data: d.rootCAData()}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return ignoreLateOrDone(err)
	case err != nil:
		return err
	case bytes.Equal([]byte(cm.Data[RootCAKey]), d.caData) && len(cm.Data) == 1:
		return nil
	}
	cm.Data = d.rootCAData()
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return ignoreLateOrDone(err)
}

func (d *namespaceDefaults) rootCAData() map[string]string {
	return map[string]string{RootCAKey: string(d.caData)}
}

// ignoreLateOrDone drops the errors of a write that someone else made first, or to a
// namespace that has begun to go away: nothing is left to do.
func ignoreLateOrDone(err error) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}
