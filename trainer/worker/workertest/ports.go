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

package workertest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rendezvousSpan is how many ports below the kernel's ephemeral range
// RendezvousPort draws from.
const rendezvousSpan = 8192

// RendezvousPort returns a TCP port free on every address, for the MASTER_PORT of
// a test's gang of PyTorch workers, and fails t when there is none. torch's
// rendezvous store listens on all addresses, so a port checked free on one
// address only may be taken on another; and a port from the kernel's ephemeral
// range (what listening on port 0 gives) may be taken, between the check and the
// store's listen, by the local end of any connection on the machine. So the port
// comes from the span just below that range, starting at a point that differs
// between processes (their pid), so that test binaries running at once try
// different ports.
func RendezvousPort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	first := max(low-rendezvousSpan, 1024)
	span := low - first
	start := os.Getpid() % span
	for i := range span {
		port := first + (start+i)%span
		if l, err := net.Listen("tcp", ":"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port in %d-%d on every address", first, low-1)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), Linux's default 32768 where it cannot
// be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var low, high int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &low, &high); err == nil && low > 1024 {
			return low
		}
	}
	return 32768
}
