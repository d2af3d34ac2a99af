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
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/espo-dev/espo-operator/internal/localcluster/podenv"
	"github.com/espo-dev/espo-operator/internal/localcluster/podnet"
)

// nodeIP is the process node's address (status.hostIP, and where the API server
// reaches its kubelet endpoint).
const nodeIP = "127.0.0.1"

// provider is the virtual-kubelet provider that runs each pod's containers as local
// processes. It keeps one podRun per pod, by namespace/name.
type provider struct {
	cfg      *Config
	client   kubernetes.Interface
	api      apiEndpoint
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      logr.Logger
	ips      *ipPool
	hosts    *hostsTable

	mu       sync.Mutex
	pods     map[string]*podRun
	notifyFn func(*corev1.Pod)
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// CreatePod starts running a pod bound to this node: it gives the pod an address and
// starts its podRun, which prepares the pod and starts its processes in the
// background. It fails only when no address is left. The run of an older pod of the
// same name (one deleted while the node did not hear of it, as when the API server was
// away) is discarded first: a new pod never takes over an old one's run or status.
func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	if old, ok := p.pods[key]; ok {
		if old.uid() == pod.UID {
			p.mu.Unlock()
			return nil
		}
		delete(p.pods, key)
		go p.discard(old)
	}
	ip, err := p.ips.allocate(pod.UID)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	dir := filepath.Join(p.cfg.StateDir, "pods", pod.Namespace, pod.Name+"-"+string(pod.UID))
	r := newPodRun(p, pod.DeepCopy(), dir, ip)
	p.pods[key] = r
	p.mu.Unlock()
	if err := p.hosts.add(key, podNames(pod), ip); err != nil {
		p.log.Error(err, "writing the hosts file", "pod", key)
	}
	p.log.V(1).Info("starting pod", "pod", key, "ip", ip)
	go r.run()
	return nil
}

// podNames are the DNS names of a pod with a hostname and subdomain.
func podNames(pod *corev1.Pod) []string {
	if pod.Spec.Hostname == "" || pod.Spec.Subdomain == "" {
		return nil
	}
	base := fmt.Sprintf("%s.%s.%s.svc", pod.Spec.Hostname, pod.Spec.Subdomain, pod.Namespace)
	return []string{base, base + ".cluster.local"}
}

// UpdatePod takes the pod's new metadata; processes keep running (a pod's containers
// cannot change).
func (p *provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.lookup(pod.Namespace, pod.Name)
	switch {
	case r == nil:
	case r.uid() != pod.UID: // a new pod under an old one's name: see CreatePod
		return p.CreatePod(ctx, pod)
	default:
		r.setSpec(pod.DeepCopy())
	}
	return nil
}

// DeletePod stops the pod's processes (SIGTERM, SIGKILL after the deletion grace
// period) and, once they have exited, reports the final status and removes the
// pod's folder, address and names. It returns at once.
func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r := p.lookup(pod.Namespace, pod.Name)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	grace := gracePeriod(pod)
	if s := pod.DeletionGracePeriodSeconds; s != nil {
		grace = secondsDuration(*s)
	}
	r.stop(grace)
	go p.forget(r)
	return nil
}

// forget waits for a stopped pod's processes, reports its last status, frees what
// it held and, as kubelet does, removes the deleted pod's object at once (virtual-
// kubelet would wait out the rest of its grace period, holding up a controller that
// waits for the pod to go).
func (p *provider) forget(r *podRun) {
	<-r.done
	r.notify()
	ns, name, uid := p.release(r)
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	err := p.client.CoreV1().Pods(ns).Delete(context.Background(), name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.log.Error(err, "removing the deleted pod", "pod", podKey(ns, name))
	}
}

// discard kills the processes of a pod that is gone from Kubernetes (a newer pod took
// its name) and frees what it held, without reporting its status: the pod of that
// name is the newer one.
func (p *provider) discard(r *podRun) {
	r.stop(0)
	<-r.done
	p.release(r)
}

// release frees what an ended run held: its place among the node's pods (unless a
// newer pod of its name took it), its names, its address and its folder. It returns
// the pod's namespace, name and UID.
func (p *provider) release(r *podRun) (ns, name string, uid types.UID) {
	r.mu.Lock()
	ns, name, uid = r.pod.Namespace, r.pod.Name, r.pod.UID
	r.mu.Unlock()
	key := podKey(ns, name)
	p.mu.Lock()
	if p.pods[key] == r {
		delete(p.pods, key)
	}
	p.mu.Unlock()
	if err := p.hosts.remove(key, r.ip); err != nil {
		p.log.Error(err, "writing the hosts file", "pod", key)
	}
	p.ips.release(uid)
	if err := os.RemoveAll(r.dir); err != nil {
		p.log.Error(err, "removing the pod's folder", "pod", key)
	}
	return ns, name, uid
}

// stopAll stops every pod and waits for their processes to exit.
func (p *provider) stopAll() {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		r.stop(r.grace)
	}
	for _, r := range runs {
		<-r.done
	}
}

func (p *provider) lookup(namespace, name string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(namespace, name)]
}

// GetPod returns the pod with its current status.
func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := p.lookup(namespace, name)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's current status.
func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod on this node.
func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		pods = append(pods, r.snapshot())
	}
	return pods, nil
}

// NotifyPods registers the pod controller's callback for status changes.
func (p *provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	p.notifyFn = f
	p.mu.Unlock()
}

func (p *provider) notify(pod *corev1.Pod) {
	p.mu.Lock()
	f := p.notifyFn
	p.mu.Unlock()
	if f != nil {
		f(pod)
	}
}

// GetContainerLogs serves a container's log file (kubectl logs): the current run's,
// or the previous one's with Previous; Tail, LimitBytes and Follow are honoured,
// Timestamps and Since are not (the log has no timestamps).
func (p *provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r := p.lookup(namespace, podName)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, podName)
	}
	return r.logs(ctx, containerName, opts)
}

// RunInContainer is not supported: a process has no container to enter.
func (p *provider) RunInContainer(context.Context, string, string, string, []string, api.AttachIO) error {
	return errdefs.InvalidInput("the process node does not support exec")
}

// AttachToContainer is not supported.
func (p *provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("the process node does not support attach")
}

// PortForward is not supported: connect to the pod's address directly.
func (p *provider) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errdefs.InvalidInput("the process node does not support port-forward; pods listen on their own 127.x address")
}

// GetStatsSummary reports an empty summary.
func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.cfg.NodeName}}, nil
}

// GetMetricsResource reports no metrics.
func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}

// launch is how one container's process is started.
type launch struct {
	argv []string
	env  []string
	dir  string
}

// prepare readies a pod to start: its volumes, service-account credentials, file
// tree and each container's launch. It may be called again after a failure.
func (p *provider) prepare(ctx context.Context, r *podRun) error {
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	r.mu.Unlock()
	root := r.rootDir()
	rewrite := newPathRewriter(root, mountPaths(pod))
	vm := &volumeMaker{client: p.client, stateDir: p.cfg.StateDir, pod: pod, podDir: r.dir, rewrite: rewrite}
	dirs, err := vm.make(ctx)
	if err != nil {
		return &prepError{reason: reasonFailedMount, err: err}
	}
	var kubeconfig string
	if mountsServiceAccount(pod) {
		kubeconfig = filepath.Join(r.dir, "kubeconfig")
		if err := writePodKubeconfig(kubeconfig, p.api, pod.Namespace, rewrite.Path(ServiceAccountMountPath)); err != nil {
			return &prepError{reason: reasonFailedMount, err: err}
		}
	}
	if err := mountAll(root, pod, dirs); err != nil {
		return &prepError{reason: reasonFailedMount, err: err}
	}
	for _, c := range append(append([]*containerRun{}, r.inits...), r.containers...) {
		l, err := p.launchOf(ctx, pod, r, c, rewrite, kubeconfig)
		if err != nil {
			return &prepError{reason: reasonConfigError, err: err, container: c.spec.Name}
		}
		r.mu.Lock()
		c.launch = l
		r.mu.Unlock()
	}
	return nil
}

// launchOf computes a container's argv, environment and working folder. The
// environment is the node's variables (see Config's doc), overridden by the
// container's own, with ESPO_POD_IP, ESPO_HOSTS_FILE, ESPO_POD_ROOT and
// ESPO_TERMINATION_MESSAGE_PATH always the node's; every value, the command and
// args have their paths rewritten, the container's terminationMessagePath to its
// own termination message file.
func (p *provider) launchOf(ctx context.Context, pod *corev1.Pod, r *podRun, cr *containerRun, rewrite *pathRewriter, kubeconfig string) (*launch, error) {
	c := &cr.spec
	res := &envResolver{client: p.client, pod: pod, podIP: r.ip, hostIP: nodeIP}
	own, err := res.resolve(ctx, c)
	if err != nil {
		return nil, err
	}
	rewrite = rewrite.withFile(terminationMessagePath(c), cr.messagePath())
	env := p.nodeEnv(pod, r, kubeconfig)
	for k, v := range own {
		env[k] = rewrite.String(v)
	}
	env[podnet.EnvPodIP], env[podnet.EnvHostsFile], env[podenv.PodRoot] = r.ip, p.hosts.path, r.rootDir()
	env[podenv.TerminationMessagePath] = cr.messagePath()
	argv := rewrite.Strings(expandAll(append(append([]string{}, c.Command...), c.Args...), own))
	dir := filepath.Join(r.rootDir(), filepath.FromSlash(c.WorkingDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	env["PWD"] = dir // shells show the working directory as the container would name it
	return &launch{argv: argv, env: environ(env), dir: dir}, nil
}

// nodeEnv is what the node gives every process before the container's own
// variables: PATH (Config.BinDirs, then the node's PATH), HOME and TMPDIR under the
// pod's root, HOSTNAME, the API server's address as in a cluster
// (KUBERNETES_SERVICE_HOST/PORT) and, with a service-account token, KUBECONFIG.
func (p *provider) nodeEnv(pod *corev1.Pod, r *podRun, kubeconfig string) map[string]string {
	path := os.Getenv("PATH")
	for i := len(p.cfg.BinDirs) - 1; i >= 0; i-- {
		path = p.cfg.BinDirs[i] + string(os.PathListSeparator) + path
	}
	tmp := filepath.Join(r.rootDir(), "tmp")
	_ = os.MkdirAll(tmp, 0o777)
	host := pod.Spec.Hostname
	if host == "" {
		host = pod.Name
	}
	env := map[string]string{
		"PATH": path, "HOME": r.rootDir(), "TMPDIR": tmp, "HOSTNAME": host,
		"KUBERNETES_SERVICE_HOST": p.api.hostname(), "KUBERNETES_SERVICE_PORT": p.api.port(),
	}
	if kubeconfig != "" {
		env["KUBECONFIG"] = kubeconfig
	}
	if runtime.GOOS == "linux" {
		env["LANG"] = "C.UTF-8"
	}
	return env
}
