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

// Package podnet is the pod network of the process node (internal/localcluster): there
// is no cluster DNS and no network namespace on a machine without a cluster, so the node
// gives each pod its own loopback address and writes a hosts file that maps each pod's
// DNS names ("<hostname>.<subdomain>.<namespace>.svc") to those addresses. It tells every
// process it starts where both are, in ESPO_HOSTS_FILE and ESPO_POD_IP.
//
// A Network is what a process does with them: it dials through the hosts file and
// listens on the pod's own address. Only the local mode makes one (FromEnv returns nil
// in a real cluster, where a nil *Network dials and listens as the net package does),
// and the commands hand its methods to the code that dials or listens as an option.
// This package imports the standard library only.
package podnet

import (
	"bufio"
	"bytes"
	"context"
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

// Network is the pod network of one process on the process node. A nil *Network is
// the machine's own network: its methods behave as net.Dialer and net.Listen do.
type Network struct {
	// HostsFile maps pod names to addresses; it is read on every dial, because pods
	// come and go.
	HostsFile string
	// PodIP is this pod's own loopback address.
	PodIP string
}

// FromEnv returns the network the process node described in the environment
// ($ESPO_HOSTS_FILE, $ESPO_POD_IP), or nil when neither is set, that is outside the
// local mode.
func FromEnv() *Network {
	n := &Network{HostsFile: os.Getenv(EnvHostsFile), PodIP: os.Getenv(EnvPodIP)}
	if n.HostsFile == "" && n.PodIP == "" {
		return nil
	}
	return n
}

// DialContext connects to addr ("host:port") on the named network ("tcp") after
// resolving its host: a name in the hosts file becomes its address, and localhost
// (or 127.0.0.1, ::1) becomes the pod's address, where the pod's other containers
// listen. Other hosts are dialed as they are. A hosts file that cannot be read counts
// as empty.
func (n *Network) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, n.resolve(addr))
}

// Listen listens on addr, binding a listen address without a host (":50051"), with
// an unspecified one ("0.0.0.0:50051", "[::]:50051") or with localhost (localhost,
// 127.0.0.1, ::1: a pod's loopback, which its other containers dial as DialContext
// rewrites it) to the pod's own address, so that two pods on the process node can
// listen on the same port.
func (n *Network) Listen(network, addr string) (net.Listener, error) {
	return net.Listen(network, n.bindAddr(addr))
}

// resolve rewrites the host of addr as DialContext describes; anything else, an
// address without a port, and every address of a nil Network is returned unchanged.
func (n *Network) resolve(addr string) string {
	if n == nil {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if isLocalhost(host) {
		if n.PodIP != "" {
			return net.JoinHostPort(n.PodIP, port)
		}
		return addr
	}
	if n.HostsFile == "" {
		return addr
	}
	m, err := Read(n.HostsFile)
	if err != nil {
		return addr
	}
	if ip, ok := m[strings.TrimSuffix(host, ".")]; ok {
		return net.JoinHostPort(ip, port)
	}
	return addr
}

// bindAddr rewrites addr as Listen describes; any other address, and every address
// of a Network without a pod address, is returned unchanged.
func (n *Network) bindAddr(addr string) string {
	if n == nil || n.PodIP == "" {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || (host != "" && !isLocalhost(host) && !net.ParseIP(host).IsUnspecified()) {
		return addr
	}
	return net.JoinHostPort(n.PodIP, port)
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
	b.WriteString("# written by the espo process node (internal/localcluster)\n")
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
