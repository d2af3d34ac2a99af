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

package controllers_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/espo-dev/espo-operator/test/testenv"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// scaleManagerFlags are the flags of the benchmark's "espo manager" besides its
// kubeconfig, metrics address and logging: the API client rate of the in-process
// scale test this benchmark replaced (operatorConfig), so that figures compare.
var scaleManagerFlags = []string{"--kube-api-qps", "400", "--kube-api-burst", "800"}

// managerReadyTimeout bounds the wait for the manager's controller to start.
const managerReadyTimeout = time.Minute

// buildEspo builds the espo binary as the container image does (with its build tags)
// into a temporary folder and returns its path, or returns $ESPO_SCALE_BINARY when
// set: another build to measure side by side (an earlier commit's, say).
func buildEspo(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("ESPO_SCALE_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "espo")
	build := exec.Command("go", "build", "-trimpath", "-tags", imageBuildTags(b), "-o", bin, "./cmd/espo")
	build.Dir, build.Env = env.RepoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/espo: %v\n%s", err, out)
	}
	return bin
}

// imageBuildTags are the build tags of the Dockerfile's go build (test/packaging
// checks that there is one, and that it is make build's with them).
func imageBuildTags(b *testing.B) string {
	b.Helper()
	dockerfile := readFile(filepath.Join(env.RepoRoot, "Dockerfile"))
	m := regexp.MustCompile(`go build [^\n]*-tags (\S+)`).FindAllStringSubmatch(dockerfile, -1)
	if len(m) != 1 {
		b.Fatalf("the Dockerfile has %d go build lines with -tags, want 1", len(m))
	}
	return m[0][1]
}

// managerProcess is "espo manager" running as a child process, as operatorUser,
// with its metrics served over plain HTTP on metricsAddr.
type managerProcess struct {
	cmd         *exec.Cmd
	exited      chan struct{}
	log         string
	metricsAddr string
	// pprofAddr serves the manager's profiles when the benchmark records them
	// ($ESPO_SCALE_PROFILES), and is "" when it does not.
	pprofAddr string
	stopOnce  sync.Once
	// maxAnon is the largest RssAnon sampled, in KiB.
	maxAnon atomic.Int64
}

// startManagerProcess starts bin as the manager and waits until its controller has
// started its workers; the manager stops (SIGTERM) when the benchmark ends, if not
// before, and its log's end is printed if the benchmark failed.
func startManagerProcess(b *testing.B, bin string) *managerProcess {
	b.Helper()
	operatorConfig(b, nil) // binds the operator's role to operatorUser
	dir := b.TempDir()
	metricsAddr, pprofAddr := freeLocalAddr(b), profileAddr(b)
	args := append([]string{"manager", "--kubeconfig", writeKubeconfig(b, dir, operatorUser),
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false", "--health-probe-bind-address", "0",
		"--log-format", "text"}, scaleManagerFlags...)
	args = append(args, profileFlags(pprofAddr)...)
	p := startProcess(b, exec.Command(bin, args...), metricsAddr, "Starting workers")
	p.pprofAddr = pprofAddr
	return p
}

// startProcess starts cmd, a controller manager serving its metrics on metricsAddr,
// with its output in a log file, and waits until the log says ready; the process
// stops (SIGTERM) when the benchmark ends, if not before, and its log's end is printed
// if the benchmark failed.
func startProcess(b *testing.B, cmd *exec.Cmd, metricsAddr, ready string) *managerProcess {
	b.Helper()
	evictFromPageCache(b, cmd.Path)
	p := &managerProcess{log: filepath.Join(b.TempDir(), "manager.log"), metricsAddr: metricsAddr, exited: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = cmd
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	go p.sampleAnon()
	b.Cleanup(func() {
		p.stop(b)
		if b.Failed() {
			b.Logf("the end of the manager's log:\n%s", testenv.TailFile(p.log, 40))
		}
	})
	deadline := time.Now().Add(managerReadyTimeout)
	for !strings.Contains(readFile(p.log), ready) {
		select {
		case <-p.exited:
			b.Fatalf("the manager exited: %s", testenv.TailFile(p.log, 20))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("the manager's controller did not start within %v: %s", managerReadyTimeout, testenv.TailFile(p.log, 20))
		}
	}
	return p
}

// evictFromPageCache drops the file at path from the kernel's page cache, so that the
// process started from it reads its pages from disk, as one started from a container
// image does. How a file just written by the linker sits in the page cache moves the
// binary's share of the RSS by up to 15 MiB from run to run.
func evictFromPageCache(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // only clean pages can be dropped
		b.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// stop stops the manager (SIGTERM, then SIGKILL after 30 s) and waits for it.
func (p *managerProcess) stop(b *testing.B) {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			b.Errorf("the manager did not stop within 30 s of SIGTERM")
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// peakRSS is the manager's peak resident memory so far (VmHWM), in MiB.
func (p *managerProcess) peakRSS(g Gomega) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	g.Expect(err).NotTo(HaveOccurred())
	kib := statusKiB(string(status), "VmHWM")
	g.Expect(kib).To(BeNumerically(">", 0), "VmHWM in /proc/<pid>/status")
	return float64(kib) / 1024
}

// cpuSeconds is the CPU time the manager has used so far, user and system, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, as Linux counts them for user space).
func (p *managerProcess) cpuSeconds(g Gomega) float64 {
	stat := readFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:]) // after "pid (comm) "
	g.Expect(len(fields)).To(BeNumerically(">", 12), "/proc/<pid>/stat")
	utime, err := strconv.ParseFloat(fields[11], 64)
	g.Expect(err).NotTo(HaveOccurred())
	stime, err := strconv.ParseFloat(fields[12], 64)
	g.Expect(err).NotTo(HaveOccurred())
	return (utime + stime) / 100
}

// anonSamplePeriod is how often the manager's anonymous memory is sampled.
const anonSamplePeriod = 20 * time.Millisecond

// sampleAnon samples the manager's RssAnon into maxAnon until it exits.
func (p *managerProcess) sampleAnon() {
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	for {
		select {
		case <-p.exited:
			return
		case <-time.After(anonSamplePeriod):
		}
		if kib := statusKiB(readFile(path), "RssAnon"); kib > p.maxAnon.Load() {
			p.maxAnon.Store(kib)
		}
	}
}

// peakAnon is the largest anonymous resident memory of the manager sampled so far
// (every anonSamplePeriod), in MiB.
func (p *managerProcess) peakAnon() float64 { return float64(p.maxAnon.Load()) / 1024 }

// statusKiB is the field of /proc/<pid>/status text given in kB; 0 if absent.
func statusKiB(status, field string) int64 {
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB$`).FindStringSubmatch(status)
	if m == nil {
		return 0
	}
	kib, _ := strconv.ParseInt(m[1], 10, 64)
	return kib
}

// reconciles is the number of reconciles the manager's ESPOJob controller has
// finished, from its metrics.
func (p *managerProcess) reconciles(g Gomega) float64 {
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	n := 0.0
	g.Expect(testenv.EachSample(text, "controller_runtime_reconcile_total", func(l map[string]string, v float64) {
		if l["controller"] == "espojob" {
			n += v
		}
	})).To(Succeed())
	return n
}

// writeKubeconfig writes a kubeconfig into dir that reaches the test API server as
// env.Config does, impersonating user, and returns its path.
func writeKubeconfig(b *testing.B, dir, user string) string {
	b.Helper()
	server := env.Config.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken, Impersonate: user,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// freeLocalAddr is a loopback address with a port free now.
func freeLocalAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// requestCounts are the API server's request counts (apiserver_request_total) of
// the kinds the manager reads and writes, by "VERB resource[/subresource]".
type requestCounts map[string]float64

// scaleKinds are the resources whose requests requestCounts holds: the ESPOJobs and
// everything the controller makes for them.
var scaleKinds = []string{"espojobs", "pods", "configmaps", "services", "serviceaccounts", "secrets",
	"networkpolicies", "roles", "rolebindings"}

// apiServerRequests reads the API server's request counts from its metrics.
func apiServerRequests(g Gomega) requestCounts {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(env.Config))
	g.Expect(err).NotTo(HaveOccurred())
	text, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	counts := requestCounts{}
	g.Expect(testenv.EachSample(text, "apiserver_request_total", func(l map[string]string, v float64) {
		if !slices.Contains(scaleKinds, l["resource"]) {
			return
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		counts[key] += v
	})).To(Succeed())
	return counts
}

// sub is c less earlier counts.
func (c requestCounts) sub(earlier requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range c {
		if v -= earlier[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

// writes is the number of requests that are not reads.
func (c requestCounts) writes() float64 {
	n := 0.0
	for k, v := range c {
		if verb, _, _ := strings.Cut(k, " "); !slices.Contains([]string{"GET", "LIST", "WATCH"}, verb) {
			n += v
		}
	}
	return n
}

// gets is the number of GET requests (reads of one object).
func (c requestCounts) gets() float64 {
	n := 0.0
	for k, v := range c {
		if strings.HasPrefix(k, "GET ") {
			n += v
		}
	}
	return n
}

func (c requestCounts) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, c[k]))
	}
	return strings.Join(parts, ", ")
}
