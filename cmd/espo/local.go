//go:build !nolocal

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
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/espo-dev/espo-operator/internal/localcluster"
)

// newLocalCommand is "espo local": its flags fill a localcluster.Local, which does the work.
func newLocalCommand() *cobra.Command {
	o := &localcluster.Local{Clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run a local cluster (etcd, kube-apiserver, a process node) and the sample job on it",
		Long: `"espo local up" starts etcd and kube-apiserver (built by hack/setup-envtest.sh),
a node that runs pods as local processes, a scheduler (--scheduler) and a garbage collector, installs
the CRDs (waiting until the API server serves their kinds) and the trainer status admission policy with kubectl,
prints the KUBECONFIG to use, starts "espo manager", applies the
sample job (--sample) and shows its progress until it finishes, then its per-stage
accuracies. "espo local down" stops everything and removes the state folder. Both may
be run any number of times; run them from the repository's root.`,
	}
	cmd.PersistentFlags().StringVar(&o.StateDir, "state-dir", localcluster.DefaultStateDir(), "Folder of the local cluster's state (pids, logs, kubeconfig, pods)")
	cmd.AddCommand(newLocalUpCommand(o), newLocalDownCommand(o), newLocalServeCommand(o))
	return cmd
}

func newLocalUpCommand(o *localcluster.Local) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster (if it is not running) and run the sample job on it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			return o.Up(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.CRDDir, "crds", filepath.Join("config", "crd", "bases"), "Folder of the CRDs to install")
	f.StringVar(&o.PolicyFile, "policy", filepath.Join("config", "policy", "trainer_status_policy.yaml"), "File of the trainer status admission policy to install")
	f.StringVar(&o.Sample, "sample", filepath.Join("config", "samples", "training_v1alpha1_espojob_minimal.yaml"), "Job to apply and follow; empty: none")
	f.Int64Var(&o.GPUs, "gpus", 0, "Number of fake nvidia.com/gpu the node offers")
	f.StringVar(&o.CPU, "cpu", "", "Allocatable CPU of the node (default: the machine's cores)")
	f.StringVar(&o.Memory, "memory", "16Gi", "Allocatable memory of the node")
	addSchedulerFlag(cmd, o)
	f.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "How long to follow the sample job")
	return cmd
}

func newLocalDownCommand(o *localcluster.Local) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and remove its state folder",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			return o.Down()
		},
	}
}

// newLocalServeCommand is the cluster's own process, started in the background by
// "up"; it is hidden.
func newLocalServeCommand(o *localcluster.Local) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "serve",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return o.Serve(ctx)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.GPUs, "gpus", 0, "Number of fake nvidia.com/gpu")
	f.StringVar(&o.CPU, "cpu", "", "Allocatable CPU")
	f.StringVar(&o.Memory, "memory", "16Gi", "Allocatable memory")
	addSchedulerFlag(cmd, o)
	return cmd
}

// addSchedulerFlag is --scheduler, of "up" and of the "serve" it starts.
func addSchedulerFlag(cmd *cobra.Command, o *localcluster.Local) {
	o.Scheduler = localcluster.SchedulerBuiltin
	cmd.Flags().Var(&o.Scheduler, "scheduler", `Scheduler of the pods: "builtin" (a minimal one, no build), or "kube" (a real kube-scheduler `+
		`of the control plane's release with gang scheduling for gang: podGroup; built on first use, about 1.5 minutes)`)
}
