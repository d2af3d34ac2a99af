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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"

	"github.com/go-logr/logr"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/espo-dev/espo-operator/internal/controlplane"
)

// Timings of the local mode.
const (
	clusterStartTimeout = 2 * time.Minute
	stopTimeout         = 60 * time.Second
	progressInterval    = 2 * time.Second
	pollEvery           = 200 * time.Millisecond
)

// Files of the state folder.
const (
	fileKubeconfig = "kubeconfig"
	fileServePID   = "serve.pid"
	fileServeLog   = "serve.log"
	// fileControlPlanePIDs lists the pids of etcd and kube-apiserver.
	fileControlPlanePIDs = "controlplane.pids"
	fileManagerPID       = "manager.pid"
	fileManagerLog       = "manager.log"
	fileReady            = "ready"
	dirNode              = "node"
)

// Local is the local mode ("espo local"): a cluster on this machine whose state (pids,
// logs, the kubeconfig, the pods' folders) lives in StateDir, the manager against it,
// and a sample job followed to its end. Up and Down may be run any number of times.
type Local struct {
	// StateDir is the folder of the cluster's state.
	StateDir string
	// CRDDir is the folder of the CRDs Up installs.
	CRDDir string
	// PolicyFile is the file of the trainer status admission policy Up installs
	// (config/policy), without which the manager does not start.
	PolicyFile string
	// Sample is the job Up applies and follows; empty: none.
	Sample string
	// GPUs is how many fake nvidia.com/gpu the node offers.
	GPUs int64
	// CPU and Memory are the node's allocatable resources (quantities); an empty CPU is
	// the machine's cores.
	CPU, Memory string
	// Scheduler is which scheduler binds the pods; empty: builtin.
	Scheduler SchedulerKind
	// Timeout is how long Up follows the sample job.
	Timeout time.Duration
	// Clock times the waits.
	Clock clock.Clock
	// Out receives what Up and Down tell the user.
	Out io.Writer
	// Start starts "espo args..." in the background as StartDetached does (which it is
	// when nil); tests replace it.
	Start func(pidPath, logPath string, args ...string) (int, error)
	// Assets finds the control plane's binaries (kube-scheduler included with
	// SchedulerKube) of the repository at repoRoot, building them on first use; nil:
	// controlplane.Assets or controlplane.AssetsWithKubeScheduler. Tests replace it.
	Assets func(repoRoot string) (string, error)
}

func (l *Local) path(name string) string { return filepath.Join(l.StateDir, name) }

// DefaultStateDir is ${XDG_STATE_HOME:-~/.local/state}/espo-operator/local.
func DefaultStateDir() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "espo-operator", "local")
}

// Up starts the cluster unless it runs, installs the CRDs and the trainer status
// admission policy, starts the manager unless
// it runs, and follows the sample job (when there is one) to its end.
func (l *Local) Up(ctx context.Context) error {
	if err := l.ensureCluster(ctx); err != nil {
		return err
	}
	if err := l.installCRDs(ctx); err != nil {
		return err
	}
	if _, err := l.kubectl(ctx, "apply", "--server-side", "-f", l.PolicyFile); err != nil {
		return fmt.Errorf("installing the trainer status admission policy: %w", err)
	}
	fmt.Fprintf(l.Out, "Local cluster is up. To use it:\n\n  export KUBECONFIG=%s\n\n", l.path(fileKubeconfig))
	if err := l.ensureManager(); err != nil {
		return err
	}
	if l.Sample == "" {
		return nil
	}
	return l.runSample(ctx)
}

// ensureCluster starts "espo local serve" in the background unless it runs, and
// waits until it is ready. A serve that runs but is not ready yet (started by
// another "up") is waited for, not replaced: its control plane is only killed, as
// left behind, when the serve that recorded it is gone.
func (l *Local) ensureCluster(ctx context.Context) error {
	if alive(readPID(l.path(fileServePID))) {
		if exists(l.path(fileReady)) {
			fmt.Fprintf(l.Out, "Local cluster already running (state in %s).\n", l.StateDir)
			return nil
		}
		fmt.Fprintf(l.Out, "Local cluster starting (log: %s); waiting until it is ready ...\n", l.path(fileServeLog))
		return l.waitServeReady(ctx)
	}
	if err := os.MkdirAll(l.StateDir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(l.path(fileReady))
	killListed(l.path(fileControlPlanePIDs)) // left by a serve that was killed
	if err := l.buildKubeScheduler(); err != nil {
		return err
	}
	args := []string{"local", "serve", "--state-dir", l.StateDir, "--gpus", strconv.FormatInt(l.GPUs, 10), "--memory", l.Memory,
		"--scheduler", l.Scheduler.String()}
	if l.CPU != "" {
		args = append(args, "--cpu", l.CPU)
	}
	if _, err := l.startProc(l.path(fileServePID), l.path(fileServeLog), args...); err != nil {
		return err
	}
	fmt.Fprintf(l.Out, "Starting etcd, kube-apiserver and the process node (log: %s) ...\n", l.path(fileServeLog))
	return l.waitServeReady(ctx)
}

// buildKubeScheduler builds kube-scheduler, with SchedulerKube, unless it is built:
// here, with the script's progress on stderr, rather than in serve, whose start
// "up" waits for only clusterStartTimeout.
func (l *Local) buildKubeScheduler() error {
	if l.Scheduler != SchedulerKube {
		return nil
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	fmt.Fprintln(l.Out, "Finding kube-scheduler for --scheduler=kube (built once, about 1.5 minutes on 2 cores) ...")
	_, err = l.assets(root)
	return err
}

// assets is l.Assets, or controlplane's for l.Scheduler.
func (l *Local) assets(repoRoot string) (string, error) {
	switch {
	case l.Assets != nil:
		return l.Assets(repoRoot)
	case l.Scheduler == SchedulerKube:
		return controlplane.AssetsWithKubeScheduler(repoRoot)
	default:
		return controlplane.Assets(repoRoot)
	}
}

// waitServeReady waits until serve has written the ready file, and fails when serve
// exits first or is not ready in time (naming the way out when the recorded pid is
// no serve at all, as after a reboot without "down").
func (l *Local) waitServeReady(ctx context.Context) error {
	err := l.waitFor(ctx, clusterStartTimeout, func() (bool, error) {
		if exists(l.path(fileReady)) {
			return true, nil
		}
		if !alive(readPID(l.path(fileServePID))) {
			return false, fmt.Errorf("the local cluster stopped while starting; the end of %s:\n%s",
				l.path(fileServeLog), tailFile(l.path(fileServeLog), 20))
		}
		return false, nil
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("the local cluster (pid %d in %s) was not ready after %s; if no \"espo local serve\" runs "+
			"(the pid is another program's, after a reboot), run \"espo local down\" and try again; the end of %s:\n%s",
			readPID(l.path(fileServePID)), l.path(fileServePID), clusterStartTimeout, l.path(fileServeLog), tailFile(l.path(fileServeLog), 20))
	}
	return err
}

// startProc is l.Start, or startDetached.
func (l *Local) startProc(pidPath, logPath string, args ...string) (int, error) {
	if l.Start != nil {
		return l.Start(pidPath, logPath, args...)
	}
	return StartDetached(pidPath, logPath, args...)
}

// StartDetached starts "espo args..." in a session of its own (so that it outlives
// this command and "down" can stop its whole process group), with its output in
// logPath and its pid in pidPath.
func StartDetached(pidPath, logPath string, args ...string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, os.WriteFile(pidPath, []byte(strconv.Itoa(pid)), 0o644)
}

// Serve runs the cluster until ctx is done: the control plane, the process node,
// the scheduler (this package's, or kube-scheduler with SchedulerKube) and the
// garbage collector. It writes the admin kubeconfig, then the ready file once the
// node is ready. A kube-scheduler that exits on its own stops the cluster.
func (l *Local) Serve(ctx context.Context) error {
	klog.SetLogger(logr.Discard())
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	assets, err := l.assets(root)
	if err != nil {
		return err
	}
	start := controlplane.Start
	if l.Scheduler == SchedulerKube {
		start = controlplane.StartWithPodGroups
	}
	cp, err := start(assets)
	if err != nil {
		return err
	}
	defer cp.Stop()
	var opts []StartOption
	var ks *controlplane.KubeScheduler
	schedulerExited := make(<-chan struct{}) // never closed: builtin
	if l.Scheduler == SchedulerKube {
		if ks, err = cp.StartKubeScheduler(assets, l.StateDir); err != nil {
			return err
		}
		defer ks.Stop()
		opts, schedulerExited = append(opts, WithoutScheduler()), ks.Done()
	}
	if err := writeProcs(l.path(fileControlPlanePIDs), childrenNamed(os.Getpid(), controlPlaneCommands...)); err != nil {
		return err
	}
	kc, err := cp.AdminKubeconfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.path(fileKubeconfig), kc, 0o600); err != nil {
		return err
	}
	cfg, err := l.nodeConfig()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	node, err := StartNode(ctx, cfg, cp.Config, clusterStartTimeout, opts...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.path(fileReady), nil, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(l.Out, "local cluster ready; API server", cp.Config.Host, "node", node.Name(), "kubelet", node.KubeletAddr(), "scheduler", l.Scheduler.String())
	select {
	case <-ctx.Done():
		return <-node.Stopped()
	case <-schedulerExited:
		cancel()
		return errors.Join(ks.Err(), <-node.Stopped())
	}
}

// nodeConfig is the process node's configuration: its state under <state>/node, its
// resources from the flags, and the folder of this binary first in PATH (so that a
// pod's "espo" command is this espo).
func (l *Local) nodeConfig() (Config, error) {
	self, err := os.Executable()
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		StateDir: l.path(dirNode), GPUs: l.GPUs, BinDirs: []string{filepath.Dir(self)},
		Clock: clock.RealClock{}, Log: logr.Discard(),
	}
	for flag, dst := range map[string]*resource.Quantity{l.CPU: &cfg.CPU, l.Memory: &cfg.Memory} {
		if flag == "" {
			continue
		}
		q, err := resource.ParseQuantity(flag)
		if err != nil {
			return cfg, fmt.Errorf("node resources: %w", err)
		}
		*dst = q
	}
	return cfg, nil
}

// ensureManager starts "espo manager" (this binary) in the background unless it runs,
// against the local cluster's kubeconfig, with metrics and probes off (they would
// take ports) and text logs in manager.log; "espo local down" finds its pid in
// manager.pid.
func (l *Local) ensureManager() error {
	if alive(readPID(l.path(fileManagerPID))) {
		return nil
	}
	_, err := l.startProc(l.path(fileManagerPID), l.path(fileManagerLog), "manager", "--kubeconfig", l.path(fileKubeconfig),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "text")
	return err
}

// runSample applies the sample job, shows its `kubectl get espojobs` row until it
// finishes, and prints its accuracies.
func (l *Local) runSample(ctx context.Context) error {
	name, err := l.kubectl(ctx, "apply", "-f", l.Sample, "-o", "jsonpath={.metadata.name}")
	if err != nil {
		return err
	}
	job, err := l.follow(ctx, strings.TrimSpace(name))
	if err != nil {
		return err
	}
	printAccuracies(l.Out, job)
	if job.Status.Phase != trainingv1alpha1.PhaseSucceeded {
		return fmt.Errorf("job %s: %s", job.Name, job.Status.Phase)
	}
	return nil
}

// follow shows the job's `kubectl get espojobs` columns whenever they change (redrawn
// in place on a terminal, a new row otherwise), until the job finishes or l.Timeout
// passes, and returns the finished job.
func (l *Local) follow(ctx context.Context, name string) (*trainingv1alpha1.ESPOJob, error) {
	var last string
	var job *trainingv1alpha1.ESPOJob
	err := l.waitForEvery(ctx, l.Timeout, progressInterval, func() (bool, error) {
		if err := l.stillRunning(); err != nil {
			return false, fmt.Errorf("following job %s: %w", name, err)
		}
		table, err := l.kubectl(ctx, "get", "espojobs", name)
		if err != nil {
			return false, err
		}
		if table != last {
			showProgress(l.Out, last, table)
			last = table
		}
		raw, err := l.kubectl(ctx, "get", "espojob", name, "-o", "json")
		if err != nil {
			return false, err
		}
		job = &trainingv1alpha1.ESPOJob{}
		if err := json.Unmarshal([]byte(raw), job); err != nil {
			return false, err
		}
		return job.Status.Phase.IsFinished(), nil
	})
	return job, err
}

// stillRunning fails when the cluster (serve) or the manager has exited: a job
// followed then would not finish, and the log says why.
func (l *Local) stillRunning() error {
	for _, p := range []struct{ what, pidFile, logFile string }{
		{"the local cluster", fileServePID, fileServeLog},
		{"the manager", fileManagerPID, fileManagerLog},
	} {
		if !alive(readPID(l.path(p.pidFile))) {
			return fmt.Errorf("%s stopped; the end of %s:\n%s", p.what, l.path(p.logFile), tailFile(l.path(p.logFile), 20))
		}
	}
	return nil
}

// showProgress replaces the previous table on a terminal (moving the cursor up over
// it), and prints only the new rows, without the header, elsewhere.
func showProgress(w io.Writer, previous, table string) {
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	switch f, ok := w.(*os.File); {
	case previous == "":
	case ok && term.IsTerminal(int(f.Fd())):
		fmt.Fprintf(w, "\033[%dA\033[J", strings.Count(strings.TrimRight(previous, "\n"), "\n")+1)
	default:
		lines = lines[1:]
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// printAccuracies prints the job's latest evaluation as a table of the ESPO stages
// (GUI operation, intent, recommendation) and their metrics.
func printAccuracies(w io.Writer, job *trainingv1alpha1.ESPOJob) {
	t := job.Status.Training
	if t == nil || t.Evaluation == nil {
		fmt.Fprintf(w, "\nJob %s %s with no evaluation reported.\n", job.Name, job.Status.Phase)
		return
	}
	e := t.Evaluation
	fmt.Fprintf(w, "\nJob %s %s (%s): %s evaluation after epoch %d, step %d\n\n", job.Name, job.Status.Phase, t.Outcome, e.Split, e.Epoch, e.Step)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tMETRIC\tVALUE")
	for _, row := range [][3]string{
		{"GUI operation", "action type (GUI-Acc)", string(e.GUITypeAccuracy)},
		{"", "element (Ele-Acc)", string(e.ElementAccuracy)},
		{"", "operation F1 (Op-F1)", string(e.OperationF1)},
		{"", "step success (StepSR)", string(e.StepSuccessRate)},
		{"Intent", "intent (Intent-Acc)", string(e.IntentAccuracy)},
		{"Recommendation", "recommendation (Rec-Acc)", string(e.RecommendationAccuracy)},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row[0], row[1], row[2])
	}
	_ = tw.Flush()
}

// Down stops the manager, the cluster (which stops its pods) and any process left
// behind, then removes the state folder. Nothing running is not an error.
func (l *Local) Down() error {
	for _, pidFile := range []string{fileManagerPID, fileServePID} {
		if err := l.stopGroup(readPID(l.path(pidFile))); err != nil {
			return err
		}
	}
	killListed(l.path(fileControlPlanePIDs))
	killLeftoverPods(l.path(dirNode))
	if err := os.RemoveAll(l.StateDir); err != nil {
		return err
	}
	fmt.Fprintf(l.Out, "Local cluster stopped; %s removed.\n", l.StateDir)
	return nil
}

// stopGroup sends SIGTERM to the process group pid leads, and SIGKILL when the
// leader has not exited after stopTimeout.
func (l *Local) stopGroup(pid int) error {
	if !alive(pid) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	err := l.waitFor(context.Background(), stopTimeout, func() (bool, error) { return !alive(pid), nil })
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	return nil
}

// killLeftoverPods kills the process group of every container whose pid file
// remains under the node's folder (when the cluster process died without stopping
// its pods).
func killLeftoverPods(nodeDir string) {
	files, _ := filepath.Glob(filepath.Join(nodeDir, "pods", "*", "*", "containers", "*", "pid"))
	for _, f := range files {
		if pid := readPID(f); alive(pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// readPID reads a pid file; 0 when there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether a process with this pid exists (and is not a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// tailFile is the last lines of a file, for error messages.
func tailFile(path string, lines int) string {
	b, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// kubectl runs kubectl with the local cluster's kubeconfig and returns its output.
func (l *Local) kubectl(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", l.path(fileKubeconfig)}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// waitFor polls done every pollEvery until it reports true, fails, or timeout
// passes.
func (l *Local) waitFor(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	return l.waitForEvery(ctx, timeout, pollEvery, done)
}

// errTimedOut is waitFor's error when done did not hold in time.
var errTimedOut = errors.New("timed out")

func (l *Local) waitForEvery(ctx context.Context, timeout, every time.Duration, done func() (bool, error)) error {
	deadline := l.Clock.Now().Add(timeout)
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if l.Clock.Now().After(deadline) {
			return errTimedOut
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.Clock.After(every):
		}
	}
}
