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

// Package mlflowtest gives tests a real MLflow tracking server, from the Python
// environment of the worker's tests (test/pyenv), on loopback with a SQLite store;
// reads its runs back through MLflow's own Python client (ReadRun, FindRun); and
// puts a Switch between a client and the server, to take the tracker down and bring
// it back up.
//
// A test binary shares one server (Shared): the package whose tests use it calls
// StopShared from its TestMain, after m.Run:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		mlflowtest.StopShared()
//		os.Exit(code)
//	}
//
// A test that needs a server of its own (one it stops, or whose store no other test
// writes) starts one with Start, stopped at the test's end. Either fails the test,
// not skips it, when there is no Python environment or the server does not start:
// the tests against MLflow are part of the suite.
package mlflowtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/espo-dev/espo-operator/test/pyenv"
)

// StartTimeout bounds the start of an MLflow server: on an idle machine it answers
// in about 8 s (the SQLite store's migrations, then uvicorn's import of MLflow); a
// machine busy with other tests may take several times as long.
const StartTimeout = 90 * time.Second

// stopTimeout bounds the wait for the server to exit after SIGTERM, before SIGKILL.
const stopTimeout = 15 * time.Second

// Server is a real MLflow tracking server on loopback with a SQLite store in a
// temporary folder.
type Server struct {
	uri    string // http://127.0.0.1:<port>
	python string // the interpreter of the test environment, with mlflow
	dir    string // the store, the artifacts and the readback script
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    lockedBuffer
	stop   sync.Once
}

// URI is the server's tracking URI, http://127.0.0.1:<port>.
func (s *Server) URI() string { return s.uri }

var shared struct {
	once   sync.Once
	server *Server
	err    error
}

// Shared returns the test binary's MLflow server, starting it on first use, or fails
// t saying why there is none. Tests that share it keep apart by experiment: each
// writes to an experiment of its own. The package's TestMain stops it with
// StopShared.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() { shared.server, shared.err = start() })
	if shared.err != nil {
		t.Fatalf("no MLflow server: %v", shared.err)
	}
	return shared.server
}

// StopShared stops the server Shared started, if it started one. A TestMain calls it
// after m.Run; no test may use the server after.
func StopShared() {
	if shared.server != nil {
		shared.server.Stop()
	}
}

// Start starts an MLflow server of t's own, stopped at its end, or fails t saying
// why there is none. It takes the seconds Shared's first use takes (StartTimeout).
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatalf("no MLflow server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// start starts `mlflow server` of the test environment's Python on a free loopback
// port with one uvicorn worker and without MLflow's job runner
// (MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false: it would start seven huey consumers
// the tests have no use for), in a process group of its own, and waits until it
// answers GET /health.
func start() (*Server, error) {
	python, err := pyenv.Python()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "espo-mlflow-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, readbackScript), readback, 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{uri: "http://127.0.0.1:" + strconv.Itoa(port), python: python, dir: dir, exited: make(chan struct{})}
	s.cmd = exec.Command(python, "-m", "mlflow", "server",
		"--backend-store-uri", "sqlite:///"+filepath.Join(dir, "mlflow.db"),
		"--default-artifact-root", filepath.Join(dir, "artifacts"),
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--workers", "1")
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false", "PYTHONDONTWRITEBYTECODE=1")
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting mlflow server: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitHealthy(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w; its log:\n%s", err, s.log.String())
	}
	fmt.Fprintf(os.Stderr, "mlflow server at %s answered after %s\n", s.uri, time.Since(began).Round(100*time.Millisecond))
	return s, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy polls GET /health until it answers 200, the process exits, or
// StartTimeout passes.
func (s *Server) waitHealthy() error {
	deadline := time.NewTimer(StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if resp, err := client.Get(s.uri + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("mlflow server exited before it answered GET /health (%v)", s.cmd.ProcessState)
		case <-deadline.C:
			return fmt.Errorf("mlflow server did not answer GET %s/health within %s", s.uri, StartTimeout)
		case <-tick.C:
		}
	}
}

// Stop ends the server's process group (the mlflow CLI and its uvicorn worker):
// SIGTERM, then SIGKILL if it has not exited within 15 s; and removes its folder,
// store included. Stopping it again does nothing.
func (s *Server) Stop() {
	s.stop.Do(func() {
		pgid := s.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			fmt.Fprintf(os.Stderr, "mlflow server did not exit within %s of SIGTERM; killing it\n", stopTimeout)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // any worker left behind
		<-s.exited
		_ = os.RemoveAll(s.dir)
	})
}

// lockedBuffer is a bytes.Buffer safe for the writes of a process's two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
