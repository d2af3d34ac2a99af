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
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/espo-dev/espo-operator/internal/localcluster/podnet"
)

// ipPool hands out the pods' loopback addresses from a prefix inside 127.0.0.0/8
// (Linux routes all of it to the loopback interface, so a server can bind any of
// them with no set-up). The prefix's first and last addresses are not used.
type ipPool struct {
	mu     sync.Mutex
	prefix netip.Prefix
	used   map[netip.Addr]types.UID
	byUID  map[types.UID]netip.Addr
}

// newIPPool checks that cidr is a loopback prefix with room for pods.
func newIPPool(cidr string) (*ipPool, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR: %w", err)
	}
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || !prefix.Addr().IsLoopback() || prefix.Bits() > 30 || prefix.Bits() < 8 {
		return nil, fmt.Errorf("pod CIDR %s: must be an IPv4 prefix inside 127.0.0.0/8 of /8 to /30", cidr)
	}
	return &ipPool{prefix: prefix, used: map[netip.Addr]types.UID{}, byUID: map[types.UID]netip.Addr{}}, nil
}

// allocate returns the pod's address, the lowest free one on first call.
func (p *ipPool) allocate(uid types.UID) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		return a.String(), nil
	}
	for a := p.prefix.Addr().Next(); p.prefix.Contains(a.Next()); a = a.Next() {
		if _, taken := p.used[a]; !taken {
			p.used[a], p.byUID[uid] = uid, a
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("no free pod address left in %s", p.prefix)
}

// release frees the pod's address.
func (p *ipPool) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byUID[uid]; ok {
		delete(p.used, a)
		delete(p.byUID, uid)
	}
}

// hostsTable is the node's hosts file: pod key -> names, written whole on every
// change.
type hostsTable struct {
	mu    sync.Mutex
	path  string
	names map[string]map[string]string // pod key -> name -> address
}

func newHostsTable(path string) (*hostsTable, error) {
	t := &hostsTable{path: path, names: map[string]map[string]string{}}
	return t, t.writeLocked()
}

// add maps names to ip for the pod key.
func (t *hostsTable) add(key string, names []string, ip string) error {
	if len(names) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := map[string]string{}
	for _, n := range names {
		m[n] = ip
	}
	t.names[key] = m
	return t.writeLocked()
}

// remove drops the pod key's names, if they still point to ip (a newer pod of the
// same name keeps its own).
func (t *hostsTable) remove(key, ip string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.names[key] {
		if a != ip {
			return nil
		}
	}
	if _, ok := t.names[key]; !ok {
		return nil
	}
	delete(t.names, key)
	return t.writeLocked()
}

func (t *hostsTable) writeLocked() error {
	all := map[string]string{}
	for _, m := range t.names {
		for n, a := range m {
			all[n] = a
		}
	}
	return podnet.Write(t.path, all)
}

// hostname is the API server's host, as KUBERNETES_SERVICE_HOST gives it.
func (a apiEndpoint) hostname() string {
	u, err := url.Parse(a.host)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// port is the API server's port, as KUBERNETES_SERVICE_PORT gives it.
func (a apiEndpoint) port() string {
	u, err := url.Parse(a.host)
	if err != nil {
		return ""
	}
	if p := u.Port(); p != "" {
		return p
	}
	return "443"
}

// secondsDuration converts whole seconds to a duration.
func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }

// freeLoopbackListener listens on an unused port of the node's address.
func freeLoopbackListener() (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
}
