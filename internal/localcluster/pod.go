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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Backoffs of a pod: between failed preparations (missing claim, config map, service
// account) and between restarts of a container.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 10 * time.Second
)

// Event and waiting reasons a pod shows while it cannot start, as kubelet names them.
const (
	reasonFailedMount       = "FailedMount"
	reasonConfigError       = "CreateContainerConfigError"
	reasonContainerCreating = "ContainerCreating"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonStartError        = "StartError"
)

// podRun is a pod on this node: its folder, address, containers and their
// processes. run drives it from preparation to the end of its last container; stop
// ends it. Its mutable fields are guarded by mu.
type podRun struct {
	node   *provider
	dir    string
	ip     string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	notifyMu   sync.Mutex // orders notify's snapshots
	pod        *corev1.Pod
	waiting    *prepError // why the pod cannot start yet, while it cannot
	started    bool       // the pod's folders and credentials are ready
	startTime  metav1.Time
	initDone   bool
	inits      []*containerRun
	containers []*containerRun
	grace      time.Duration
}

// containerRun is one container of a podRun; guarded by the podRun's mu.
type containerRun struct {
	spec     corev1.Container
	dir      string // logs and pid
	launch   *launch
	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	proc     *process
}

// prepError is why a pod cannot start yet: an event reason and the error, and the
// container it is about when it is one container's (CreateContainerConfigError).
type prepError struct {
	reason    string
	err       error
	container string
}

func (e *prepError) Error() string {
	if e.container != "" {
		return fmt.Sprintf("container %q: %v", e.container, e.err)
	}
	return e.err.Error()
}

func newPodRun(node *provider, pod *corev1.Pod, dir, ip string) *podRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &podRun{node: node, pod: pod, dir: dir, ip: ip, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		grace: gracePeriod(pod)}
	for _, c := range pod.Spec.InitContainers {
		r.inits = append(r.inits, newContainerRun(c, dir))
	}
	for _, c := range pod.Spec.Containers {
		r.containers = append(r.containers, newContainerRun(c, dir))
	}
	return r
}

func newContainerRun(c corev1.Container, podDir string) *containerRun {
	return &containerRun{spec: c, dir: filepath.Join(podDir, "containers", c.Name),
		state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}}
}

// gracePeriod is how long stop waits between SIGTERM and SIGKILL by default.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// run prepares the pod (retrying until it can), runs its init containers one by one,
// then its containers together, and returns when they are all done (or stop ended
// them).
func (r *podRun) run() {
	defer close(r.done)
	if !r.prepareUntilReady() {
		return
	}
	for _, c := range r.inits {
		if code := r.runContainer(c, initRestartPolicy(r.pod.Spec.RestartPolicy)); r.ctx.Err() != nil || code != 0 {
			r.finishUnstarted()
			return
		}
	}
	r.update(func() { r.initDone = true })
	var wg sync.WaitGroup
	for _, c := range r.containers {
		wg.Go(func() { r.runContainer(c, r.pod.Spec.RestartPolicy) })
	}
	wg.Wait()
}

// prepareUntilReady prepares the pod with growing pauses until it succeeds (true)
// or the pod is stopped (false). Each new reason is reported as a warning event.
func (r *podRun) prepareUntilReady() bool {
	backoff := initialBackoff
	for {
		err := r.node.prepare(r.ctx, r)
		if err == nil {
			r.update(func() { r.waiting, r.started, r.startTime = nil, true, metav1.NewTime(r.node.clock.Now()) })
			return true
		}
		var pe *prepError
		if !errors.As(err, &pe) {
			pe = &prepError{reason: reasonFailedMount, err: err}
		}
		r.noteWaiting(pe)
		select {
		case <-r.ctx.Done():
			r.finishUnstarted()
			return false
		case <-r.node.clock.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// noteWaiting records why the pod cannot start, with an event when the reason is new.
func (r *podRun) noteWaiting(pe *prepError) {
	r.mu.Lock()
	changed := r.waiting == nil || r.waiting.Error() != pe.Error()
	r.waiting = pe
	pod := r.pod
	r.mu.Unlock()
	if changed {
		r.node.recorder.Event(pod, corev1.EventTypeWarning, pe.reason, bounded(pe.Error()))
		r.notify()
	}
}

// finishUnstarted marks every container that never ran as terminated, so that the pod
// reaches a final state when it is stopped before starting.
func (r *podRun) finishUnstarted() {
	r.update(func() {
		for _, c := range append(append([]*containerRun{}, r.inits...), r.containers...) {
			if c.state.Waiting != nil {
				c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown", Message: "the pod was stopped before this container started",
					FinishedAt: metav1.NewTime(r.node.clock.Now()),
				}}
			}
		}
	})
}

// runContainer runs a container's process, restarting it as policy says, until it
// is done for good or the pod is stopped, and returns its last exit code.
func (r *podRun) runContainer(c *containerRun, policy corev1.RestartPolicy) int32 {
	backoff := initialBackoff
	for {
		exit := r.runOnce(c)
		if r.ctx.Err() != nil || !restarts(policy, exit) {
			return exit
		}
		r.update(func() {
			c.last, c.restarts = c.state, c.restarts+1
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting container %s", backoff, c.spec.Name)}}
		})
		select {
		case <-r.ctx.Done():
			return exit
		case <-r.node.clock.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// initRestartPolicy is how init containers restart: never after success.
func initRestartPolicy(p corev1.RestartPolicy) corev1.RestartPolicy {
	if p == corev1.RestartPolicyNever {
		return p
	}
	return corev1.RestartPolicyOnFailure
}

// restarts reports whether a container that exited with code is started again.
func restarts(policy corev1.RestartPolicy, code int32) bool {
	return policy == corev1.RestartPolicyAlways || policy == "" || (policy == corev1.RestartPolicyOnFailure && code != 0)
}

// runOnce starts the container's process, waits for it to end (stopping it when the
// pod is stopped), records the terminated state and returns the exit code.
func (r *podRun) runOnce(c *containerRun) int32 {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return r.terminate(c, 128, reasonStartError, err.Error(), nil)
	}
	if err := os.WriteFile(c.messagePath(), nil, 0o644); err != nil { // a fresh one for each run
		return r.terminate(c, 128, reasonStartError, err.Error(), nil)
	}
	proc, err := startProcess(c.launch.argv, c.launch.env, c.launch.dir, c.logPath(c.restarts))
	if err != nil {
		return r.terminate(c, 128, reasonStartError, err.Error(), nil)
	}
	_ = os.WriteFile(filepath.Join(c.dir, "pid"), []byte(strconv.Itoa(proc.pid())), 0o644)
	started := metav1.NewTime(r.node.clock.Now())
	r.update(func() {
		c.proc = proc
		c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	})
	select {
	case <-proc.done:
	case <-r.ctx.Done():
		r.mu.Lock()
		grace := r.grace
		r.mu.Unlock()
		proc.stop(grace, r.node.clock)
	}
	_ = os.Remove(filepath.Join(c.dir, "pid"))
	code := int32(proc.exitCode)
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return r.terminate(c, code, reason, terminationMessage(c, code), &started)
}

// terminate records a container's end and returns its exit code.
func (r *podRun) terminate(c *containerRun, code int32, reason, message string, started *metav1.Time) int32 {
	t := &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message,
		FinishedAt: metav1.NewTime(r.node.clock.Now())}
	if started != nil {
		t.StartedAt = *started
	}
	r.update(func() { c.state, c.proc = corev1.ContainerState{Terminated: t}, nil })
	return code
}

// messagePath is the container's termination message file: the process finds it
// as $ESPO_TERMINATION_MESSAGE_PATH and at the container's terminationMessagePath.
func (c *containerRun) messagePath() string { return filepath.Join(c.dir, "termination-log") }

// logPath is the log file of a container's run number n (0 for the first run).
func (c *containerRun) logPath(n int32) string {
	return filepath.Join(c.dir, strconv.Itoa(int(n))+".log")
}

// rootDir is the pod's file tree: each mount path lies under it.
func (r *podRun) rootDir() string { return filepath.Join(r.dir, "root") }

// update changes the pod's state under its lock, then reports the new status.
func (r *podRun) update(change func()) {
	r.mu.Lock()
	change()
	r.mu.Unlock()
	r.notify()
}

// notify hands the pod's current status to the node's pod controller. Notices go
// out one at a time, each taken after the one before, so that of two containers
// ending together the pod controller keeps the later status, never the earlier.
func (r *podRun) notify() {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	r.node.notify(r.snapshot())
}

// snapshot is a copy of the pod with its current status.
func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.pod.DeepCopy()
	pod.Status = r.statusLocked()
	return pod
}

// stop ends the pod's processes (SIGTERM, then SIGKILL after grace) and returns
// without waiting; done is closed when they have all exited.
func (r *podRun) stop(grace time.Duration) {
	r.mu.Lock()
	r.grace = grace
	r.mu.Unlock()
	r.cancel()
}

// uid is the UID of the pod the run runs.
func (r *podRun) uid() types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.UID
}

// setSpec takes a newer version of the pod from Kubernetes (labels, annotations,
// deletion time); running processes are not touched.
func (r *podRun) setSpec(pod *corev1.Pod) {
	r.update(func() { r.pod = pod })
}

// bounded cuts a message to what an event or condition should hold.
func bounded(s string) string {
	const maxLen = 1024
	if len(s) <= maxLen {
		return s
	}
	return s[:maxLen-3] + "..."
}
