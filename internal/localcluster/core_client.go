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
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The process node and its scheduler use two API groups: core (pods, nodes, events,
// ConfigMaps, Secrets, Services, claims, service accounts) and coordination (the
// node's lease). client-go's Clientset and SharedInformerFactory would link every
// group's typed client, lister and informer into the one espo binary (20 MB of
// its 103 MB), and so into the pages of every espo command, the manager's included.
// coreClient and coreInformerFactory are the same for the two groups only.

// coreClient is a kubernetes.Interface, as client-go's informers and virtual-kubelet
// take one, that serves the core and coordination groups; any other group's method
// panics (nil interface).
type coreClient struct {
	kubernetes.Interface
	core         corev1client.CoreV1Interface
	coordination coordinationv1client.CoordinationV1Interface
}

// newCoreClient is the coreClient of the API server cfg reaches.
func newCoreClient(cfg *rest.Config) (*coreClient, error) {
	cfg = rest.CopyConfig(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &coreClient{core: core, coordination: coordination}, nil
}

func (c *coreClient) CoreV1() corev1client.CoreV1Interface { return c.core }

func (c *coreClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return c.coordination
}

// coreInformerFactory shares one informer per core kind, as client-go's
// SharedInformerFactory does (Start, WaitForCacheSync, Shutdown mean the same), for
// the core group only.
type coreInformerFactory struct {
	client kubernetes.Interface
	resync time.Duration
	tweak  internalinterfaces.TweakListOptionsFunc

	mu        sync.Mutex
	informers map[reflect.Type]cache.SharedIndexInformer
	started   map[reflect.Type]bool
	wg        sync.WaitGroup
}

// newCoreInformerFactory is a factory whose informers list and watch through
// client, every resync, with their list options changed by tweak (nil: unchanged).
func newCoreInformerFactory(client kubernetes.Interface, resync time.Duration, tweak internalinterfaces.TweakListOptionsFunc) *coreInformerFactory {
	return &coreInformerFactory{client: client, resync: resync, tweak: tweak,
		informers: map[reflect.Type]cache.SharedIndexInformer{}, started: map[reflect.Type]bool{}}
}

// Core is the core group's informers, in all namespaces.
func (f *coreInformerFactory) Core() corev1informers.Interface {
	return corev1informers.New(f, "", f.tweak)
}

// InformerFor is the informer of obj's type, made with newFunc the first time.
func (f *coreInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := reflect.TypeOf(obj)
	if inf, ok := f.informers[t]; ok {
		return inf
	}
	inf := newFunc(f.client, f.resync)
	f.informers[t] = inf
	return inf
}

// InformerName is nil: the informers publish no metrics, as client-go's factory's by
// default.
func (f *coreInformerFactory) InformerName() *cache.InformerName { return nil }

// Start runs every informer asked for so far and not yet running, until stop closes.
func (f *coreInformerFactory) Start(stop <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for t, inf := range f.informers {
		if f.started[t] {
			continue
		}
		f.started[t] = true
		f.wg.Go(func() { inf.Run(stop) })
	}
}

// WaitForCacheSync waits until every started informer has synced or stop closes.
func (f *coreInformerFactory) WaitForCacheSync(stop <-chan struct{}) {
	f.mu.Lock()
	var synced []cache.InformerSynced
	for t, inf := range f.informers {
		if f.started[t] {
			synced = append(synced, inf.HasSynced)
		}
	}
	f.mu.Unlock()
	cache.WaitForCacheSync(stop, synced...)
}

// Shutdown waits until every started informer has stopped; close their stop channel
// first.
func (f *coreInformerFactory) Shutdown() { f.wg.Wait() }
