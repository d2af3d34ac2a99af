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

// Package localcluster is a Kubernetes node that runs each pod's containers as local
// processes, for the local mode ("espo local up") and the end-to-end tests on
// machines without a container runtime. It is a virtual-kubelet provider
// (github.com/virtual-kubelet/virtual-kubelet's node controllers) together with a
// minimal scheduler (Scheduler) and owner-reference garbage collector
// (GarbageCollector), since no kube-scheduler or kube-controller-manager runs.
//
// # What a container sees
//
// Each pod has a folder <state>/pods/<namespace>/<name>-<uid> holding:
//
//	root/            the pod's file tree: every volume mount at root/<mountPath>
//	                 (a symbolic link to the volume), so the service-account token
//	                 volume the ServiceAccount admission plugin adds is at
//	                 root/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}
//	volumes/<name>/  emptyDir, configMap, secret, downwardAPI and projected volumes
//	kubeconfig       the pod's service account's kubeconfig (its token, not admin's)
//	containers/<c>/  <run>.log (stdout and stderr of run 0, 1, ...) and pid
//
// PersistentVolumeClaims are <state>/pvc/<namespace>/<claim> (ClaimDir), shared by
// every pod that mounts them; the claim object must exist.
//
// A container's command+args run directly (no shell, no image: command[0] is looked
// up in PATH, which starts with Config.BinDirs), in root/<workingDir>, as the node's
// user (securityContext is ignored; readOnly mounts are writable). Absolute paths in
// the command, args, env values and ConfigMap volume data are rewritten to root+path
// when they are a mount path, under one, or an ancestor of one (so "/etc/espo/run.yaml"
// becomes "<root>/etc/espo/run.yaml", "/data" becomes "<root>/data" when
// "/data/smartspot" is mounted, and "/bin/sh" or "/etc/hosts" stay the machine's own);
// paths a program builds from other sources are not, and ESPO_POD_ROOT gives the
// root for those. Each container has its own termination message file, created
// empty before each run: the process finds it as ESPO_TERMINATION_MESSAGE_PATH, and
// its terminationMessagePath in the command, args and env values is rewritten to it;
// the node reads it when the process ends, as kubelet does (with
// FallbackToLogsOnError, the log's tail when it is empty after a failure).
//
// The environment is only: the container's env and envFrom (fieldRef metadata.*,
// spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP; ConfigMap
// and Secret keys), over PATH, HOME=root, TMPDIR=root/tmp, HOSTNAME, LANG,
// KUBERNETES_SERVICE_HOST/PORT (the API server), KUBECONFIG (the pod's kubeconfig,
// when a token is mounted: client-go's in-cluster config reads a fixed path, so
// ctrl.GetConfig finds KUBECONFIG instead), and always ESPO_POD_IP (the pod's own
// 127.x address, also status.podIP), ESPO_HOSTS_FILE (see package podnet),
// ESPO_POD_ROOT and ESPO_TERMINATION_MESSAGE_PATH. Servers must listen and dial
// through podnet.FromEnv(), which binds ESPO_POD_IP and resolves pod names in the
// hosts file, because all pods share the machine's ports and there is no cluster
// DNS.
package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

// Resource names of the node's allocatable GPUs.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// LabelProcessNode marks the Node objects of process nodes.
const LabelProcessNode = "espo.dev/process-node"

// Config configures a process node. Zero fields take the defaults of Defaults.
type Config struct {
	// NodeName is the Node's name.
	NodeName string
	// StateDir holds the pods' folders, the claims' folders and the hosts file.
	StateDir string
	// CPU, Memory and Pods are the node's allocatable resources; GPUs the number of
	// (fake) nvidia.com/gpu it offers.
	CPU, Memory resource.Quantity
	Pods        int64
	GPUs        int64
	// Labels are added to the Node's; Taints are its taints.
	Labels map[string]string
	Taints []corev1.Taint
	// PodCIDR is the loopback prefix of the pods' addresses (inside 127.0.0.0/8).
	PodCIDR string
	// BinDirs come first in every process's PATH (where "espo" is found).
	BinDirs []string
	// Clock drives every timer of the node; Log receives its logs.
	Clock clock.WithTicker
	Log   logr.Logger
}

// Defaults of Config.
const (
	DefaultNodeName = "espo-local"
	DefaultPodCIDR  = "127.0.1.0/24"
)

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.NodeName == "" {
		c.NodeName = DefaultNodeName
	}
	if c.CPU.IsZero() {
		c.CPU = *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)
	}
	if c.Memory.IsZero() {
		c.Memory = resource.MustParse("16Gi")
	}
	if c.Pods == 0 {
		c.Pods = 110
	}
	if c.PodCIDR == "" {
		c.PodCIDR = DefaultPodCIDR
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	return c
}

// HostsFile is the node's hosts file (see package podnet).
func (c Config) HostsFile() string { return filepath.Join(c.StateDir, "hosts") }

// Node is a running process node.
type Node struct {
	cfg      Config
	client   kubernetes.Interface
	provider *provider
	vk       *virtualKubelet
	listener net.Listener
	handler  *http.ServeMux
	events   record.EventBroadcaster
	ready    chan struct{} // closed once registered, ready and untainted
}

// NewNode prepares a process node that reaches the API server with restCfg (which
// must be allowed to manage nodes, pods and events, and to request tokens). Run
// starts it.
func NewNode(cfg Config, restCfg *rest.Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if cfg.StateDir == "" {
		return nil, errors.New("process node: StateDir is required")
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	client, err := newCoreClient(restCfg)
	if err != nil {
		return nil, err
	}
	api, err := endpointOf(restCfg)
	if err != nil {
		return nil, err
	}
	ips, err := newIPPool(cfg.PodCIDR)
	if err != nil {
		return nil, err
	}
	hostsTable, err := newHostsTable(cfg.HostsFile())
	if err != nil {
		return nil, err
	}
	listener, err := freeLoopbackListener()
	if err != nil {
		return nil, err
	}
	events := record.NewBroadcaster()
	n := &Node{cfg: cfg, client: client, listener: listener, handler: http.NewServeMux(), events: events,
		ready: make(chan struct{})}
	n.provider = &provider{cfg: &n.cfg, client: client, api: api, clock: cfg.Clock, log: cfg.Log, ips: ips,
		hosts: hostsTable, pods: map[string]*podRun{},
		recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})}
	n.vk, err = newVirtualKubelet(client, n.nodeSpec(), n.provider, n.provider.recorder, n.handler, 4)
	if err != nil {
		listener.Close()
		return nil, err
	}
	return n, nil
}

// endpointOf is the API server's URL and CA as pods should use them.
func endpointOf(cfg *rest.Config) (apiEndpoint, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return apiEndpoint{}, err
		}
		ca = b
	}
	return apiEndpoint{host: cfg.Host, caData: ca}, nil
}

// nodeSpec is the Node object the node registers.
func (n *Node) nodeSpec() corev1.Node {
	c := &n.cfg
	labels := map[string]string{
		corev1.LabelHostname: c.NodeName, corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH,
		"type": "virtual-kubelet", LabelProcessNode: "true",
	}
	for k, v := range c.Labels {
		labels[k] = v
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU: c.CPU, corev1.ResourceMemory: c.Memory,
		corev1.ResourcePods: *resource.NewQuantity(c.Pods, resource.DecimalSI),
		GPUResource:         *resource.NewQuantity(c.GPUs, resource.DecimalSI),
	}
	port, _ := strconv.Atoi(portOf(n.listener.Addr()))
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: c.Taints},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodePending,
			Capacity:    resources,
			Allocatable: resources,
			// Only the address: the API server would try a Hostname address first, and the
			// node's name does not resolve.
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
				KubeletVersion: "v0.0.0-espo-process-node", ContainerRuntimeVersion: "process://",
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady}, {Type: corev1.NodeDiskPressure}, {Type: corev1.NodeMemoryPressure},
				{Type: corev1.NodePIDPressure}, {Type: corev1.NodeNetworkUnavailable},
			},
		},
	}
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}

// Run registers the node, serves its kubelet endpoint (logs) and runs its pods until
// ctx is done; then it stops every pod's processes and returns.
func (n *Node) Run(ctx context.Context) error {
	n.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: n.client.CoreV1().Events("")})
	defer n.events.Shutdown()
	srv, err := n.kubeletServer()
	if err != nil {
		return err
	}
	go func() { _ = srv.ServeTLS(n.listener, "", "") }()
	defer srv.Close()
	defer n.provider.stopAll()
	go n.untaintWhenReady(ctx)
	return n.vk.Run(ctx)
}

// untaintWhenReady removes the node.kubernetes.io/not-ready taint the API server
// puts on every new Node (kube-controller-manager's node lifecycle controller would
// remove it once the node reports Ready), then closes n.ready.
func (n *Node) untaintWhenReady(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-n.vk.Ready():
	}
	err := retry.OnError(retry.DefaultBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = n.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.cfg.Log.Error(err, "removing the not-ready taint")
		return
	}
	close(n.ready)
}

// WaitReady waits until the node is registered, ready and free of the not-ready
// taint, or timeout passes.
func (n *Node) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case <-n.ready:
		return nil
	case <-n.vk.Done():
		return fmt.Errorf("process node stopped before it was ready: %w", n.vk.Err())
	case <-ctx.Done():
		return fmt.Errorf("process node not ready: %w", ctx.Err())
	}
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// kubeletServer serves the provider's routes (containerLogs, for kubectl logs) on
// the node's address with a self-signed certificate: the API server does not check
// a kubelet's certificate unless told to, and the endpoint takes no credentials, so
// it listens on the loopback address only.
func (n *Node) kubeletServer() (*http.Server, error) {
	cert, err := selfSignedCert(n.cfg.NodeName, n.cfg.Clock.Now())
	if err != nil {
		return nil, err
	}
	return &http.Server{
		Handler:           n.handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}, nil
}

// KubeletAddr is the address of the node's kubelet endpoint.
func (n *Node) KubeletAddr() string { return n.listener.Addr().String() }
