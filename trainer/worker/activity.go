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
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Activity tracks a worker server's calls so that a worker asked to stop (SIGTERM,
// with the rest of its gang) keeps serving while its trainer still needs it: the
// trainer drains too, finishing the step in flight and its checkpoint, then calls
// Release. A trainer that died cannot release; a quiet period without calls ends the
// wait then.
type Activity struct {
	clock    clock.Clock
	released chan struct{}
	once     sync.Once
	mu       sync.Mutex
	inFlight int
	last     time.Time
}

// NewActivity returns an Activity reading c (the real clock when nil), idle since now.
func NewActivity(c clock.Clock) *Activity {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Activity{clock: c, released: make(chan struct{}), last: c.Now()}
}

// UnaryInterceptor records the start and end of each call of the worker protocol
// (health checks are not a trainer's work and do not count), and a Release.
func (a *Activity) UnaryInterceptor() grpc.UnaryServerInterceptor {
	prefix := "/" + workerpb.Worker_ServiceDesc.ServiceName + "/"
	release := prefix + "Release"
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, prefix) {
			return handler(ctx, req)
		}
		if info.FullMethod == release {
			a.once.Do(func() { close(a.released) })
		}
		a.begin()
		defer a.end()
		return handler(ctx, req)
	}
}

func (a *Activity) begin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight++
	a.last = a.clock.Now()
}

func (a *Activity) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	a.last = a.clock.Now()
}

// quietLeft returns how much longer the server must stay without calls to have been
// quiet for d: d while a call is in flight, 0 or less once quiet.
func (a *Activity) quietLeft(d time.Duration) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inFlight > 0 {
		return d
	}
	return d - a.clock.Since(a.last)
}

// WaitReleased returns once the trainer released the worker, once no call has been
// in flight for quiet (a trainer that died cannot release), or with ctx's error.
func (a *Activity) WaitReleased(ctx context.Context, quiet time.Duration) error {
	for {
		left := a.quietLeft(quiet)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.released:
			return nil
		case <-a.clock.After(left):
		}
	}
}
