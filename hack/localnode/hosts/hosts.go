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

// Package hosts is the name resolution of the process node (hack/localnode): there is no
// cluster DNS on a machine without a cluster, so the node writes a hosts file that maps
// each pod's DNS names ("<hostname>.<subdomain>.<namespace>.svc") to the pod's loopback
// address, and tells every process where it is in ESPO_HOSTS_FILE. Each pod also has its
// own loopback address, given in ESPO_POD_IP, which its servers must bind to, because
// every pod shares the machine's ports.
//
// Code that dials or listens by name calls Resolve and BindAddr. Both are the identity
// when the variables are unset, that is in a real cluster, so they cost nothing there.
// This package imports the standard library only.
package hosts

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Environment variables the process node sets for every process it starts.
const (
	// EnvHostsFile names the hosts file (the format of /etc/hosts).
	EnvHostsFile = "ESPO_HOSTS_FILE"
	// EnvPodIP is the pod's own loopback address.
	EnvPodIP = "ESPO_POD_IP"
)

// Resolve rewrites the host of a "host:port" address through the process node's hosts
// file ($ESPO_HOSTS_FILE) and the pod's address ($ESPO_POD_IP): a name in the file
// becomes its address, and localhost (or 127.0.0.1, ::1) becomes the pod's address,
// where the pod's other containers listen. Anything else, an address without a port,
// and every address when the variables are unset, is returned unchanged. A hosts file
// that cannot be read counts as empty.
func Resolve(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if isLocalhost(host) {
		if ip := os.Getenv(EnvPodIP); ip != "" {
			return net.JoinHostPort(ip, port)
		}
		return addr
	}
	path := os.Getenv(EnvHostsFile)
	if path == "" {
		return addr
	}
	m, err := Read(path)
	if err != nil {
		return addr
	}
	if ip, ok := m[strings.TrimSuffix(host, ".")]; ok {
		return net.JoinHostPort(ip, port)
	}
	return addr
}

// BindAddr rewrites a listen address without a host (":50051") or with an unspecified
// one ("0.0.0.0:50051", "[::]:50051") to the pod's own address when $ESPO_POD_IP is set,
// so that two pods on the process node can listen on the same port. Any other address
// is returned unchanged.
func BindAddr(addr string) string {
	ip := os.Getenv(EnvPodIP)
	if ip == "" {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || (host != "" && !net.ParseIP(host).IsUnspecified()) {
		return addr
	}
	return net.JoinHostPort(ip, port)
}

func isLocalhost(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Read parses a hosts file ("address name..." per line, # comments) into name ->
// address. A later line wins over an earlier one for the same name.
func Read(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, name := range fields[1:] {
			m[name] = fields[0]
		}
	}
	return m, sc.Err()
}

// Write replaces the hosts file at path with one line per name of m (name ->
// address), sorted by name, atomically (a reader sees the old or the new file whole).
func Write(path string, m map[string]string) error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# written by the espo process node (hack/localnode)\n")
	for _, name := range names {
		fmt.Fprintf(&b, "%s %s\n", m[name], name)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hosts-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
