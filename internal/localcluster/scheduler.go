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
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SchedulerName is the scheduler name the Scheduler serves (pods that name another
// scheduler are left alone).
const SchedulerName = corev1.DefaultSchedulerName

// schedulerResync is how often the Scheduler retries unschedulable pods without an
// event that could have changed their fit.
const schedulerResync = 5 * time.Second

// Scheduler binds pending pods to one process node, standing in for kube-scheduler
// (which would also need kube-controller-manager to bind claims to volumes). It
// checks what kube-scheduler's filters would for one node: scheduling gates, the
// node selector and required node affinity, taints (NoSchedule, NoExecute) against
// tolerations, resource requests (nvidia.com/gpu included) and the pod count
// against allocatable, and that every PersistentVolumeClaim the pod mounts exists.
// A pod that does not fit gets PodScheduled=False, reason Unschedulable, with a
// message in kube-scheduler's words, and a FailedScheduling event.
type Scheduler struct {
	client   kubernetes.Interface
	nodeName string
	clock    clock.WithTicker
	log      logr.Logger
	events   record.EventBroadcaster
	recorder record.EventRecorder
	factory  *coreInformerFactory
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	nodes    corelisters.NodeLister
	kick     chan struct{}

	mu      sync.Mutex
	assumed map[types.UID]*corev1.Pod // bound, but not yet seen bound by the informer
}

// NewScheduler returns a scheduler for the node named nodeName.
func NewScheduler(client kubernetes.Interface, nodeName string, clk clock.WithTicker, log logr.Logger) *Scheduler {
	f := newCoreInformerFactory(client, 0, nil)
	events := record.NewBroadcaster()
	s := &Scheduler{
		client: client, nodeName: nodeName, clock: clk, log: log, factory: f, events: events,
		recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: SchedulerName}),
		pods:     f.Core().Pods().Lister(),
		claims:   f.Core().PersistentVolumeClaims().Lister(),
		nodes:    f.Core().Nodes().Lister(),
		kick:     make(chan struct{}, 1),
		assumed:  map[types.UID]*corev1.Pod{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.wake() },
		UpdateFunc: func(any, any) { s.wake() },
		DeleteFunc: func(any) { s.wake() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		f.Core().Pods().Informer(), f.Core().PersistentVolumeClaims().Informer(), f.Core().Nodes().Informer(),
	} {
		_, _ = inf.AddEventHandler(h)
	}
	return s
}

func (s *Scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run schedules until ctx is done: after every change to pods, claims or nodes, and
// every schedulerResync.
func (s *Scheduler) Run(ctx context.Context) error {
	s.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.events.Shutdown()
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	s.factory.WaitForCacheSync(ctx.Done())
	tick := s.clock.NewTicker(schedulerResync)
	defer tick.Stop()
	for {
		s.SchedulePending(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-tick.C():
		}
	}
}

// SchedulePending makes one pass over the pending pods, highest priority and oldest
// first, binding each that fits.
func (s *Scheduler) SchedulePending(ctx context.Context) {
	node, err := s.nodes.Get(s.nodeName)
	if err != nil {
		return // not registered yet
	}
	all, err := s.pods.List(labels.Everything())
	if err != nil {
		return
	}
	used := s.usedResources(all)
	pending := pendingPods(all)
	for _, pod := range pending {
		reasons := s.unfit(pod, node, used)
		if len(reasons) > 0 {
			s.markUnschedulable(ctx, pod, reasons)
			continue
		}
		if err := s.bind(ctx, pod); err != nil {
			s.log.Error(err, "binding", "pod", klog.KObj(pod))
			continue
		}
		addTo(used, podRequests(pod))
	}
}

// pendingPods are the pods waiting for this scheduler, in scheduling order.
func pendingPods(all []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range all {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0 &&
			(p.Spec.SchedulerName == "" || p.Spec.SchedulerName == SchedulerName) && !terminal(p) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := corev1helpers.PodPriority(out[i]), corev1helpers.PodPriority(out[j])
		if pi != pj {
			return pi > pj
		}
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// usedResources sums the requests of the node's live pods (and of pods bound but
// not yet seen bound), plus one "pods" each.
func (s *Scheduler) usedResources(all []*corev1.Pod) corev1.ResourceList {
	used := corev1.ResourceList{}
	seen := map[types.UID]bool{}
	for _, p := range all {
		seen[p.UID] = true
		if p.Spec.NodeName == s.nodeName && !terminal(p) {
			addTo(used, podRequests(p))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, p := range s.assumed {
		if bound, err := s.pods.Pods(p.Namespace).Get(p.Name); !seen[uid] || (err == nil && bound.Spec.NodeName != "") {
			delete(s.assumed, uid) // gone, or the informer caught up
			continue
		}
		addTo(used, podRequests(p))
	}
	return used
}

// podRequests is what a pod takes from a node: its effective requests and one pod.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	r[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return r
}

func addTo(sum, r corev1.ResourceList) {
	for name, q := range r {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// unfit lists why pod cannot go to node given the resources already used there, in
// kube-scheduler's words; none when it fits.
func (s *Scheduler) unfit(pod *corev1.Pod, node *corev1.Node, used corev1.ResourceList) []string {
	for _, v := range pod.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil {
			if _, err := s.claims.PersistentVolumeClaims(pod.Namespace).Get(c.ClaimName); apierrors.IsNotFound(err) {
				return []string{fmt.Sprintf("persistentvolumeclaim %q not found", c.ClaimName)}
			}
		}
	}
	return nodeUnfit(pod, node, used)
}

// nodeUnfit checks the pod against one node: affinity, taints and resources.
func nodeUnfit(pod *corev1.Pod, node *corev1.Node, used corev1.ResourceList) []string {
	var reasons []string
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		reasons = append(reasons, "node(s) didn't match Pod's node affinity/selector")
	}
	noSchedule := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	if t, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, noSchedule, false); found {
		reasons = append(reasons, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
	}
	req := podRequests(pod)
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q, want := node.Status.Allocatable[corev1.ResourceName(name)], req[corev1.ResourceName(name)]
		if want.IsZero() {
			continue
		}
		total := used[corev1.ResourceName(name)].DeepCopy()
		total.Add(want)
		if total.Cmp(q) > 0 {
			if name == string(corev1.ResourcePods) {
				reasons = append(reasons, "Too many pods")
			} else {
				reasons = append(reasons, "Insufficient "+name)
			}
		}
	}
	return reasons
}

// unschedulableMessage words reasons as kube-scheduler does for a one-node cluster.
func unschedulableMessage(reasons []string) string {
	if strings.HasPrefix(reasons[0], "persistentvolumeclaim") {
		return "0/1 nodes are available: " + reasons[0] + "."
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = "1 " + r
	}
	return "0/1 nodes are available: " + strings.Join(parts, ", ") + "."
}

// markUnschedulable sets PodScheduled=False with the reasons (when they changed)
// and records a FailedScheduling event.
func (s *Scheduler) markUnschedulable(ctx context.Context, pod *corev1.Pod, reasons []string) {
	msg := unschedulableMessage(reasons)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message == msg {
			return
		}
	}
	pod = pod.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(s.clock.Now())}
	replaced := false
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		pod.Status.Conditions = append(pod.Status.Conditions, cond)
	}
	if _, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		s.log.V(1).Info("marking unschedulable", "pod", klog.KObj(pod), "error", err.Error())
		return
	}
	s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", msg)
}

// bind assigns the pod to the node through the binding subresource.
func (s *Scheduler) bind(ctx context.Context, pod *corev1.Pod) error {
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: s.nodeName},
	}, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // bound already, or gone
		}
		return err
	}
	s.mu.Lock()
	s.assumed[pod.UID] = pod
	s.mu.Unlock()
	s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, s.nodeName)
	return nil
}
