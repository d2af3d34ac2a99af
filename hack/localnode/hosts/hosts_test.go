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

package hosts

import (
	"path/filepath"
	"testing"
)

func TestResolve(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := Write(path, map[string]string{"job-1.job.ns.svc": "127.0.3.2"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvHostsFile, path)
	t.Setenv(EnvPodIP, "127.0.3.1")
	for in, want := range map[string]string{
		"job-1.job.ns.svc:50051":  "127.0.3.2:50051",
		"job-1.job.ns.svc.:50051": "127.0.3.2:50051",
		"localhost:29500":         "127.0.3.1:29500",
		"127.0.0.1:29500":         "127.0.3.1:29500",
		"other.ns.svc:80":         "other.ns.svc:80",
		"no-port":                 "no-port",
		"10.0.0.1:443":            "10.0.0.1:443",
	} {
		if got := Resolve(in); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveUnset(t *testing.T) {
	t.Setenv(EnvHostsFile, "")
	t.Setenv(EnvPodIP, "")
	for _, in := range []string{"job-1.job.ns.svc:50051", "localhost:1"} {
		if got := Resolve(in); got != in {
			t.Errorf("Resolve(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestBindAddr(t *testing.T) {
	t.Setenv(EnvPodIP, "127.0.3.1")
	for in, want := range map[string]string{
		":50051":          "127.0.3.1:50051",
		"0.0.0.0:50051":   "127.0.3.1:50051",
		"[::]:50051":      "127.0.3.1:50051",
		"127.0.0.9:50051": "127.0.0.9:50051",
		"not an address":  "not an address",
	} {
		if got := BindAddr(in); got != want {
			t.Errorf("BindAddr(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv(EnvPodIP, "")
	if got := BindAddr(":1"); got != ":1" {
		t.Errorf("BindAddr unset = %q", got)
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
