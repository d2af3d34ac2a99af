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

package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// probeTimeout bounds one probe of a worker. A refused connection fails at once; an
// address that drops packets keeps gRPC connecting for longer, and the probe then
// says the worker did not answer within probeTimeout.
const probeTimeout = 2 * time.Second

// Silent is a member of a gang that did not answer a probe.
type Silent struct {
	// Index is the member's place in the gang.
	Index int
	// Address is the member's address (host:port).
	Address string
	// Reason is why the probe got no answer: gRPC's last connection error, such as
	// a refused connection, or that none came within the probe's time.
	Reason string
}

// Silent probes every remote member at once, without waiting for a connection, and
// returns those that do not answer, in gang order; the in-process members always
// answer. A member answers when it serves Info, which a worker does before
// Configure and while it loads its model; any answer counts, an error too (a wrong
// token, say: Configure then says what is wrong).
func (g *Gang) Silent(ctx context.Context) []Silent {
	reasons := make([]string, len(g.members))
	var wg sync.WaitGroup
	for i, m := range g.members {
		if r, ok := m.(*Remote); ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reasons[i] = r.silence(ctx)
			}()
		}
	}
	wg.Wait()
	var out []Silent
	for i, reason := range reasons {
		if reason != "" {
			out = append(out, Silent{Index: i, Address: g.members[i].(*Remote).addr, Reason: reason})
		}
	}
	return out
}

// silence asks the worker for its Info, failing fast when it cannot be reached, and
// returns why it did not answer, or "" when it did (or ctx ended: nobody waits then).
func (r *Remote) silence(ctx context.Context) string {
	probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := r.client.Info(probeCtx, &workerpb.InfoRequest{})
	switch code := status.Code(err); {
	case ctx.Err() != nil:
		return ""
	case code == codes.DeadlineExceeded:
		return fmt.Sprintf("no answer within %s", probeTimeout)
	case code == codes.Unavailable:
		return status.Convert(err).Message()
	}
	return ""
}
