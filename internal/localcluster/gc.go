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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// gcInterval is how often the GarbageCollector sweeps by default.
const gcInterval = 2 * time.Second

// gcSyncTimeout bounds a sweep's wait for the informers of resources it sees for the
// first time to list them.
const gcSyncTimeout = 30 * time.Second

// GarbageCollector deletes objects whose owners are gone, standing in for
// kube-controller-manager's garbage collector, which does not run here. It keeps the
// metadata of every listable, watchable, deletable resource in an informer (listed
// once, then watched, as kube-controller-manager's does), and every sweep reads
// them and:
//
//   - deletes an object all of whose owners are gone (checked with a live read of
//     each owner, so an owner created during the sweep, or not yet in its
//     informer, is not missed), in the background;
//   - for an owner deleted in the foreground (finalizer foregroundDeletion), deletes
//     its dependents, and removes the finalizer once none is left;
//   - for an owner deleted with orphaning (finalizer orphan), removes the owner
//     reference from its dependents, then the finalizer.
//
// What a sweep sees may lag the API server by a watch event; what it misses, a later
// sweep does. Events are skipped. A sweep costs the API server a discovery and the
// writes it makes.
type GarbageCollector struct {
	discovery discovery.DiscoveryInterface
	meta      metadata.Interface
	clock     clock.WithTicker
	interval  time.Duration
	log       logr.Logger
	informers metadatainformer.SharedInformerFactory
	stop      chan struct{}
	closeOnce sync.Once
}

// NewGarbageCollector returns a collector that reaches the API server with cfg
// (which must be allowed to list, watch, delete and patch everything). Close stops
// its informers; Run closes it when it returns.
func NewGarbageCollector(cfg *rest.Config, clk clock.WithTicker, log logr.Logger) (*GarbageCollector, error) {
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &GarbageCollector{discovery: d, meta: m, clock: clk, interval: gcInterval, log: log,
		informers: metadatainformer.NewSharedInformerFactory(m, 0), stop: make(chan struct{})}, nil
}

// Run sweeps every interval until ctx is done, then closes the collector.
func (g *GarbageCollector) Run(ctx context.Context) error {
	defer g.Close()
	tick := g.clock.NewTicker(g.interval)
	defer tick.Stop()
	for {
		if err := g.Sweep(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "garbage collection sweep")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// Close stops the collector's informers and waits for them.
func (g *GarbageCollector) Close() {
	g.closeOnce.Do(func() {
		close(g.stop)
		g.informers.Shutdown()
	})
}

// gcObject is one object seen by a sweep.
type gcObject struct {
	gvr  schema.GroupVersionResource
	meta *metav1.PartialObjectMetadata
}

// gcIndex is a sweep's view of the cluster.
type gcIndex struct {
	byUID      map[types.UID]*gcObject
	dependents map[types.UID][]*gcObject // owner UID -> objects that name it
	kinds      map[schema.GroupKind]gcKind
}

// gcKind is how to read an owner of a kind.
type gcKind struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// Sweep makes one pass (see GarbageCollector).
func (g *GarbageCollector) Sweep(ctx context.Context) error {
	idx, err := g.index(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range idx.byUID {
		errs = append(errs, g.collect(ctx, idx, o), g.finishOwner(ctx, idx, o))
	}
	return errors.Join(errs...)
}

// index reads every object's metadata from the informers, starting one for each
// resource seen for the first time and waiting until it has listed.
func (g *GarbageCollector) index(ctx context.Context) (*gcIndex, error) {
	lists, err := discovery.ServerPreferredResources(g.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	idx := &gcIndex{byUID: map[types.UID]*gcObject{}, dependents: map[types.UID][]*gcObject{}, kinds: map[schema.GroupKind]gcKind{}}
	stores := map[schema.GroupVersionResource]cache.Store{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "events" ||
				!slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			idx.kinds[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = gcKind{gvr: gvr, namespaced: r.Namespaced}
			stores[gvr] = g.informers.ForResource(gvr).Informer().GetStore()
		}
	}
	if err := g.waitForInformers(ctx); err != nil {
		return nil, err
	}
	for gvr, store := range stores {
		for _, item := range store.List() {
			m, ok := item.(*metav1.PartialObjectMetadata)
			if !ok {
				continue
			}
			o := &gcObject{gvr: gvr, meta: m}
			idx.byUID[m.UID] = o
			for _, ref := range m.OwnerReferences {
				idx.dependents[ref.UID] = append(idx.dependents[ref.UID], o)
			}
		}
	}
	return idx, nil
}

// waitForInformers starts the informers not yet started and waits, at most
// gcSyncTimeout, until every informer has listed its resource.
func (g *GarbageCollector) waitForInformers(ctx context.Context) error {
	g.informers.Start(g.stop)
	ctx, cancel := context.WithTimeout(ctx, gcSyncTimeout)
	defer cancel()
	var unsynced []string
	for gvr, ok := range g.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			unsynced = append(unsynced, gvr.String())
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		return fmt.Errorf("the informers of %s have not listed their objects", strings.Join(unsynced, ", "))
	}
	return nil
}

// collect handles one dependent: deleted when its owners are all gone or one is
// being deleted in the foreground; unlinked from owners being orphaned.
func (g *GarbageCollector) collect(ctx context.Context, idx *gcIndex, o *gcObject) error {
	refs := o.meta.OwnerReferences
	if len(refs) == 0 || o.meta.DeletionTimestamp != nil {
		return nil
	}
	var orphaning []types.UID
	gone := 0
	for _, ref := range refs {
		owner := idx.byUID[ref.UID]
		switch {
		case owner == nil && g.ownerGone(ctx, idx, o, ref):
			gone++
		case owner != nil && deleting(owner, metav1.FinalizerDeleteDependents):
			return g.delete(ctx, o, metav1.DeletePropagationForeground)
		case owner != nil && deleting(owner, metav1.FinalizerOrphanDependents):
			orphaning = append(orphaning, ref.UID)
		}
	}
	if gone == len(refs) {
		return g.delete(ctx, o, metav1.DeletePropagationBackground)
	}
	if len(orphaning) > 0 {
		kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return slices.Contains(orphaning, r.UID) })
		return g.patch(ctx, o, map[string]any{"ownerReferences": kept})
	}
	return nil
}

// finishOwner removes the foregroundDeletion or orphan finalizer of an owner being
// deleted once no object names it as owner any more.
func (g *GarbageCollector) finishOwner(ctx context.Context, idx *gcIndex, o *gcObject) error {
	if o.meta.DeletionTimestamp == nil || len(idx.dependents[o.meta.UID]) > 0 {
		return nil
	}
	kept := slices.DeleteFunc(slices.Clone(o.meta.Finalizers), func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	if len(kept) == len(o.meta.Finalizers) {
		return nil
	}
	return g.patch(ctx, o, map[string]any{"finalizers": kept})
}

// deleting reports whether an object is being deleted with the given finalizer.
func deleting(o *gcObject, finalizer string) bool {
	return o.meta.DeletionTimestamp != nil && slices.Contains(o.meta.Finalizers, finalizer)
}

// ownerGone confirms with a live read that an owner absent from the informers does
// not exist (or exists with another UID).
func (g *GarbageCollector) ownerGone(ctx context.Context, idx *gcIndex, o *gcObject, ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	kind, ok := idx.kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	if !ok {
		return false // an unknown kind: perhaps its API is not served yet
	}
	r := g.meta.Resource(kind.gvr)
	var owner *metav1.PartialObjectMetadata
	if kind.namespaced {
		owner, err = r.Namespace(o.meta.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	} else {
		owner, err = r.Get(ctx, ref.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && owner.UID != ref.UID
}

func (g *GarbageCollector) delete(ctx context.Context, o *gcObject, propagation metav1.DeletionPropagation) error {
	uid := o.meta.UID
	err := g.meta.Resource(o.gvr).Namespace(o.meta.Namespace).Delete(ctx, o.meta.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &propagation,
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		g.log.V(1).Info("garbage collected", "resource", o.gvr.Resource, "namespace", o.meta.Namespace, "name", o.meta.Name)
	}
	return err
}

// patch merge-patches metadata fields of o, guarded by its resourceVersion.
func (g *GarbageCollector) patch(ctx context.Context, o *gcObject, fields map[string]any) error {
	fields["resourceVersion"] = o.meta.ResourceVersion
	b, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = g.meta.Resource(o.gvr).Namespace(o.meta.Namespace).Patch(ctx, o.meta.Name, types.MergePatchType, b, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // changed meanwhile: the next sweep sees it again
	}
	return err
}
