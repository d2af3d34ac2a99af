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
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/espo-dev/espo-operator/controllers"
	espokueue "github.com/espo-dev/espo-operator/controllers/kueue"
	"github.com/espo-dev/espo-operator/internal/metricsauth"
)

// managerOptions are the flags of "espo manager".
type managerOptions struct {
	kubeconfig              string
	metricsAddr             string
	secureMetrics           bool
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	gracefulShutdown        time.Duration
	logFormat               string
	trainerImage            string
	cudaWorkerImage         string
	qps                     float32
	burst                   int
	concurrentReconciles    int
	podEventBatchPeriod     time.Duration
	networkPolicy           bool
	metricsNamespaces       []string
	kueue                   bool
}

func newManagerCommand() *cobra.Command {
	o := managerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the ESPOJob controller manager",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(o.logFormat)
			if err != nil {
				return err
			}
			ctrl.SetLogger(logger)
			setManagerGCPercent(os.Getenv)
			cfg, err := restConfig(o.kubeconfig)
			if err != nil {
				return err
			}
			return runManager(ctrl.SetupSignalHandler(), cfg, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default: in-cluster config, then $KUBECONFIG, then ~/.kube/config")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; \"0\" disables it")
	f.BoolVar(&o.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized by the API server")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address of Go's profiling endpoints (/debug/pprof/); \"0\", the default, disables them")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one manager of several reconciles")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election lease; default: the manager's own namespace")
	f.DurationVar(&o.gracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "How long running reconciles may take to finish on shutdown")
	f.StringVar(&o.logFormat, "log-format", "json", "Log format: json or text")
	f.StringVar(&o.trainerImage, "trainer-image", envOr("ESPO_TRAINER_IMAGE", "espo-operator:dev"),
		"Image of the trainer and CPU worker containers of jobs that name none; default $ESPO_TRAINER_IMAGE, the operator's own image")
	f.StringVar(&o.cudaWorkerImage, "cuda-worker-image", envOr("ESPO_CUDA_WORKER_IMAGE", "espo-worker-cuda:dev"),
		"Image of the cuda worker containers of jobs that name none; default $ESPO_CUDA_WORKER_IMAGE")
	f.Float32Var(&o.qps, "kube-api-qps", 200, "Requests per second the manager may send to the API server")
	f.IntVar(&o.burst, "kube-api-burst", 400, "Burst of requests the manager may send to the API server")
	f.IntVar(&o.concurrentReconciles, "max-concurrent-reconciles", 16, "How many ESPOJobs are reconciled at once")
	f.DurationVar(&o.podEventBatchPeriod, "pod-event-batch-period", controllers.DefaultPodEventBatchPeriod,
		"How long a pod event waits before its job is reconciled, so that a gang's events give one status write; 0 reconciles on every pod event")
	f.BoolVar(&o.networkPolicy, "network-policy", true,
		"Give each job a NetworkPolicy: its trainer pods admit only the job's own pods (worker and driver ports) and the --trainer-metrics-namespaces (metrics port)")
	f.StringSliceVar(&o.metricsNamespaces, "trainer-metrics-namespaces", nil,
		"Namespaces whose pods may scrape the trainers' metrics port through the jobs' NetworkPolicies (comma-separated); none: no one")
	f.BoolVar(&o.kueue, "kueue", false,
		"Queue jobs labelled kueue.x-k8s.io/queue-name with Kueue: one Workload per job, run only while admitted (needs Kueue's CRDs, and "+espokueue.ExternalFramework+" in Kueue's integrations.externalFrameworks)")
	return cmd
}

// envOr returns the environment variable's value, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// newLogger returns a zap-backed logr.Logger writing the given format.
func newLogger(format string) (logr.Logger, error) {
	var enc zap.Opts
	switch format {
	case "json":
		enc = zap.JSONEncoder(func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.RFC3339NanoTimeEncoder })
	case "text":
		enc = zap.ConsoleEncoder(func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.RFC3339NanoTimeEncoder })
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: must be json or text", format)
	}
	return zap.New(enc), nil
}

// restConfig loads the API server configuration from a kubeconfig path or, when the
// path is empty, from the usual places (in-cluster, $KUBECONFIG, ~/.kube/config).
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// managerGCPercent is the manager's garbage collection target when $GOGC does not
// set one: the heap may grow to 1.3 times what is live (Go's default, 100, lets it
// double). Measured with BenchmarkScale (500 jobs of 2 pods): 50 took the peak
// anonymous memory from 80 to 58 MiB for 13% more of the manager's CPU time, and 30
// from 54-55 to 47-48 MiB (the peak RSS from 103-104 to 97-98 MiB) for 10-35% more
// again (7.7-9.5 s instead of 6.7-7.1 s during the 500 jobs). The manager's work is
// waiting on the API server, not computing, and a memory limit is what an operator's
// pod runs into.
const managerGCPercent = 30

// setManagerGCPercent sets the garbage collection target to managerGCPercent unless
// the GOGC variable of getenv sets one (the runtime has then applied it), and reports
// whether it did.
func setManagerGCPercent(getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(managerGCPercent)
	return true
}

// runManager starts the controller manager and blocks until ctx is done.
func runManager(ctx context.Context, cfg *rest.Config, o managerOptions) error {
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics}
	if o.secureMetrics {
		metricsOpts.FilterProvider = metricsauth.WithAuthenticationAndAuthorization
	}
	cfg = rest.CopyConfig(cfg)
	if o.qps > 0 {
		cfg.QPS, cfg.Burst = o.qps, max(o.burst, int(o.qps))
	}
	scheme := controllers.NewScheme()
	if o.kueue {
		if err := espokueue.AddToScheme(scheme); err != nil {
			return err
		}
	}
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(),
		Client:                  controllers.ClientOptions(),
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		GracefulShutdownTimeout: &o.gracefulShutdown,
	}
	if o.leaderElect {
		controllers.ElectLeader(&mgrOpts, o.leaderElectionNamespace) // the command ends when the manager stops
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := controllers.CheckTrainerStatusPolicy(ctx, mgr.GetAPIReader()); err != nil {
		return err
	}
	// A client without the manager's cache: asking for permissions is a write the
	// cache cannot follow.
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	if err := controllers.CheckWatchPermissions(ctx, direct, controllers.WatchedKinds()); err != nil {
		return err
	}
	podOptions := controllers.PodOptions{TrainerImage: o.trainerImage, CUDAWorkerImage: o.cudaWorkerImage}
	ropts := controllers.Options{
		PodOptions:              podOptions,
		OperatorVersion:         fullVersion(),
		MaxConcurrentReconciles: o.concurrentReconciles,
		PodEventBatchPeriod:     o.podEventBatchPeriod,
		NetworkPolicy:           controllers.NetworkPolicyOptions{Disabled: !o.networkPolicy, MetricsNamespaces: o.metricsNamespaces},
	}
	if o.kueue {
		ropts.Admission = espokueue.Admission
	}
	reconciler := controllers.NewESPOJobReconciler(mgr, ropts)
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ESPOJob controller: %w", err)
	}
	if o.kueue {
		if err := espokueue.SetupWithManager(ctx, mgr, podOptions); err != nil {
			return fmt.Errorf("setting up the Kueue integration (--kueue): %w", err)
		}
		if err := controllers.CheckWatchPermissions(ctx, direct, espokueue.WatchedKinds()); err != nil {
			return fmt.Errorf("the Kueue integration (--kueue): %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("trainer-status-policy", func(req *http.Request) error {
		return controllers.CheckTrainerStatusPolicy(req.Context(), mgr.GetAPIReader())
	}); err != nil {
		return fmt.Errorf("adding the trainer status policy's readiness check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting manager", "version", version, "commit", commit)
	return mgr.Start(ctx)
}
