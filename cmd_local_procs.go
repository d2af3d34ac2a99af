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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The control plane's processes. envtest starts each in a process group of its own,
// so stopping the "local serve" group does not reach them when serve itself was
// killed; serve records them (fileControlPlanePIDs) for "down" and the next "up" to
// stop.
var controlPlaneCommands = []string{"etcd", "kube-apiserver"}

// proc identifies a process: its pid and its start time (in clock ticks after boot),
// which tells it from a later process that reuses the pid.
type proc struct {
	pid   int
	start uint64
}

// procStat reads /proc/<pid>/stat ("pid (comm) state ppid ... starttime ...", comm
// possibly holding spaces and parentheses) and returns the command name, the
// parent's pid and the start time.
func procStat(pid int) (comm string, ppid int, start uint64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// After the command: state (field 3), ppid (4), ..., starttime (22).
	fields := strings.Fields(s[end+1:])
	if len(fields) < 20 {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want 20", pid, len(fields))
	}
	if ppid, err = strconv.Atoi(fields[1]); err != nil {
		return "", 0, 0, err
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return s[open+1 : end], ppid, start, err
}

// childrenNamed returns the children of process parent whose command name is one
// of names.
func childrenNamed(parent int, names ...string) []proc {
	entries, _ := os.ReadDir("/proc")
	var procs []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ppid, start, err := procStat(pid); err == nil && ppid == parent && slices.Contains(names, comm) {
			procs = append(procs, proc{pid, start})
		}
	}
	return procs
}

// writeProcs writes procs to path, "pid start" on each line.
func writeProcs(path string, procs []proc) error {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintln(&b, p.pid, p.start)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// killListed sends SIGKILL to each process listed in the file at path (written by
// writeProcs) that still runs, the same process (pid and start time), and to its
// process group; then it removes the file. A missing file is nothing to do.
func killListed(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for line := range strings.Lines(string(b)) {
		var p proc
		if _, err := fmt.Sscan(line, &p.pid, &p.start); err != nil || p.pid <= 0 {
			continue
		}
		if _, _, start, err := procStat(p.pid); err == nil && start == p.start {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	_ = os.Remove(path)
}
