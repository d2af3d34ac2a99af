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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// startSleeper starts "sleep 600" in a process group of its own, as envtest starts
// etcd and kube-apiserver, and kills it when the test ends.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestChildrenNamedFindsOwnChildrenByCommand(t *testing.T) {
	cmd := startSleeper(t)
	procs := childrenNamed(os.Getpid(), "etcd", "sleep")
	if !slices.ContainsFunc(procs, func(p proc) bool { return p.pid == cmd.Process.Pid && p.comm == "sleep" }) {
		t.Fatalf("children named sleep: %v, want pid %d among them", procs, cmd.Process.Pid)
	}
	if got := childrenNamed(os.Getpid(), "no-such-command"); len(got) != 0 {
		t.Fatalf("children named no-such-command: %v, want none", got)
	}
}

// killedBy sends SIGTERM to a sleeper, waits for it and returns the signal it died
// of: SIGKILL when it had been sent one before (the kernel takes the first fatal
// signal), SIGTERM otherwise. Unlike polling for its end, this tells deterministically
// whether it was spared.
func killedBy(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("the sleeper ended with %v, not by a signal", err)
	}
	return ws.Signal()
}

// TestKillListedKillsOnlyTheSameProcess checks that a recorded process whose start
// time or command no longer matches (its pid reused) is left alone, and that the
// recorded one is killed and the file removed.
func TestKillListedKillsOnlyTheSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), fileControlPlanePIDs)
	for _, c := range []struct {
		name  string
		write func(p proc) error
		kill  bool
	}{
		{"another start time", func(p proc) error { p.start++; return writeProcs(path, []proc{p}) }, false},
		{"another command (the pid reused after a reboot)", func(p proc) error { p.comm = "etcd"; return writeProcs(path, []proc{p}) }, false},
		// A line of an older espo, without the command, stands for etcd or
		// kube-apiserver: not for a sleeper.
		{"no command", func(p proc) error { return os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", p.pid, p.start), 0o644) }, false},
		{"the same process", func(p proc) error { return writeProcs(path, []proc{p}) }, true},
	} {
		cmd := startSleeper(t)
		comm, _, start, err := procStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if comm != "sleep" {
			t.Fatalf("command of the sleeper: %q", comm)
		}
		if err := c.write(proc{cmd.Process.Pid, start, comm}); err != nil {
			t.Fatal(err)
		}
		killListed(path)
		if exists(path) {
			t.Fatalf("%s: the pid file remains", c.name)
		}
		if got := killedBy(t, cmd) == syscall.SIGKILL; got != c.kill {
			t.Errorf("%s: killed %v, want %v", c.name, got, c.kill)
		}
	}
}

func TestWriteProcsRecordsPIDStartAndCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), fileControlPlanePIDs)
	want := []proc{{12, 34, "etcd"}, {56, 78, "kube-apiserver"}}
	if err := writeProcs(path, want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "12 34 etcd\n56 78 kube-apiserver\n" {
		t.Fatalf("file: %q", b)
	}
	var got []proc
	for line := range strings.Lines(string(b)) {
		if p, ok := parseProc(line); ok {
			got = append(got, p)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
}
