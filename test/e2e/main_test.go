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

// Package e2e runs the product as a whole: a real etcd and kube-apiserver, a process
// node (internal/localcluster) that runs pods as local processes, the espo binary built once
// and run as "espo manager" in a child process, and real kubectl.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/internal/localcluster"
	"github.com/espo-dev/espo-operator/test/mlflowtest"
	"github.com/espo-dev/espo-operator/test/testenv"
)

// The cluster of the suite.
var (
	repoRoot   string // the repository, where kubectl runs
	workDir    string // binaries, kubeconfig, logs and the node's state
	kubeconfig string // the administrator's kubeconfig
	nodeState  string // the process node's state folder (pods, claims)
	espoBin    string // the espo binary built for the suite
	manager    *managerProcess
	// controlPlane is the suite's etcd and kube-apiserver; the fault test restarts
	// kube-apiserver.
	controlPlane *controlplane.ControlPlane
	// reader reads objects for the tests' checks and waits, as the administrator;
	// what a user does and sees goes through kubectl.
	reader client.Reader
)

// How long the cluster may take to start and stop.
const (
	nodeReadyTimeout = time.Minute
	stopTimeout      = 30 * time.Second
)

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // virtual-kubelet's informers log through klog
	ctrl.SetLogger(logr.Discard()) // and Kueue's manager, in this process, through controller-runtime
	os.Exit(run(m))
}

// run starts the cluster, runs the tests and stops everything it started.
func run(m *testing.M) int {
	if err := setUp(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	defer mlflowtest.StopShared()
	assets, err := controlplane.Assets(repoRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	kueueCRDs, err := testenv.KueueCRDDir(repoRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cp, err := controlplane.Start(assets, filepath.Join(repoRoot, "config", "crd", "bases"), kueueCRDs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cp.Stop()
	controlPlane = cp
	admin, err := client.New(cp.Config, client.Options{Scheme: controllers.NewScheme()})
	if err == nil {
		reader, err = admin, testenv.InstallTrainerStatusPolicy(cp.Config, admin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopCluster, err := startCluster(ctx, cp)
	defer func() { cancel(); stopCluster() }()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := startKueue(ctx, cp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kueue:", err)
		return 1
	}
	manager = &managerProcess{log: filepath.Join(workDir, "manager.log")}
	if err := manager.start(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer manager.kill()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: the end of the manager's log:\n%s\n", testenv.TailFile(manager.log, 40))
	}
	return code
}

// startKueue runs Kueue (testenv.SetupKueue) in the test process until ctx ends and
// waits for its caches; the manager runs with --kueue, so that jobs that name a queue
// are Kueue's. (A controller-runtime manager stopped before its caches sync spins a
// core in its start until they do: a short run of one test paid 20 CPU-seconds.)
func startKueue(ctx context.Context, cp *controlplane.ControlPlane) error {
	scheme := controllers.NewScheme()
	if err := testenv.AddKueueToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return err
	}
	if err := testenv.SetupKueue(ctx, mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: kueue:", err)
		}
	}()
	syncCtx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return fmt.Errorf("its caches did not sync within %v", nodeReadyTimeout)
	}
	return nil
}

// setUp makes the work folder and builds the espo binary into it.
func setUp() error {
	var err error
	if repoRoot, err = testenv.RepoRoot(); err != nil {
		return err
	}
	if workDir, err = os.MkdirTemp("", "espo-e2e-"); err != nil {
		return err
	}
	nodeState = filepath.Join(workDir, "node")
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	espoBin = filepath.Join(workDir, "bin", "espo")
	// make build's flags, so that this build shares its compiled packages with make build,
	// the packaging tests' image build and the control plane.
	build := exec.Command("go", "build", "-trimpath", "-o", espoBin, "./cmd/espo")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// startCluster writes the administrator's kubeconfig and starts the process node, the
// scheduler and the garbage collector until ctx is done; stop waits for the node (and
// so its pods) to stop.
func startCluster(ctx context.Context, cp *controlplane.ControlPlane) (stop func(), err error) {
	stop = func() {}
	kc, err := cp.AdminKubeconfig()
	if err != nil {
		return stop, err
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return stop, err
	}
	node, err := localcluster.StartNode(ctx, localcluster.Config{
		NodeName: "e2e-node", StateDir: nodeState, CPU: resource.MustParse("16"), PodCIDR: podCIDR(),
		BinDirs: []string{filepath.Dir(espoBin)}, Clock: clock.RealClock{}, Log: logr.Discard(),
	}, cp.Config, nodeReadyTimeout)
	if node == nil {
		return stop, err
	}
	stop = func() {
		select {
		case <-node.Stopped():
		case <-time.After(stopTimeout):
		}
		killLeftoverProcesses()
	}
	return stop, err
}

// podCIDR is a /24 of 127.0.0.0/8 picked from the process id, in 127.200-249.x.0
// (internal/localcluster's tests use 127.100-199.x.0), so that this suite and other test
// packages running at the same time do not share pod addresses.
func podCIDR() string {
	pid := os.Getpid()
	return fmt.Sprintf("127.%d.%d.0/24", 200+pid%50, (pid/50)%250+1)
}

// killLeftoverProcesses kills the process group of every container still running,
// in case the node stopped without stopping its pods.
func killLeftoverProcesses() {
	files, _ := filepath.Glob(filepath.Join(nodeState, "pods", "*", "*", "containers", "*", "pid"))
	for _, f := range files {
		if pid := readPID(f); pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// managerProcess is "espo manager" running as a child process in a process group
// of its own, logging (as text) to log.
type managerProcess struct {
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts the manager, with metrics and probes off (they would take ports).
func (p *managerProcess) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("the manager is already running")
	}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(espoBin, "manager", "--kubeconfig", kubeconfig, "--kueue",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "text")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(p.done)
	return nil
}

// kill kills the manager (SIGKILL: no graceful shutdown) and waits for it to exit.
func (p *managerProcess) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// readPID reads a pid file; 0 when there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var pid int
	_, _ = fmt.Sscan(string(b), &pid)
	return pid
}
