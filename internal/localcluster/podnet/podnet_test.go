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

package podnet

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
)

func TestResolve(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := Write(path, map[string]string{"job-1.job.ns.svc": "127.0.3.2"}); err != nil {
		t.Fatal(err)
	}
	n := &Network{HostsFile: path, PodIP: "127.0.3.1"}
	for in, want := range map[string]string{
		"job-1.job.ns.svc:50051":  "127.0.3.2:50051",
		"job-1.job.ns.svc.:50051": "127.0.3.2:50051",
		"localhost:29500":         "127.0.3.1:29500",
		"127.0.0.1:29500":         "127.0.3.1:29500",
		"other.ns.svc:80":         "other.ns.svc:80",
		"no-port":                 "no-port",
		"10.0.0.1:443":            "10.0.0.1:443",
	} {
		if got := n.resolve(in); got != want {
			t.Errorf("resolve(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNilNetworkIsTheMachines(t *testing.T) {
	var n *Network
	for _, in := range []string{"job-1.job.ns.svc:50051", "localhost:1", ":50051"} {
		if got := n.resolve(in); got != in {
			t.Errorf("resolve(%q) = %q, want it unchanged", in, got)
		}
		if got := n.bindAddr(in); got != in {
			t.Errorf("bindAddr(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvHostsFile, "")
	t.Setenv(EnvPodIP, "")
	if n := FromEnv(); n != nil {
		t.Fatalf("FromEnv() outside the local mode = %+v, want nil", n)
	}
	t.Setenv(EnvHostsFile, "/state/hosts")
	t.Setenv(EnvPodIP, "127.0.3.1")
	if n := FromEnv(); n == nil || *n != (Network{HostsFile: "/state/hosts", PodIP: "127.0.3.1"}) {
		t.Fatalf("FromEnv() = %+v", n)
	}
}

func TestBindAddr(t *testing.T) {
	n := &Network{PodIP: "127.0.3.1"}
	for in, want := range map[string]string{
		":50051":          "127.0.3.1:50051",
		"0.0.0.0:50051":   "127.0.3.1:50051",
		"[::]:50051":      "127.0.3.1:50051",
		"127.0.0.1:50051": "127.0.3.1:50051",
		"localhost:50051": "127.0.3.1:50051",
		"[::1]:50051":     "127.0.3.1:50051",
		"127.0.0.9:50051": "127.0.0.9:50051",
		"not an address":  "not an address",
	} {
		if got := n.bindAddr(in); got != want {
			t.Errorf("bindAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDialReachesListenByName listens as one pod and dials it by its DNS name from
// another, as a trainer reaches a worker on the process node.
func TestDialReachesListenByName(t *testing.T) {
	server := &Network{PodIP: "127.0.0.1"}
	l, err := server.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = io.WriteString(c, "hello")
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	path := filepath.Join(t.TempDir(), "hosts")
	if err := Write(path, map[string]string{"worker-0.job.ns.svc": "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	client := &Network{HostsFile: path, PodIP: "127.0.0.2"}
	c, err := client.DialContext(context.Background(), "tcp", net.JoinHostPort("worker-0.job.ns.svc", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want hello", got, err)
	}
}

func TestReadSkipsComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := Write(path, map[string]string{"b": "127.0.0.2", "a": "127.0.0.3"}); err != nil {
		t.Fatal(err)
	}
	m, err := Read(path)
	if err != nil || len(m) != 2 || m["a"] != "127.0.0.3" {
		t.Fatalf("Read = %v, %v", m, err)
	}
}
