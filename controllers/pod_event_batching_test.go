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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// queueCall is one call of a fake queue's adding methods.
type queueCall struct {
	Method   string
	Items    []reconcile.Request
	After    time.Duration
	Priority *int
}

// fakeQueue records the adding calls of a work queue; the other methods are not
// expected.
type fakeQueue struct {
	requestQueue
	calls []queueCall
}

func (q *fakeQueue) Add(r reconcile.Request) {
	q.calls = append(q.calls, queueCall{Method: "Add", Items: []reconcile.Request{r}})
}

func (q *fakeQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.calls = append(q.calls, queueCall{Method: "AddAfter", Items: []reconcile.Request{r}, After: d})
}

func (q *fakeQueue) AddRateLimited(r reconcile.Request) {
	q.calls = append(q.calls, queueCall{Method: "AddRateLimited", Items: []reconcile.Request{r}})
}

// fakePriorityQueue records the adding calls of a priority queue.
type fakePriorityQueue struct {
	fakeQueue
}

func (q *fakePriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.calls = append(q.calls, queueCall{Method: "AddWithOpts", Items: items, After: o.After, Priority: o.Priority})
}

func (q *fakePriorityQueue) GetWithPriority() (reconcile.Request, int, bool) {
	panic("not expected")
}

var _ priorityQueue = &fakePriorityQueue{}

// ownedPod is a pod that job "job" controls, at resourceVersion rv.
func ownedPod(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "job-0", Namespace: "ns", ResourceVersion: rv,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: trainingv1alpha1.GroupVersion.String(), Kind: "ESPOJob", Name: "job", UID: "uid", Controller: new(true),
		}},
	}}
}

// delayedOwnerHandler is the pod event handler of the manager, delayed by period.
func delayedOwnerHandler(period time.Duration) handler.EventHandler {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(trainingv1alpha1.GroupVersion.WithKind("ESPOJob"), meta.RESTScopeNamespace)
	owner := handler.EnqueueRequestForOwner(NewScheme(), mapper, &trainingv1alpha1.ESPOJob{}, handler.OnlyControllerOwner())
	return delayedHandler{inner: owner, period: period}
}

var jobRequest = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "job"}}

// TestDelayedHandlerOnAPriorityQueueKeepsThePriority: on controller-runtime's
// priority queue, the pod events of the initial list and of resyncs still enqueue
// the job at low priority, and every event after the batch period.
func TestDelayedHandlerOnAPriorityQueueKeepsThePriority(t *testing.T) {
	g := NewWithT(t)
	const period = 2 * time.Second
	h := delayedOwnerHandler(period)
	ctx := context.Background()
	low := handler.LowPriority
	for _, c := range []struct {
		name     string
		event    func(q requestQueue)
		priority *int
	}{
		{"create in the initial list", func(q requestQueue) {
			h.Create(ctx, ctrlevent.CreateEvent{Object: ownedPod("1"), IsInInitialList: true}, q)
		}, &low},
		{"create", func(q requestQueue) { h.Create(ctx, ctrlevent.CreateEvent{Object: ownedPod("1")}, q) }, nil},
		{"resync", func(q requestQueue) {
			h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: ownedPod("1"), ObjectNew: ownedPod("1")}, q)
		}, &low},
		{"update", func(q requestQueue) {
			h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: ownedPod("1"), ObjectNew: ownedPod("2")}, q)
		}, nil},
		{"delete", func(q requestQueue) { h.Delete(ctx, ctrlevent.DeleteEvent{Object: ownedPod("1")}, q) }, nil},
	} {
		q := &fakePriorityQueue{}
		c.event(q)
		g.Expect(q.calls).To(Equal([]queueCall{{Method: "AddWithOpts", Items: []reconcile.Request{jobRequest}, After: period, Priority: c.priority}}), c.name)
	}
}

// TestDelayedHandlerOnAPlainQueueAddsAfterThePeriod: on a work queue that is not a
// priority queue, an event adds the job after the batch period.
func TestDelayedHandlerOnAPlainQueueAddsAfterThePeriod(t *testing.T) {
	g := NewWithT(t)
	const period = 2 * time.Second
	h := delayedOwnerHandler(period)
	q := &fakeQueue{}
	h.Create(context.Background(), ctrlevent.CreateEvent{Object: ownedPod("1"), IsInInitialList: true}, q)
	h.Update(context.Background(), ctrlevent.UpdateEvent{ObjectOld: ownedPod("1"), ObjectNew: ownedPod("2")}, q)
	want := queueCall{Method: "AddAfter", Items: []reconcile.Request{jobRequest}, After: period}
	g.Expect(q.calls).To(Equal([]queueCall{want, want}))
}

func TestDelayedQueueAddIsAddAfterThePeriod(t *testing.T) {
	g := NewWithT(t)
	q := &fakeQueue{}
	var d requestQueue = delayedQueue{q, time.Second}
	d.Add(jobRequest)
	d.AddAfter(jobRequest, time.Minute)
	d.AddRateLimited(jobRequest)
	g.Expect(q.calls).To(Equal([]queueCall{
		{Method: "AddAfter", Items: []reconcile.Request{jobRequest}, After: time.Second},
		{Method: "AddAfter", Items: []reconcile.Request{jobRequest}, After: time.Minute},
		{Method: "AddRateLimited", Items: []reconcile.Request{jobRequest}},
	}))
}

// TestDelayedPriorityQueueWaitsAtLeastThePeriod: Add waits the period, AddWithOpts
// the longer of its own After and the period, with its priority unchanged.
func TestDelayedPriorityQueueWaitsAtLeastThePeriod(t *testing.T) {
	g := NewWithT(t)
	q := &fakePriorityQueue{}
	var d requestQueue = delayedHandler{period: time.Second}.queue(q)
	pq, ok := d.(priorityQueue)
	g.Expect(ok).To(BeTrue(), "the delayed queue of a priority queue is a priority queue")
	high, low := 10, handler.LowPriority
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "other"}}
	pq.Add(jobRequest)
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, jobRequest, other)
	pq.AddWithOpts(priorityqueue.AddOpts{After: time.Minute, Priority: &high}, jobRequest)
	pq.AddWithOpts(priorityqueue.AddOpts{After: time.Millisecond}, jobRequest)
	g.Expect(q.calls).To(Equal([]queueCall{
		{Method: "AddWithOpts", Items: []reconcile.Request{jobRequest}, After: time.Second},
		{Method: "AddWithOpts", Items: []reconcile.Request{jobRequest, other}, After: time.Second, Priority: &low},
		{Method: "AddWithOpts", Items: []reconcile.Request{jobRequest}, After: time.Minute, Priority: &high},
		{Method: "AddWithOpts", Items: []reconcile.Request{jobRequest}, After: time.Second},
	}))
}
