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

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/espo-dev/espo-operator/internal/localcluster/podnet"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// workerOptions are the flags of "espo worker".
type workerOptions struct {
	device          string
	listen          string
	threads         int
	shutdownTimeout time.Duration
	drainQuiet      time.Duration
	tokenFile       string
	insecureNoAuth  bool
	allowPaths      []string
	// pods is the local mode's pod network (podnet.FromEnv); nil in a cluster.
	pods *podnet.Network
}

// envWorkerListen names the environment variable with the default listen address,
// as the controller sets it in a worker container.
const envWorkerListen = "ESPO_WORKER_LISTEN"

func newWorkerCommand() *cobra.Command {
	o := workerOptions{pods: podnet.FromEnv()}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve a policy worker over gRPC (the worker protocol and grpc.health.v1)",
		Long: `Serve a policy worker over gRPC: the worker protocol (docs/worker-protocol.md)
and the standard gRPC health service. --device cpu serves the Go reference policy;
the cuda worker is the project's PyTorch package. On SIGTERM or SIGINT it keeps
serving until its trainer, stopping too, has finished the step in flight and its
checkpoint and calls Release (or until no call has come for --drain-quiet: a trainer
that died cannot release), then stops gracefully, waiting for calls in flight up to
--shutdown-timeout; a second signal skips the wait.

Every call of the worker protocol must carry the job's token (--token-file, the
Secret the controller mounts; the health service stays open for probes); without a
token file the worker does not start unless --insecure-no-auth is given, for a
worker run by hand. Save and Load accept only paths under the --allow-path folders
(default $ESPO_WORKER_PATHS); with none, every Save and Load is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sig := make(chan os.Signal, 2)
			signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
			defer signal.Stop(sig)
			return reportTermination(runWorker(cmd.Context(), sig, o, func(addr string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "espo worker: serving on %s%s\n", addr, authNote(o))
			}), cmd.ErrOrStderr())
		},
	}
	listen := os.Getenv(envWorkerListen)
	if listen == "" {
		listen = ":50051"
	}
	f := cmd.Flags()
	f.StringVar(&o.device, "device", "cpu", "Device of the policy: cpu (the Go reference policy)")
	f.StringVar(&o.listen, "listen", listen, "Address to serve on, host:port (default $"+envWorkerListen+" or :50051)")
	f.IntVar(&o.threads, "threads", 0, "Goroutines for Generate, LogProbs and Backward; 0: GOMAXPROCS")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long a graceful stop waits for calls in flight")
	f.DurationVar(&o.drainQuiet, "drain-quiet", time.Minute, "After SIGTERM, how long without a call ends the wait for the trainer's Release")
	f.StringVar(&o.tokenFile, "token-file", os.Getenv(worker.EnvTokenFile),
		"File with the job's worker token (64 hex characters) that every call must carry (default $"+worker.EnvTokenFile+")")
	f.BoolVar(&o.insecureNoAuth, "insecure-no-auth", false, "Serve without a token, to anyone who can reach the port: for a worker run by hand, never in a job")
	f.StringArrayVar(&o.allowPaths, "allow-path", worker.SplitFolders(os.Getenv(worker.EnvAllowedPaths)),
		"A folder Save and Load may touch; repeat for more (default: the colon-separated $"+worker.EnvAllowedPaths+"); none refuses every Save and Load")
	return cmd
}

// runWorker serves the worker until ctx ends or a signal comes on sig; after a
// signal it keeps serving until the trainer releases it, no call of the worker
// protocol has come for o.drainQuiet, or a second signal comes, then stops
// gracefully. ready is called with the address once it listens.
func runWorker(ctx context.Context, sig <-chan os.Signal, o workerOptions, ready func(addr string)) error {
	if o.device != "cpu" {
		return fmt.Errorf("worker: device %q is not served by this binary; --device cpu serves the Go reference policy, the cuda worker is the PyTorch package", o.device)
	}
	so, err := serverOptions(o)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	gs, err := worker.NewGRPCServer(cpu.New(o.threads), so)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	lis, err := o.pods.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	ready(lis.Addr().String())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	case <-sig:
		waitReleased(ctx, sig, so.Activity, o.drainQuiet)
	}
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(o.shutdownTimeout):
		gs.Stop()
	}
	return nil
}

// authNote is what the serving line says about authentication: nothing when calls
// need the token.
func authNote(o workerOptions) string {
	if o.insecureNoAuth {
		return " WITHOUT AUTHENTICATION (--insecure-no-auth): anyone who can reach the port may call"
	}
	return ""
}

// serverOptions reads the token file and gathers the allowed folders of o, with a
// fresh Activity. A worker without a token file refuses to start unless
// --insecure-no-auth says so; both at once are an error too.
func serverOptions(o workerOptions) (worker.ServerOptions, error) {
	so := worker.ServerOptions{NoAuth: o.insecureNoAuth, Allowed: o.allowPaths, Activity: worker.NewActivity(nil)}
	switch {
	case o.tokenFile != "" && o.insecureNoAuth:
		return so, fmt.Errorf("--insecure-no-auth with a token file (--token-file or $%s): drop one of them", worker.EnvTokenFile)
	case o.tokenFile == "" && !o.insecureNoAuth:
		return so, fmt.Errorf("no worker token: pass --token-file (default $%s, the job's Secret <job>-worker-token as the controller mounts it), "+
			"or --insecure-no-auth to serve anyone who can reach the port, for a worker run by hand", worker.EnvTokenFile)
	case o.tokenFile != "":
		token, err := worker.ReadTokenFile(o.tokenFile)
		if err != nil {
			return so, fmt.Errorf("--token-file: %w", err)
		}
		so.Token = token
	}
	return so, nil
}

// waitReleased returns once the trainer released the worker, a has seen no call for
// quiet, ctx ends or another signal comes on sig.
func waitReleased(ctx context.Context, sig <-chan os.Signal, a *worker.Activity, quiet time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = a.WaitReleased(ctx, quiet)
}
