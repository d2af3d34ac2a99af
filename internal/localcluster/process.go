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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// process is one run of a container's command: a child process in its own process
// group, with stdout and stderr appended to one log file.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	// exitCode is valid once done is closed: the exit status, or 128+signal when a
	// signal ended the process (as a container runtime reports it).
	exitCode int
}

// startProcess starts argv (no shell) with exactly env as its environment, in dir,
// appending its output to logPath. argv[0] without a slash is looked up in env's
// PATH. The process gets its own process group, so that stop reaches its children.
func startProcess(argv, env []string, dir, logPath string) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("the container has no command: the process node runs command+args, and has no image to take an entrypoint from")
	}
	bin, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := &exec.Cmd{
		Path:        bin,
		Args:        argv,
		Env:         env,
		Dir:         dir,
		Stdout:      logFile,
		Stderr:      logFile,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func (p *process) wait() {
	err := p.cmd.Wait()
	p.exitCode = exitCode(p.cmd.ProcessState, err)
	close(p.done)
}

// exitCode is the container-runtime style exit code of a finished process.
func exitCode(st *os.ProcessState, err error) int {
	if st == nil {
		if err != nil {
			return 128
		}
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// pid is the process's id, also its process group's id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, then SIGKILL when the process has not
// exited after grace, and returns once it has exited.
func (p *process) stop(grace time.Duration, clk clock.Clock) {
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-clk.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
	// Whatever the leader left behind in its group goes too.
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
}

// lookPath finds name in the PATH of env, or checks it when it holds a slash.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return checkExecutable(name)
	}
	for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
		if p, err := checkExecutable(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in the container's PATH (%s)", name, envValue(env, "PATH"))
}

func checkExecutable(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("executable %s: %w", path, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return path, nil
}

// envValue is the value of name in a KEY=VALUE list (the last one wins), or "".
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
