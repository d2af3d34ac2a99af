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
	"context"
	"time"

	"k8s.io/client-go/rest"
)

// RunningNode is a process node that runs with its garbage collector and, unless a
// kube-scheduler binds the pods, its scheduler (StartNode).
type RunningNode struct {
	*Node
	stopped chan error
}

// StartOption changes what StartNode runs beside the node.
type StartOption func(*startOptions)

type startOptions struct{ scheduler bool }

// WithoutScheduler makes StartNode start no Scheduler, for a cluster whose
// kube-scheduler binds the pods.
func WithoutScheduler() StartOption { return func(o *startOptions) { o.scheduler = false } }

// StartNode makes the process node of cfg on the API server rc reaches and runs it,
// with a scheduler that binds pods to it (unless WithoutScheduler) and the garbage
// collector, until ctx is done. It returns once the node is ready, or fails when it
// is not within readyTimeout; the node then still runs until ctx is done.
func StartNode(ctx context.Context, cfg Config, rc *rest.Config, readyTimeout time.Duration, opts ...StartOption) (*RunningNode, error) {
	o := startOptions{scheduler: true}
	for _, opt := range opts {
		opt(&o)
	}
	node, err := NewNode(cfg, rc)
	if err != nil {
		return nil, err
	}
	gc, err := NewGarbageCollector(rc, cfg.Clock, cfg.Log)
	if err != nil {
		return nil, err
	}
	var sched *Scheduler
	if o.scheduler {
		cs, err := newCoreClient(rc)
		if err != nil {
			return nil, err
		}
		sched = NewScheduler(cs, node.Name(), cfg.Clock, cfg.Log)
	}
	r := &RunningNode{Node: node, stopped: make(chan error, 1)}
	go func() { r.stopped <- node.Run(ctx) }()
	if sched != nil {
		go func() { _ = sched.Run(ctx) }()
	}
	go func() { _ = gc.Run(ctx) }()
	return r, node.WaitReady(ctx, readyTimeout)
}

// Stopped receives the node's end (nil, or why it failed) once it has stopped, which
// is after its pods have.
func (r *RunningNode) Stopped() <-chan error { return r.stopped }
