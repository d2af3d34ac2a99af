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

package worker_test

import (
	"context"
	"net"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// BenchmarkRemoteCall measures one small call (Info) of a Remote over loopback to a
// worker without authentication and to one that checks the token: the difference
// is what the token costs each call (sending the metadata, the interceptor and the
// constant-time compare).
func BenchmarkRemoteCall(b *testing.B) {
	for _, c := range []struct {
		name  string
		opts  worker.ServerOptions
		token string
	}{
		{"no-auth", worker.ServerOptions{NoAuth: true}, ""},
		{"token", worker.ServerOptions{Token: workertest.Token}, workertest.Token},
	} {
		b.Run(c.name, func(b *testing.B) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			gs, err := worker.NewGRPCServer(cpu.New(1), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			go gs.Serve(lis)
			defer gs.Stop()
			r, err := worker.Dial(lis.Addr().String(), nil, c.token)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			if _, err := r.Client().Info(ctx, &workerpb.InfoRequest{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Client().Info(ctx, &workerpb.InfoRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
