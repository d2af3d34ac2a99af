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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/hack/envtestassets"
	"github.com/espo-dev/espo-operator/hack/localnode"
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

// localOptions are the flags of "espo local".
type localOptions struct {
	stateDir string
	crdDir   string
	sample   string
	gpus     int64
	cpu      string
	memory   string
	timeout  time.Duration
	clock    clock.Clock
	out      io.Writer
	// start starts a background process as startDetached does (which it is when
	// nil); tests replace it.
	start func(pidPath, logPath string, args ...string) (int, error)
}

func newLocalCommand() *cobra.Command {
	o := &localOptions{clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run a local cluster (etcd, kube-apiserver, a process node) and the sample job on it",
		Long: `"espo local up" starts etcd and kube-apiserver (built by hack/setup-envtest.sh),
a node that runs pods as local processes, a scheduler and a garbage collector, installs
the CRDs with kubectl, prints the KUBECONFIG to use, starts "espo manager", applies the
sample job (--sample) and shows its progress until it finishes, then its per-stage
accuracies. "espo local down" stops everything and removes the state folder. Both may
be run any number of times; run them from the repository's root.`,
	}
	cmd.PersistentFlags().StringVar(&o.stateDir, "state-dir", defaultStateDir(), "Folder of the local cluster's state (pids, logs, kubeconfig, pods)")
	cmd.AddCommand(newLocalUpCommand(o), newLocalDownCommand(o), newLocalServeCommand(o))
	return cmd
}

// defaultStateDir is ${XDG_STATE_HOME:-~/.local/state}/espo-operator/local.
func defaultStateDir() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "espo-operator", "local")
}

func (o *localOptions) path(name string) string { return filepath.Join(o.stateDir, name) }

func newLocalUpCommand(o *localOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster (if it is not running) and run the sample job on it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.up(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.crdDir, "crds", filepath.Join("config", "crd", "bases"), "Folder of the CRDs to install")
	f.StringVar(&o.sample, "sample", filepath.Join("config", "samples", "training_v1alpha1_espojob_minimal.yaml"), "Job to apply and follow; empty: none")
	f.Int64Var(&o.gpus, "gpus", 0, "Number of fake nvidia.com/gpu the node offers")
	f.StringVar(&o.cpu, "cpu", "", "Allocatable CPU of the node (default: the machine's cores)")
	f.StringVar(&o.memory, "memory", "16Gi", "Allocatable memory of the node")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "How long to follow the sample job")
	return cmd
}

func newLocalDownCommand(o *localOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and remove its state folder",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return o.down()
		},
	}
}

// newLocalServeCommand is the cluster's own process, started in the background by
// "up"; it is hidden.
func newLocalServeCommand(o *localOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "serve",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return o.serve(ctx)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.gpus, "gpus", 0, "Number of fake nvidia.com/gpu")
	f.StringVar(&o.cpu, "cpu", "", "Allocatable CPU")
	f.StringVar(&o.memory, "memory", "16Gi", "Allocatable memory")
	return cmd
}

// up starts the cluster unless it runs, installs the CRDs, starts the manager unless
// it runs, and follows the sample job (when there is one) to its end.
func (o *localOptions) up(ctx context.Context) error {
	if err := o.ensureCluster(ctx); err != nil {
		return err
	}
	if _, err := o.kubectl(ctx, "apply", "--server-side", "-f", o.crdDir); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	if _, err := o.kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "Local cluster is up. To use it:\n\n  export KUBECONFIG=%s\n\n", o.path(fileKubeconfig))
	if err := o.ensureManager(); err != nil {
		return err
	}
	if o.sample == "" {
		return nil
	}
	return o.runSample(ctx)
}

// ensureCluster starts "espo local serve" in the background unless it runs, and
// waits until it is ready. A serve that runs but is not ready yet (started by
// another "up") is waited for, not replaced: its control plane is only killed, as
// left behind, when the serve that recorded it is gone.
func (o *localOptions) ensureCluster(ctx context.Context) error {
	if alive(readPID(o.path(fileServePID))) {
		if exists(o.path(fileReady)) {
			fmt.Fprintf(o.out, "Local cluster already running (state in %s).\n", o.stateDir)
			return nil
		}
		fmt.Fprintf(o.out, "Local cluster starting (log: %s); waiting until it is ready ...\n", o.path(fileServeLog))
		return o.waitServeReady(ctx)
	}
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(o.path(fileReady))
	killListed(o.path(fileControlPlanePIDs)) // left by a serve that was killed
	args := []string{"local", "serve", "--state-dir", o.stateDir, "--gpus", strconv.FormatInt(o.gpus, 10), "--memory", o.memory}
	if o.cpu != "" {
		args = append(args, "--cpu", o.cpu)
	}
	if _, err := o.startProc(o.path(fileServePID), o.path(fileServeLog), args...); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "Starting etcd, kube-apiserver and the process node (log: %s) ...\n", o.path(fileServeLog))
	return o.waitServeReady(ctx)
}

// waitServeReady waits until serve has written the ready file, and fails when serve
// exits first or is not ready in time (naming the way out when the recorded pid is
// no serve at all, as after a reboot without "down").
func (o *localOptions) waitServeReady(ctx context.Context) error {
	err := o.waitFor(ctx, clusterStartTimeout, func() (bool, error) {
		if exists(o.path(fileReady)) {
			return true, nil
		}
		if !alive(readPID(o.path(fileServePID))) {
			return false, fmt.Errorf("the local cluster stopped while starting; the end of %s:\n%s",
				o.path(fileServeLog), tailFile(o.path(fileServeLog), 20))
		}
		return false, nil
	})
	if errors.Is(err, errTimedOut) {
		return fmt.Errorf("the local cluster (pid %d in %s) was not ready after %s; if no \"espo local serve\" runs "+
			"(the pid is another program's, after a reboot), run \"espo local down\" and try again; the end of %s:\n%s",
			readPID(o.path(fileServePID)), o.path(fileServePID), clusterStartTimeout, o.path(fileServeLog), tailFile(o.path(fileServeLog), 20))
	}
	return err
}

// startProc is o.start, or startDetached.
func (o *localOptions) startProc(pidPath, logPath string, args ...string) (int, error) {
	if o.start != nil {
		return o.start(pidPath, logPath, args...)
	}
	return startDetached(pidPath, logPath, args...)
}

// startDetached starts "espo args..." in a session of its own (so that it outlives
// this command and "down" can stop its whole process group), with its output in
// logPath and its pid in pidPath.
func startDetached(pidPath, logPath string, args ...string) (int, error) {
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

// serve runs the cluster until ctx is done: the control plane, the process node,
// the scheduler and the garbage collector. It writes the admin kubeconfig, then the
// ready file once the node is ready.
func (o *localOptions) serve(ctx context.Context) error {
	klog.SetLogger(logr.Discard())
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	assets, err := envtestassets.Assets(root)
	if err != nil {
		return err
	}
	cp, err := localnode.StartControlPlane(assets)
	if err != nil {
		return err
	}
	defer cp.Stop()
	if err := writeProcs(o.path(fileControlPlanePIDs), childrenNamed(os.Getpid(), controlPlaneCommands...)); err != nil {
		return err
	}
	kc, err := cp.AdminKubeconfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.path(fileKubeconfig), kc, 0o600); err != nil {
		return err
	}
	cfg, err := o.nodeConfig()
	if err != nil {
		return err
	}
	node, err := localnode.NewNode(cfg, cp.Config)
	if err != nil {
		return err
	}
	gc, err := localnode.NewGarbageCollector(cp.Config, cfg.Clock, cfg.Log)
	if err != nil {
		return err
	}
	sched := localnode.NewScheduler(kubernetes.NewForConfigOrDie(cp.Config), node.Name(), cfg.Clock, cfg.Log)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodeDone := make(chan error, 1)
	go func() { nodeDone <- node.Run(ctx) }()
	go func() { _ = sched.Run(ctx) }()
	go func() { _ = gc.Run(ctx) }()
	if err := node.WaitReady(ctx, clusterStartTimeout); err != nil {
		return err
	}
	if err := os.WriteFile(o.path(fileReady), nil, 0o644); err != nil {
		return err
	}
	fmt.Println("local cluster ready; API server", cp.Config.Host, "node", node.Name(), "kubelet", node.KubeletAddr())
	<-ctx.Done()
	cancel()
	return <-nodeDone
}

// nodeConfig is the process node's configuration: its state under <state>/node, its
// resources from the flags, and the folder of this binary first in PATH (so that a
// pod's "espo" command is this espo).
func (o *localOptions) nodeConfig() (localnode.Config, error) {
	self, err := os.Executable()
	if err != nil {
		return localnode.Config{}, err
	}
	cfg := localnode.Config{
		StateDir: o.path(dirNode), GPUs: o.gpus, BinDirs: []string{filepath.Dir(self)},
		Clock: clock.RealClock{}, Log: logr.Discard(),
	}
	for flag, dst := range map[string]*resource.Quantity{o.cpu: &cfg.CPU, o.memory: &cfg.Memory} {
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
func (o *localOptions) ensureManager() error {
	if alive(readPID(o.path(fileManagerPID))) {
		return nil
	}
	_, err := o.startProc(o.path(fileManagerPID), o.path(fileManagerLog), "manager", "--kubeconfig", o.path(fileKubeconfig),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "text")
	return err
}

// runSample applies the sample job, shows its `kubectl get espojobs` row until it
// finishes, and prints its accuracies.
func (o *localOptions) runSample(ctx context.Context) error {
	name, err := o.kubectl(ctx, "apply", "-f", o.sample, "-o", "jsonpath={.metadata.name}")
	if err != nil {
		return err
	}
	job, err := o.follow(ctx, strings.TrimSpace(name))
	if err != nil {
		return err
	}
	printAccuracies(o.out, job)
	if job.Status.Phase != trainingv1alpha1.PhaseSucceeded {
		return fmt.Errorf("job %s: %s", job.Name, job.Status.Phase)
	}
	return nil
}

// follow shows the job's `kubectl get espojobs` columns whenever they change (redrawn
// in place on a terminal, a new row otherwise), until the job finishes or o.timeout
// passes, and returns the finished job.
func (o *localOptions) follow(ctx context.Context, name string) (*trainingv1alpha1.ESPOJob, error) {
	var last string
	var job *trainingv1alpha1.ESPOJob
	err := o.waitForEvery(ctx, o.timeout, progressInterval, func() (bool, error) {
		table, err := o.kubectl(ctx, "get", "espojobs", name)
		if err != nil {
			return false, err
		}
		if table != last {
			showProgress(o.out, last, table)
			last = table
		}
		raw, err := o.kubectl(ctx, "get", "espojob", name, "-o", "json")
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

// down stops the manager, the cluster (which stops its pods) and any process left
// behind, then removes the state folder. Nothing running is not an error.
func (o *localOptions) down() error {
	for _, pidFile := range []string{fileManagerPID, fileServePID} {
		if err := o.stopGroup(readPID(o.path(pidFile))); err != nil {
			return err
		}
	}
	killListed(o.path(fileControlPlanePIDs))
	killLeftoverPods(o.path(dirNode))
	if err := os.RemoveAll(o.stateDir); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "Local cluster stopped; %s removed.\n", o.stateDir)
	return nil
}

// stopGroup sends SIGTERM to the process group pid leads, and SIGKILL when the
// leader has not exited after stopTimeout.
func (o *localOptions) stopGroup(pid int) error {
	if !alive(pid) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	err := o.waitFor(context.Background(), stopTimeout, func() (bool, error) { return !alive(pid), nil })
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
func (o *localOptions) kubectl(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", o.path(fileKubeconfig)}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// waitFor polls done every pollEvery until it reports true, fails, or timeout
// passes.
func (o *localOptions) waitFor(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	return o.waitForEvery(ctx, timeout, pollEvery, done)
}

// errTimedOut is waitFor's error when done did not hold in time.
var errTimedOut = errors.New("timed out")

func (o *localOptions) waitForEvery(ctx context.Context, timeout, every time.Duration, done func() (bool, error)) error {
	deadline := o.clock.Now().Add(timeout)
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if o.clock.Now().After(deadline) {
			return errTimedOut
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.clock.After(every):
		}
	}
}
