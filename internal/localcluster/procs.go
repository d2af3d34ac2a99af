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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The control plane's processes. envtest starts etcd and kube-apiserver each in a
// process group of its own, so stopping the "local serve" group does not reach them
// when serve itself was killed; kube-scheduler (--scheduler=kube) is in serve's group
// but outlives a killed serve as well. Serve records them (fileControlPlanePIDs) for
// "down" and the next "up" to stop.
var controlPlaneCommands = []string{"etcd", "kube-apiserver", "kube-scheduler"}

// proc identifies a process: its pid, its start time (in clock ticks after boot) and
// its command name, which tell it from a later process that reuses the pid (after a
// reboot the start time alone may match).
type proc struct {
	pid   int
	start uint64
	comm  string
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
			procs = append(procs, proc{pid, start, comm})
		}
	}
	return procs
}

// writeProcs writes procs to path, "pid start comm" on each line.
func writeProcs(path string, procs []proc) error {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintln(&b, p.pid, p.start, p.comm)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// parseProc reads a line of writeProcs. A line without the command (written by an
// older espo) stands for one of controlPlaneCommands.
func parseProc(line string) (p proc, ok bool) {
	fields := strings.SplitN(strings.TrimSpace(line), " ", 3)
	if len(fields) < 2 {
		return p, false
	}
	pid, err1 := strconv.Atoi(fields[0])
	start, err2 := strconv.ParseUint(fields[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return p, false
	}
	p = proc{pid: pid, start: start}
	if len(fields) == 3 {
		p.comm = fields[2]
	}
	return p, true
}

// same reports whether the process now running as p.pid is p: the same start time
// and command name.
func (p proc) same() bool {
	comm, _, start, err := procStat(p.pid)
	if err != nil || start != p.start {
		return false
	}
	if p.comm == "" {
		return slices.Contains(controlPlaneCommands, comm)
	}
	return comm == p.comm
}

// killListed sends SIGKILL to each process listed in the file at path (written by
// writeProcs) that still runs, the same process (pid, start time and command), and
// to its process group; then it removes the file. A missing file is nothing to do.
func killListed(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := parseProc(line); ok && p.same() {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	_ = os.Remove(path)
}
