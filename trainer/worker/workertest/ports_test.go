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
	"net"
	"strconv"
	"testing"
)

// TestRendezvousPortIsFreeEverywhereBelowTheEphemeralRange: the port is below the
// kernel's ephemeral range and can be listened on on every address; held, it is
// not given again.
func TestRendezvousPortIsFreeEverywhereBelowTheEphemeralRange(t *testing.T) {
	port := RendezvousPort(t)
	if low := ephemeralLow(); port < low-rendezvousSpan || port >= low {
		t.Fatalf("port %d, want one in %d-%d", port, low-rendezvousSpan, low-1)
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listening on every address of port %d: %v", port, err)
	}
	defer l.Close()
	if again := RendezvousPort(t); again == port {
		t.Errorf("port %d given again while it is held", port)
	}
}
