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
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// call runs one unary call of method through a's interceptor; its handler closes
// started (when not nil), then returns once release is closed (at once when nil).
func call(a *worker.Activity, method string, started, release chan struct{}) {
	_, _ = a.UnaryInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) {
			if started != nil {
				close(started)
			}
			if release != nil {
				<-release
			}
			return nil, nil
		})
}

// quietAfter starts WaitReleased(quiet) and returns a channel closed when it returns.
func quietAfter(a *worker.Activity, quiet time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		_ = a.WaitReleased(context.Background(), quiet)
		close(done)
	}()
	return done
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestWaitReleasedWaitsForTheTrainersCalls checks that a worker draining after
// SIGTERM, whose trainer never releases it (it died), stays while a call is in
// flight and until quiet has passed after the last one, and that health checks do
// not keep it.
func TestWaitReleasedWaitsForTheTrainersCalls(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	a := worker.NewActivity(clk)
	step := "/" + workerpb.Worker_ServiceDesc.ServiceName + "/Backward"

	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { call(a, step, started, release); close(returned) }()
	<-started
	done := quietAfter(a, 2*time.Second)
	waitFor(t, clk.HasWaiters)
	clk.Step(10 * time.Second) // a long step: still in flight
	waitFor(t, clk.HasWaiters)
	if isClosed(done) {
		t.Fatal("WaitReleased returned during a call")
	}
	close(release)
	<-returned
	clk.Step(time.Second)
	waitFor(t, clk.HasWaiters)
	call(a, "/"+healthpb.Health_ServiceDesc.ServiceName+"/Check", nil, nil) // not the trainer's work
	if isClosed(done) {
		t.Fatal("WaitReleased returned 1 s after the last call, want 2 s")
	}
	clk.Step(time.Second)
	waitFor(t, func() bool { return isClosed(done) })
}

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReleaseEndsTheWaitAtOnce checks that the trainer's Release ends a drain long
// before the quiet period, even right after a call.
func TestReleaseEndsTheWaitAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	a := worker.NewActivity(clk)
	call(a, "/"+workerpb.Worker_ServiceDesc.ServiceName+"/Save", nil, nil)
	done := quietAfter(a, time.Minute)
	waitFor(t, clk.HasWaiters)
	if isClosed(done) {
		t.Fatal("WaitReleased returned before the release")
	}
	call(a, "/"+workerpb.Worker_ServiceDesc.ServiceName+"/Release", nil, nil)
	waitFor(t, func() bool { return isClosed(done) })
}
