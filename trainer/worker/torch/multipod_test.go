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

package torch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
)

// pod is one trainer pod's worker container: a launcher (python3 -m espo_worker
// --procs K) serving on its own loopback address, as the pod's address on the pod
// network, with the environment the controller gives it (ESPO_RANK, ESPO_WORLD_SIZE)
// and the rendezvous at pod 0's address.
type pod struct {
	ip    string
	rank  int
	procs int
}

// groupOf describes pods as one torch.distributed group: the rendezvous address (pod
// 0's) and a free port on it.
type groupOf struct {
	pods       []pod
	masterPort int
}

// TestTwoPodsOfTwoWorkersMatchOnePodOfFour: the Go trainer drives two worker
// launchers, each on its own loopback address with two worker processes
// (ESPO_RANK 0 and 1 of ESPO_WORLD_SIZE 2), which form one gloo group over TCP at
// pod 0's address; the run ends Completed with every worker holding the same
// weights as one launcher of four workers, to float32 all-reduce's tolerance.
func TestTwoPodsOfTwoWorkersMatchOnePodOfFour(t *testing.T) {
	t.Parallel() // one of the package's longest: see TestPythonUnitTests
	one := trainPods(t, groupOf{pods: []pod{{ip: "127.77.0.1", procs: 4}}})
	two := trainPods(t, groupOf{pods: []pod{{ip: "127.77.1.1", procs: 2}, {ip: "127.77.1.2", rank: 1, procs: 2}}})
	diff := maxParamDiff(t, one[0], append(one[1:], two...))
	t.Logf("largest parameter difference from one pod's worker 0: %g", diff)
}

// trainPods starts g's pods, runs smallRun to Completed on their workers in global
// rank order, and returns the files each worker saved its final state to.
func trainPods(t *testing.T, g groupOf) []string {
	c := smallRun(t)
	g.masterPort = workertest.RendezvousPort(t)
	members := startPods(t, g, c.OutputDir)
	rep := runTrainer(t, c, members)
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps < 2 {
		t.Fatalf("%d pods: outcome %s after %d steps: %s", len(g.pods), rep.Outcome, rep.Steps, rep.Message)
	}
	files := make([]string, len(members))
	for i, m := range members {
		files[i] = filepath.Join(c.OutputDir, fmt.Sprintf("final-%d.pt", i))
		if err := m.Save(context.Background(), files[i]); err != nil {
			t.Fatalf("worker %d of %d pods: save: %v", i, len(g.pods), err)
		}
	}
	return files
}

// startPods starts g's pods (startPod) and returns their workers in global rank order.
func startPods(t *testing.T, g groupOf, allowed string) []worker.Member {
	var members []worker.Member
	for _, p := range g.pods {
		for _, r := range startPod(t, g, p, allowed) {
			members = append(members, r)
		}
	}
	return members
}

// runTrainer runs the trainer of c on members to its end and returns its report;
// an error fails the test.
func runTrainer(t *testing.T, c *trainer.Config, members []worker.Member) *trainer.Report {
	t.Helper()
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(members...), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// startPod starts p's launcher with the tiny model on p.procs consecutive free ports
// of p.ip, saving under allowed, and returns its workers in local index order; the
// launcher and its workers are stopped at the end of the test.
func startPod(t *testing.T, g groupOf, p pod, allowed string) []*worker.Remote {
	t.Helper()
	base := freePorts(t, p.ip, p.procs)
	cmd := exec.Command(python, "-m", "espo_worker", "--listen", net.JoinHostPort(p.ip, strconv.Itoa(base)),
		"--procs", strconv.Itoa(p.procs), "--model", "tiny", "--device", "cpu", "--threads", "4", "--drain-quiet", "5",
		"--max-new-tokens", "24", "--max-prompt-tokens", "96", "--token-file", workertest.WriteToken(t), "--allow-path", allowed)
	cmd.Env = append(pyEnv(), "ESPO_RANK="+strconv.Itoa(p.rank),
		"ESPO_WORLD_SIZE="+strconv.Itoa(len(g.pods)), "ESPO_DRIVER_ADDR="+net.JoinHostPort(g.pods[0].ip, "8470"),
		"MASTER_PORT="+strconv.Itoa(g.masterPort))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so that the cleanup reaches the workers
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(cmd) })
	addrs := servingAddrs(t, stderr, p.procs, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGABRT) })
	rs := make([]*worker.Remote, len(addrs))
	for k, a := range addrs {
		if want := net.JoinHostPort(p.ip, strconv.Itoa(base+k)); a != want {
			t.Fatalf("pod %d worker %d serves on %s, want %s", p.rank, k, a, want)
		}
		r, err := worker.Dial(a, nil, workertest.Token)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		rs[k] = r
	}
	return rs
}

// stopGroup interrupts the process group of cmd (the launcher passes the signal on to
// its workers) and kills it when it has not ended within 20 s.
func stopGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// servingWait bounds the wait for a launcher's workers to say where they serve.
const servingWait = 3 * time.Minute

// servingAddrs reads the launcher's standard error until n workers said where they
// serve, and returns those addresses by port; the rest of the log goes to t.Logf.
// When they have not within servingWait, it calls abort (which should send the
// launcher's process group SIGABRT: with PYTHONFAULTHANDLER set, each Python process
// then prints where it was) and logs what they print before failing the test.
func servingAddrs(t *testing.T, stderr interface{ Read([]byte) (int, error) }, n int, abort func()) []string {
	t.Helper()
	found := make(chan string, n)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- net.JoinHostPort(m[1], m[2])
				continue
			}
			t.Logf("pod: %s", sc.Text())
		}
	}()
	var addrs []string
	deadline := time.After(servingWait)
	for len(addrs) < n {
		select {
		case a := <-found:
			addrs = append(addrs, a)
		case <-ended:
			for len(found) > 0 { // addresses it said before it ended
				addrs = append(addrs, <-found)
			}
			if len(addrs) < n {
				t.Fatalf("the launcher exited after %d of %d workers served", len(addrs), n)
			}
		case <-deadline:
			abort()
			select { // the tracebacks, logged above as the processes end
			case <-ended:
			case <-time.After(10 * time.Second):
			}
			t.Fatalf("%d of %d workers served within %v; their stacks at SIGABRT are logged above", len(addrs), n, servingWait)
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return port(addrs[i]) < port(addrs[j]) })
	return addrs
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// freePorts returns the first of n consecutive ports that are free on ip.
func freePorts(t *testing.T, ip string, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatalf("listen on %s (Linux routes all of 127.0.0.0/8 to lo): %v", ip, err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		for k := 1; k < n; k++ {
			if l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(base+k))); err == nil {
				ls = append(ls, l)
			}
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == n {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports on %s", n, ip)
	return 0
}

// paramDiffScript prints, as JSON, the largest absolute difference between the
// parameters of the state in argv[1] and those of each state after it, and the
// steps each state counts.
const paramDiffScript = `
import json, sys, torch
def load(f):
    st = torch.load(f)
    return st["params"], json.loads(st["meta"])["steps"]
ref, ref_steps = load(sys.argv[1])
moved = max(float((a - b).abs().max()) for a, b in zip(ref, torch.load(sys.argv[1])["reference"]))
out = []
for f in sys.argv[2:]:
    ps, steps = load(f)
    d = max(float((a - b).abs().max()) for a, b in zip(ref, ps)) if len(ps) == len(ref) else float("inf")
    scale = max(float(a.abs().max()) for a in ref)
    out.append({"file": f, "diff": d, "scale": scale, "steps": steps, "ref_steps": ref_steps,
                "moved": moved})
print(json.dumps(out))
`

// maxParamDiff fails the test when a state in others has other parameters than ref
// beyond float32 all-reduce's rounding (1e-5 of the largest weight), or another step
// count, and returns the largest difference.
func maxParamDiff(t *testing.T, ref string, others []string) float64 {
	t.Helper()
	cmd := exec.Command(python, append([]string{"-c", paramDiffScript, ref}, others...)...)
	cmd.Env = pyEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("comparing the states: %v: %s", err, out)
	}
	var diffs []struct {
		File               string
		Diff, Scale, Moved float64
		Steps              int64
		RefSteps           int64 `json:"ref_steps"`
	}
	if err := json.Unmarshal(out, &diffs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	largest := 0.0
	for _, d := range diffs {
		if d.Steps != d.RefSteps || d.Steps == 0 {
			t.Errorf("%s: %d steps, one pod's worker 0: %d", filepath.Base(d.File), d.Steps, d.RefSteps)
		}
		if !(d.Diff <= 1e-5*d.Scale) {
			t.Errorf("%s: parameters differ by %g from one pod's worker 0 (largest weight %g)", d.File, d.Diff, d.Scale)
		}
		largest = max(largest, d.Diff)
	}
	if len(diffs) > 0 {
		t.Logf("one pod's worker 0: parameters %g from its reference policy", diffs[0].Moved)
	}
	return largest
}
