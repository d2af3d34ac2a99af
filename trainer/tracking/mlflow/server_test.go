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

package mlflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// serverStartTimeout bounds the start of the MLflow server: on an idle machine it
// answers in about 8 s (the SQLite store's migrations, then uvicorn's import of
// MLflow); a machine busy with other tests may take several times as long.
const serverStartTimeout = 90 * time.Second

// serverStopTimeout bounds the wait for the server to exit after SIGTERM, before
// SIGKILL.
const serverStopTimeout = 15 * time.Second

// mlflowServer is a real MLflow tracking server on loopback with a SQLite store in a
// temporary folder, started by the first test that needs it (theServer) and
// stopped by TestMain.
type mlflowServer struct {
	uri    string // http://127.0.0.1:<port>
	python string // the interpreter of the test environment, with mlflow
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    lockedBuffer
}

var (
	serverOnce    sync.Once
	sharedServer  *mlflowServer
	serverFailure error
)

// TestMain runs the tests and stops the MLflow server if one of them started it.
func TestMain(m *testing.M) {
	code := m.Run()
	if sharedServer != nil {
		sharedServer.stop()
	}
	os.Exit(code)
}

// theServer returns the test binary's MLflow server, starting it on first use, or
// fails the test saying why there is none: the tests against MLflow are part of the
// suite, not skipped.
func theServer(t testing.TB) *mlflowServer {
	t.Helper()
	serverOnce.Do(func() {
		var python string
		python, serverFailure = pyenv.Python()
		if serverFailure == nil {
			sharedServer, serverFailure = startServer(python)
		}
	})
	if serverFailure != nil {
		t.Fatalf("no MLflow server: %v", serverFailure)
	}
	return sharedServer
}

// startServer starts `mlflow server` on a free loopback port with one uvicorn worker
// and without MLflow's job runner (MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false: it
// would start seven huey consumers the tests have no use for), and waits until it
// answers GET /health.
func startServer(python string) (*mlflowServer, error) {
	dir, err := os.MkdirTemp("", "espo-mlflow-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &mlflowServer{uri: "http://127.0.0.1:" + strconv.Itoa(port), python: python, dir: dir, exited: make(chan struct{})}
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
		s.stop()
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
// serverStartTimeout passes.
func (s *mlflowServer) waitHealthy() error {
	deadline := time.NewTimer(serverStartTimeout)
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
			return fmt.Errorf("mlflow server did not answer GET %s/health within %s", s.uri, serverStartTimeout)
		case <-tick.C:
		}
	}
}

// stop ends the server's process group (the mlflow CLI and its uvicorn worker):
// SIGTERM, then SIGKILL if it has not exited within serverStopTimeout; and removes
// its folder.
func (s *mlflowServer) stop() {
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(serverStopTimeout):
		fmt.Fprintf(os.Stderr, "mlflow server did not exit within %s of SIGTERM; killing it\n", serverStopTimeout)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // any worker left behind
	<-s.exited
	_ = os.RemoveAll(s.dir)
}

// readBack is a run as MLflow's own Python client reads it (testdata/readback.py).
type readBack struct {
	Status  string                      `json:"status"`
	EndTime *int64                      `json:"end_time"`
	Params  map[string]string           `json:"params"`
	Tags    map[string]string           `json:"tags"`
	History map[string][]readBackMetric `json:"history"`
}

type readBackMetric struct {
	Value     string `json:"value"` // Python's repr of the float: "nan", "inf", "0.5"
	Step      int64  `json:"step"`
	Timestamp int64  `json:"timestamp"`
}

// readRun reads run runID back through MLflow's Python client, with the history of
// each of keys.
func (s *mlflowServer) readRun(t testing.TB, runID string, keys ...string) readBack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{filepath.Join("testdata", "readback.py"), s.uri, runID}, keys...)
	cmd := exec.CommandContext(ctx, s.python, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py %s: %v\n%s", runID, err, stderr.String())
	}
	var rb readBack
	if err := json.Unmarshal(out, &rb); err != nil {
		t.Fatalf("readback.py %s: %v in %s", runID, err, out)
	}
	return rb
}

// deleteExperiment deletes the experiment named name through the REST API.
func (s *mlflowServer) deleteExperiment(t testing.TB, name string) {
	t.Helper()
	var got struct {
		Experiment struct {
			ID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	resp, err := http.Get(s.uri + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + url.QueryEscape(name))
	if err == nil {
		err = json.NewDecoder(resp.Body).Decode(&got)
		_ = resp.Body.Close()
	}
	if err == nil {
		body, _ := json.Marshal(map[string]string{"experiment_id": got.Experiment.ID})
		resp, err = http.Post(s.uri+"/api/2.0/mlflow/experiments/delete", "application/json", bytes.NewReader(body))
	}
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
	}
	if err != nil {
		t.Fatalf("deleting experiment %q: %v", name, err)
	}
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
