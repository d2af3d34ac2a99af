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
	"net/http"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// informerResync is how often the virtual kubelet's informers replay their objects.
const informerResync = time.Minute

// virtualKubelet runs virtual-kubelet's node controller (the Node object, its status
// and lease) and pod controller (the pods bound to the node, run by the provider).
// It wires them as virtual-kubelet's nodeutil package does for a node whose HTTP
// server is served elsewhere, without linking nodeutil: nodeutil brings in about 140
// packages of the API server's libraries for TLS and authentication options the
// process node does not use, which every espo command, the manager's included,
// would otherwise initialise (about 3 MiB of its memory).
type virtualKubelet struct {
	nodes     *node.NodeController
	pods      *node.PodController
	status    *node.NaiveNodeProviderV2
	spec      *corev1.Node
	informers []*coreInformerFactory
	workers   int

	ready chan struct{} // closed once both controllers run and the node is Ready
	done  chan struct{} // closed when Run returns; err is then its error
	err   error
}

// newVirtualKubelet prepares the controllers of the node spec for the provider p,
// reaching the API server with client and recording pod events with recorder; the
// kubelet API (logs, exec) is served under routes. Run starts them.
func newVirtualKubelet(client kubernetes.Interface, spec corev1.Node, p *provider, recorder record.EventRecorder,
	routes *http.ServeMux, workers int) (*virtualKubelet, error) {
	boundHere := newCoreInformerFactory(client, informerResync, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", spec.Name).String()
	})
	all := newCoreInformerFactory(client, informerResync, nil)
	podInformer := boundHere.Core().Pods()
	routes.Handle("/", api.PodHandler(api.PodHandlerConfig{
		RunInContainer:        p.RunInContainer,
		AttachToContainer:     p.AttachToContainer,
		PortForward:           p.PortForward,
		GetContainerLogs:      p.GetContainerLogs,
		GetPods:               p.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) { return podInformer.Lister().List(labels.Everything()) },
		GetStatsSummary:       p.GetStatsSummary,
		GetMetricsResource:    p.GetMetricsResource,
	}, true))

	vk := &virtualKubelet{status: node.NewNaiveNodeProvider(), spec: &spec, workers: workers,
		informers: []*coreInformerFactory{boundHere, all},
		ready:     make(chan struct{}), done: make(chan struct{})}
	var err error
	vk.nodes, err = node.NewNodeController(vk.status, vk.spec, client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(client.CoordinationV1().Leases(corev1.NamespaceNodeLease), node.DefaultLeaseDuration))
	if err != nil {
		return nil, fmt.Errorf("node controller: %w", err)
	}
	vk.pods, err = node.NewPodController(node.PodControllerConfig{
		PodClient:         client.CoreV1(),
		PodInformer:       podInformer,
		EventRecorder:     recorder,
		Provider:          p,
		ConfigMapInformer: all.Core().ConfigMaps(),
		SecretInformer:    all.Core().Secrets(),
		ServiceInformer:   all.Core().Services(),
		// The provider resolves the environment itself, status.podIP included.
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return nil, fmt.Errorf("pod controller: %w", err)
	}
	return vk, nil
}

// Run starts the informers and the pod controller, then the node controller once the
// pod controller is ready, then marks the node Ready, and runs until ctx is done or
// a controller stops; it returns once both have stopped.
func (vk *virtualKubelet) Run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		vk.err = err
		close(vk.done)
	}()
	for _, f := range vk.informers {
		f.Start(ctx.Done())
	}
	go vk.pods.Run(ctx, vk.workers) //nolint:errcheck // its error is read from vk.pods.Err
	defer func() { cancel(); <-vk.pods.Done() }()
	if err := waitReady(ctx, vk.pods.Ready(), vk.pods.Done(), vk.pods.Err); err != nil {
		return fmt.Errorf("pod controller: %w", err)
	}
	go vk.nodes.Run(ctx) //nolint:errcheck // its error is read from vk.nodes.Err
	defer func() { cancel(); <-vk.nodes.Done() }()
	if err := waitReady(ctx, vk.nodes.Ready(), vk.nodes.Done(), vk.nodes.Err); err != nil {
		return fmt.Errorf("node controller: %w", err)
	}
	if err := vk.status.UpdateStatus(ctx, markReady(vk.spec)); err != nil {
		return fmt.Errorf("marking the node Ready: %w", err)
	}
	close(vk.ready)
	select {
	case <-vk.nodes.Done():
		return vk.nodes.Err()
	case <-vk.pods.Done():
		return vk.pods.Err()
	}
}

// waitReady waits until ready is closed (nil), or done is (the controller's err), or
// ctx ends (its error).
func waitReady(ctx context.Context, ready, done <-chan struct{}, err func() error) error {
	select {
	case <-ready:
		return nil
	case <-done:
		return err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// markReady sets the node's phase Running and its Ready condition True, as a kubelet
// that has started reports, and returns it.
func markReady(n *corev1.Node) *corev1.Node {
	n.Status.Phase = corev1.NodeRunning
	now := metav1.Now()
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", Message: "kubelet is ready", LastHeartbeatTime: now, LastTransitionTime: now}
		}
	}
	return n
}

// Ready is closed once the node runs and is Ready.
func (vk *virtualKubelet) Ready() <-chan struct{} { return vk.ready }

// Done is closed when Run has returned.
func (vk *virtualKubelet) Done() <-chan struct{} { return vk.done }

// Err is Run's error, once Done is closed.
func (vk *virtualKubelet) Err() error {
	select {
	case <-vk.done:
		return vk.err
	default:
		return nil
	}
}
