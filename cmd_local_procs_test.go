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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	if !slices.ContainsFunc(procs, func(p proc) bool { return p.pid == cmd.Process.Pid }) {
		t.Fatalf("children named sleep: %v, want pid %d among them", procs, cmd.Process.Pid)
	}
	if got := childrenNamed(os.Getpid(), "no-such-command"); len(got) != 0 {
		t.Fatalf("children named no-such-command: %v, want none", got)
	}
}

// TestKillListedKillsOnlyTheSameProcess checks that a recorded process whose start
// time no longer matches (its pid reused) is left alone, and that the recorded one
// is killed and the file removed.
func TestKillListedKillsOnlyTheSameProcess(t *testing.T) {
	cmd := startSleeper(t)
	_, _, start, err := procStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fileControlPlanePIDs)
	if err := writeProcs(path, []proc{{cmd.Process.Pid, start + 1}}); err != nil {
		t.Fatal(err)
	}
	killListed(path)
	if !alive(cmd.Process.Pid) {
		t.Fatal("a process with another start time was killed")
	}
	if exists(path) {
		t.Fatal("the pid file remains")
	}
	if err := writeProcs(path, []proc{{cmd.Process.Pid, start}}); err != nil {
		t.Fatal(err)
	}
	killListed(path)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the recorded process ended with %v, want SIGKILL", err)
	}
}
