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

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/espo-dev/espo-operator/controllers"
)

// replica is one trainer pod's place in a job: its job and rank.
type replica struct{ job, rank string }

// podWatch follows a namespace's trainer pods through an informer, which lists and
// watches again after the API server restarts, and records every pod of each replica
// and any time two pods of one replica were alive (in the API and not finished) at
// once.
type podWatch struct {
	mu         sync.Mutex
	alive      map[replica]map[types.UID]bool
	attempts   map[replica]map[types.UID]string // each pod's restart-attempt label
	duplicates []string
}

// watchPods starts a podWatch of ns until the test ends and waits for its first list.
func watchPods(t *testing.T, ns string) *podWatch {
	t.Helper()
	w := &podWatch{alive: map[replica]map[types.UID]bool{}, attempts: map[replica]map[types.UID]string{}}
	client, err := kubernetes.NewForConfig(controlPlane.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.saw(nil, obj) },
		UpdateFunc: func(old, cur any) {
			w.saw(old, cur)
		},
		DeleteFunc: w.gone,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, kubectlTimeout)
	defer syncCancel()
	NewWithT(t).Expect(cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced)).To(BeTrue(), "the pod informer's first list")
	return w
}

// replicaOf is the pod's job and rank; ok is false for a pod that is not a trainer pod.
func replicaOf(p *corev1.Pod) (r replica, ok bool) {
	r = replica{job: p.Labels[controllers.LabelJobName], rank: p.Labels[controllers.LabelRank]}
	return r, r.job != "" && r.rank != ""
}

// saw records a pod added or changed; a pod that replaced old under its name (the
// informer missed the deletion while the API server was away) ends old.
func (w *podWatch) saw(old, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if o, ok := old.(*corev1.Pod); ok && o.UID != p.UID {
		w.gone(o)
	}
	r, ok := replicaOf(p)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.attempts[r] == nil {
		w.attempts[r], w.alive[r] = map[types.UID]string{}, map[types.UID]bool{}
	}
	w.attempts[r][p.UID] = p.Labels[controllers.LabelRestartAttempt]
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(w.alive[r], p.UID)
		return
	}
	w.alive[r][p.UID] = true
	if len(w.alive[r]) > 1 {
		w.duplicates = append(w.duplicates, fmt.Sprintf("%s at %s: %d pods of rank %s alive at once (%s)",
			r.job, time.Now().Format(time.TimeOnly), len(w.alive[r]), r.rank, p.Name))
	}
}

// gone records a pod deleted.
func (w *podWatch) gone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if r, ok := replicaOf(p); ok {
		w.mu.Lock()
		delete(w.alive[r], p.UID)
		w.mu.Unlock()
	}
}

// podsSeen is, for each replica of the job, the restart attempts of the pods seen,
// one entry per pod, sorted (so [0 1] for a replica restarted once).
func (w *podWatch) podsSeen(job string) map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string][]string{}
	for r, pods := range w.attempts {
		if r.job != job {
			continue
		}
		for _, attempt := range pods {
			seen[r.rank] = append(seen[r.rank], attempt)
		}
		slices.Sort(seen[r.rank])
	}
	return seen
}

// duplicatesSeen says when two pods of one replica were alive at once.
func (w *podWatch) duplicatesSeen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.duplicates...)
}
