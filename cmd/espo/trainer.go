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
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/localcluster/podenv"
	"github.com/espo-dev/espo-operator/internal/localcluster/podnet"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/kubereporter"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// trainerOptions are the flags of "espo trainer".
type trainerOptions struct {
	config      string
	kubeconfig  string
	metricsAddr string
	report      string
	logFormat   string
	// workerTokenFile holds the job's worker token, sent with every call to a
	// remote worker; empty sends none.
	workerTokenFile string
}

func newTrainerCommand() *cobra.Command {
	o := trainerOptions{}
	cmd := &cobra.Command{
		Use:   "trainer",
		Short: "Run an ESPO training job: SFT cold start, then ESPO, GRPO or more SFT, with evaluation and checkpoints",
		Long: `Runs the training described by a run config (the ConfigMap the controller writes, or
any YAML file with the same fields). It resumes from the newest valid checkpoint, writes
report.json to the config's outputDir, and exits non-zero when training failed, with
its error in the container's termination message file ($ESPO_TERMINATION_MESSAGE_PATH,
else /dev/termination-log, when it exists). On SIGTERM or SIGINT it stops at the next
safe point, after the step in flight, whose state it checkpoints; a second signal
stops it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(o.logFormat)
			if err != nil {
				return reportTermination(err, cmd.ErrOrStderr())
			}
			ctrl.SetLogger(log)
			ctx, drain := drainOnSignal(cmd.Context())
			return reportTermination(runTrainer(ctx, drain, o, log.WithName("trainer")), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", os.Getenv("ESPO_CONFIG"), "Path of the run config (default $ESPO_CONFIG)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig for reporting status; default: in-cluster config, then $KUBECONFIG")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":9090", "Address of the Prometheus /metrics endpoint; \"0\" disables it")
	f.StringVar(&o.report, "report", "auto", "Where progress goes besides the log: kubernetes (status.training of the job), none, or auto (kubernetes when the config names a job)")
	f.StringVar(&o.logFormat, "log-format", "json", "Log format: json or text")
	f.StringVar(&o.workerTokenFile, "worker-token-file", os.Getenv(worker.EnvTokenFile),
		"File with the job's worker token, sent with every call to a remote worker (default $"+worker.EnvTokenFile+"); empty: none, for workers started with --insecure-no-auth")
	return cmd
}

// drainOnSignal returns a context cancelled on the second SIGTERM or SIGINT and a
// channel closed on the first (trainer.Options.Drain).
func drainOnSignal(parent context.Context) (context.Context, <-chan struct{}) {
	ctx, cancel := context.WithCancel(parent)
	drain := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		defer cancel()
		select {
		case <-sig:
		case <-ctx.Done():
			return
		}
		close(drain)
		select {
		case <-sig:
		case <-ctx.Done():
		}
	}()
	return ctx, drain
}

// runTrainer loads the config, connects the workers and the reporter, and runs.
func runTrainer(ctx context.Context, drain <-chan struct{}, o trainerOptions, log logr.Logger) error {
	if o.config == "" {
		return errors.New("--config (or $ESPO_CONFIG) is required")
	}
	settings, err := trainer.LoadConfig(o.config)
	if err != nil {
		return err
	}
	cfg := settings.Config
	if cfg.Job.Name != "" { // every line names the job, as the controller's lines do
		log = log.WithValues("ESPOJob", map[string]string{"namespace": cfg.Job.Namespace, "name": cfg.Job.Name})
	}
	reporter, err := newReporter(o, cfg)
	if err != nil {
		return err
	}
	token, err := workerToken(o.workerTokenFile)
	if err != nil {
		return err
	}
	workers, err := connectWorkers(cfg, podnet.FromEnv(), token)
	if err != nil {
		return err
	}
	defer workers.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stopMetrics, err := serveMetrics(o.metricsAddr, podnet.FromEnv(), reg, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	tracker := trainer.NewTracker(cfg, os.Getenv, clock.RealClock{}, log.WithName("tracking"))
	t, err := trainer.New(settings, trainer.Options{Workers: workers, Reporter: reporter, Metrics: trainer.NewMetrics(reg), Log: log, Drain: drain,
		PodRoot: os.Getenv(podenv.PodRoot), Version: fullVersion(), Tracker: tracker,
		DialEnvironment: func(addr string, timeout time.Duration) (*environment.Remote, error) {
			return environment.Dial(addr, token, timeout)
		}})
	if err != nil {
		return trainer.ReportSetupError(ctx, reporter, err)
	}
	rep, err := t.Run(ctx)
	if err != nil {
		return err
	}
	if !succeeded(rep.Outcome) {
		return fmt.Errorf("training ended with %s: %s", rep.Outcome, rep.Message)
	}
	return nil
}

// succeeded reports whether a training outcome is a success.
func succeeded(o trainingv1alpha1.TrainingOutcome) bool {
	return o == trainingv1alpha1.OutcomeCompleted || o == trainingv1alpha1.OutcomeTargetReached
}

// newReporter returns the Kubernetes reporter when asked for (or, with auto, when the
// config names a job), else nil.
func newReporter(o trainerOptions, cfg *trainer.Config) (trainer.Reporter, error) {
	switch o.report {
	case "none":
		return nil, nil
	case "auto":
		if cfg.Job.Name == "" {
			return nil, nil
		}
	case "kubernetes":
		if cfg.Job.Name == "" || cfg.Job.Namespace == "" {
			return nil, errors.New("--report kubernetes: the run config names no job (job.namespace, job.name)")
		}
	default:
		return nil, fmt.Errorf("--report %q: must be kubernetes, none or auto", o.report)
	}
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reporting to job %s/%s: %w", cfg.Job.Namespace, cfg.Job.Name, err)
	}
	c, err := client.New(rc, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return nil, err
	}
	return &kubereporter.Reporter{Client: c, Job: cfg.Job}, nil
}

// workerToken reads the worker token file at path; no path is no token.
func workerToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	token, err := worker.ReadTokenFile(path)
	if err != nil {
		return "", fmt.Errorf("--worker-token-file: %w", err)
	}
	return token, nil
}

// connectWorkers returns the gang of spec.trainer.workersPerReplica in-process CPU
// workers (for the cpu worker kind), whose Save and Load may touch the trainer's own
// folders (localFolders), and the remote workers of the config, in that order,
// dialed through pods (nil: as gRPC resolves and dials; the local mode's pod network
// otherwise) and sent token with every call, each call bounded by workerCallTimeout
// when spec.runPolicy.progressDeadlineSeconds is set. Closing the gang closes its
// connections.
func connectWorkers(cfg *trainer.Config, pods *podnet.Network, token string) (*worker.Gang, error) {
	var members []worker.Member
	var closers closeAll
	if cfg.Spec.Model.Worker == trainingv1alpha1.WorkerCPU {
		for range cfg.Spec.Trainer.WorkersPerReplica {
			members = append(members, worker.NewLocal(cpu.New(0), localFolders(cfg)...))
		}
	}
	addrs := cfg.Workers
	if cfg.Spec.Model.Worker == trainingv1alpha1.WorkerExternal && cfg.Spec.Model.Endpoint != "" {
		addrs = append([]string{string(cfg.Spec.Model.Endpoint)}, addrs...)
	}
	for _, addr := range addrs {
		r, err := worker.Dial(addr, dialer(pods), token)
		if err != nil {
			closers.Close()
			return nil, fmt.Errorf("worker %s: %w", addr, err)
		}
		if d := cfg.Spec.RunPolicy.ProgressDeadlineSeconds; d != nil {
			r.SetCallTimeout(workerCallTimeout(*d))
		}
		members, closers = append(members, r), append(closers, r)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("no workers: spec.model.worker is %q and the run config lists no worker addresses", cfg.Spec.Model.Worker)
	}
	return worker.NewGang(members...), nil
}

// workerCallTimeout is the deadline of each call to a remote worker under a
// progress deadline of seconds: half of it, so that a hung call fails the attempt in
// the trainer, which names the worker and the call, before the controller's watchdog
// (which knows only that no progress came) takes the gang down. The trainer reports
// at least every spec.trainer.statusInterval, which the API holds under half the
// deadline, so a call starts within that of the last report.
func workerCallTimeout(seconds int64) time.Duration { return time.Duration(seconds) * time.Second / 2 }

// localFolders are the folders of the run config the trainer's in-process workers
// may save to and load from: the checkpoint, initial-checkpoint and output folders,
// those it names.
func localFolders(cfg *trainer.Config) []string {
	var dirs []string
	for _, d := range []string{cfg.CheckpointDir, cfg.InitialCheckpoint, cfg.OutputDir} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// closeAll closes every closer it holds.
type closeAll []io.Closer

func (cs closeAll) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// serveMetrics serves reg at addr/metrics until the returned stop is called. An addr
// of "0" serves nothing; pods listens (nil: on the machine's network; the local mode's
// pod network binds the pod's address, where every pod shares the machine's ports).
func serveMetrics(addr string, pods *podnet.Network, reg *prometheus.Registry, log logr.Logger) (stop func(), err error) {
	if addr == "0" || addr == "" {
		return func() {}, nil
	}
	l, err := pods.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "serving metrics")
		}
	}()
	log.Info("serving metrics", "address", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// dialer is the worker dial function of the pod network n: nil, gRPC's own, outside
// the local mode.
func dialer(n *podnet.Network) worker.DialFunc {
	if n == nil {
		return nil
	}
	return func(ctx context.Context, addr string) (net.Conn, error) { return n.DialContext(ctx, "tcp", addr) }
}
