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
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/grpclog"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// logBuffer is a log that several goroutines write; serving receives the address of
// the first "serving on" line.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	serving chan string
}

var servingRE = regexp.MustCompile(`espo worker: serving on (\S+)`)

func newLogBuffer() *logBuffer { return &logBuffer{serving: make(chan string, 1)} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := servingRE.FindSubmatch(p); m != nil {
		select {
		case l.serving <- string(m[1]):
		default:
		}
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// grpcLog is gRPC's log in these tests, at every verbosity: set once (grpclog's
// logger must not change while gRPC runs), it writes to the log of the worker that
// runs now.
var grpcLog = &forwarder{}

var setGRPCLog sync.Once

type forwarder struct {
	mu sync.Mutex
	to *logBuffer
}

func (f *forwarder) set(to *logBuffer) {
	setGRPCLog.Do(func() { grpclog.SetLoggerV2(grpclog.NewLoggerV2WithVerbosity(f, f, f, 99)) })
	f.mu.Lock()
	defer f.mu.Unlock()
	f.to = to
}

func (f *forwarder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.to == nil {
		return len(p), nil
	}
	return f.to.Write(p)
}

// writeFile writes content to a new file in a temporary folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// execWorker runs "espo worker args..." until the test ends and returns its output
// (stdout, stderr and gRPC's own log at every verbosity) and, once it serves, its
// address; a command that fails to start returns its error.
func execWorker(t *testing.T, args ...string) (out *logBuffer, addr string, err error) {
	t.Helper()
	out = newLogBuffer()
	grpcLog.set(out)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"worker", "--listen", "127.0.0.1:0", "--shutdown-timeout", "5s"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	select {
	case err := <-done:
		cancel()
		return out, "", err
	case addr = <-out.serving:
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("espo worker: %v", err)
		}
	})
	return out, addr, nil
}

// TestWorkerRefusesToStartWithoutAToken: with no token file the worker does not
// start unless told --insecure-no-auth, and says which flag fixes it; an empty or
// malformed token file, or a token file with --insecure-no-auth, stops it too.
func TestWorkerRefusesToStartWithoutAToken(t *testing.T) {
	t.Setenv(worker.EnvTokenFile, "")
	for name, c := range map[string]struct {
		args []string
		want []string
	}{
		"no token file":  {nil, []string{"--token-file", "$" + worker.EnvTokenFile, "--insecure-no-auth"}},
		"empty file":     {[]string{"--token-file", writeFile(t, "empty", "")}, []string{"--token-file", "empty"}},
		"malformed file": {[]string{"--token-file", writeFile(t, "short", "abc123\n")}, []string{"--token-file", "malformed"}},
		"missing file":   {[]string{"--token-file", "/nonexistent/token"}, []string{"--token-file", "/nonexistent/token"}},
		"token and no auth": {[]string{"--token-file", writeFile(t, "token", workertest.Token), "--insecure-no-auth"},
			[]string{"--insecure-no-auth", "--token-file"}},
	} {
		_, _, err := execWorker(t, c.args...)
		if err == nil {
			t.Errorf("%s: the worker started", name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to name %s", name, err, w)
			}
		}
		if strings.Contains(err.Error(), "abc123") {
			t.Errorf("%s: the error quotes the token file: %v", name, err)
		}
	}
}

// TestWorkerNeedsTheTokenAndNeverLogsIt: "espo worker" with the token file from
// $ESPO_WORKER_TOKEN_FILE and its folders from $ESPO_WORKER_PATHS refuses every call
// without the token or with another job's, serves the trainer's Remote, saves and
// loads only under its folders, and neither its output nor gRPC's log holds a token.
func TestWorkerNeedsTheTokenAndNeverLogsIt(t *testing.T) {
	l := workertest.NewLayout(t)
	options := map[string]string{"hidden": "4"}
	t.Setenv(worker.EnvTokenFile, workertest.WriteToken(t))
	t.Setenv(worker.EnvAllowedPaths, "/nonexistent:"+l.Allowed)
	out, addr, err := execWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	workertest.CheckTokenRequired(t, workertest.Conn(t, addr), l.Allowed, options)
	r, err := worker.Dial(addr, nil, workertest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	workertest.CheckConfined(t, r.Client(), l, options)
	if !strings.Contains(out.String(), "serving on 127.0.0.1:") || strings.Contains(out.String(), "WITHOUT AUTHENTICATION") {
		t.Errorf("output %q: want the serving line, without the no-authentication warning", out.String())
	}
	if !strings.Contains(out.String(), "[core]") {
		t.Errorf("output %q: gRPC's own log was not captured", out.String())
	}
	if strings.Contains(out.String(), workertest.Token) || strings.Contains(out.String(), workertest.OtherToken) {
		t.Errorf("the worker's output holds a token:\n%s", out.String())
	}
}

// TestWorkerWithoutAuthSaysSo: --insecure-no-auth serves a caller without a token and
// says so on its serving line.
func TestWorkerWithoutAuthSaysSo(t *testing.T) {
	t.Setenv(worker.EnvTokenFile, "")
	out, addr, err := execWorker(t, "--insecure-no-auth")
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.Dial(addr, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Client().Info(context.Background(), &workerpb.InfoRequest{}); err != nil {
		t.Errorf("Info without a token: %v", err)
	}
	if !strings.Contains(out.String(), "WITHOUT AUTHENTICATION") {
		t.Errorf("output %q: want the no-authentication warning", out.String())
	}
}

// TestTrainerGivesItsLocalWorkersItsFolders: the trainer's in-process CPU workers
// save under the run config's checkpoint folder and refuse a path elsewhere.
func TestTrainerGivesItsLocalWorkersItsFolders(t *testing.T) {
	ctx := context.Background()
	cfg := &trainer.Config{CheckpointDir: t.TempDir(), OutputDir: t.TempDir()}
	cfg.Spec.Model.Worker = trainingv1alpha1.WorkerCPU
	cfg.Spec.Trainer.WorkersPerReplica = 1
	gang, err := connectWorkers(cfg, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer gang.Close()
	if _, err := gang.Configure(ctx, worker.Setup{Seed: 1, Options: map[string]string{"hidden": "4"}}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{cfg.CheckpointDir, cfg.OutputDir} {
		if err := gang.Save(ctx, filepath.Join(dir, "state")); err != nil {
			t.Errorf("save under %s: %v", dir, err)
		}
	}
	if err := gang.Save(ctx, filepath.Join(t.TempDir(), "state")); !errors.Is(err, worker.ErrPathNotAllowed) {
		t.Errorf("save elsewhere: %v, want ErrPathNotAllowed", err)
	}
}

// TestTrainerReadsTheWorkerToken: the trainer sends no token without a token file
// and refuses a malformed one, naming the flag.
func TestTrainerReadsTheWorkerToken(t *testing.T) {
	if token, err := workerToken(""); token != "" || err != nil {
		t.Errorf("no token file: %q %v, want no token", token, err)
	}
	if token, err := workerToken(writeFile(t, "token", workertest.Token)); token != workertest.Token || err != nil {
		t.Errorf("a token file: %v, want its token", err)
	}
	if _, err := workerToken(writeFile(t, "bad", "nope")); err == nil || !strings.Contains(err.Error(), "--worker-token-file") {
		t.Errorf("a malformed token file: %v, want an error naming --worker-token-file", err)
	}
}
