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

package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// DefaultPodEventBatchPeriod is the manager's default Options.PodEventBatchPeriod,
// the Kubernetes Job controller's pod update batch period.
const DefaultPodEventBatchPeriod = time.Second

// podEventHandler returns the handler of pod events: it enqueues the ESPOJob that
// controls the pod, after period when period is positive. The queue holds a job
// once, at its earliest time, so every pod event of a job within period of the first
// gives one reconcile, and one status write: a gang of N pods becoming ready costs
// about one write instead of N.
func podEventHandler(mgr ctrl.Manager, period time.Duration) handler.EventHandler {
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &trainingv1alpha1.ESPOJob{}, handler.OnlyControllerOwner())
	if period <= 0 {
		return owner
	}
	return delayedHandler{inner: owner, period: period}
}

// delayedHandler passes events to inner with a queue whose Add waits period.
type delayedHandler struct {
	inner  handler.EventHandler
	period time.Duration
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// queue wraps q so that adding waits period. A priority queue (controller-runtime's
// default) stays one, so that inner can still lower the priority of the events of
// the initial list and of resyncs.
func (h delayedHandler) queue(q requestQueue) requestQueue {
	if pq, ok := q.(priorityQueue); ok {
		return delayedPriorityQueue{pq, h.period}
	}
	return delayedQueue{q, h.period}
}

func (h delayedHandler) Create(ctx context.Context, e ctrlevent.CreateEvent, q requestQueue) {
	h.inner.Create(ctx, e, h.queue(q))
}

func (h delayedHandler) Update(ctx context.Context, e ctrlevent.UpdateEvent, q requestQueue) {
	h.inner.Update(ctx, e, h.queue(q))
}

func (h delayedHandler) Delete(ctx context.Context, e ctrlevent.DeleteEvent, q requestQueue) {
	h.inner.Delete(ctx, e, h.queue(q))
}

func (h delayedHandler) Generic(ctx context.Context, e ctrlevent.GenericEvent, q requestQueue) {
	h.inner.Generic(ctx, e, h.queue(q))
}

// delayedQueue is a queue whose Add is AddAfter(period).
type delayedQueue struct {
	requestQueue
	period time.Duration
}

func (q delayedQueue) Add(r reconcile.Request) { q.AddAfter(r, q.period) }

type priorityQueue = priorityqueue.PriorityQueue[reconcile.Request]

// delayedPriorityQueue is a priority queue whose Add waits period, and whose
// AddWithOpts waits at least period; the priority passes through.
type delayedPriorityQueue struct {
	priorityQueue
	period time.Duration
}

func (q delayedPriorityQueue) Add(r reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, r)
}

func (q delayedPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	o.After = max(o.After, q.period)
	q.priorityQueue.AddWithOpts(o, items...)
}
