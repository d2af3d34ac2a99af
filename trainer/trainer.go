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

package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/estimator"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/intents"
	"github.com/espo-dev/espo-operator/trainer/permanent"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// workerReadyTimeout bounds how long the trainer waits for its workers to be
// reachable and configured.
const workerReadyTimeout = 10 * time.Minute

// State is the trainer's position in the run; every checkpoint records it, so a
// resumed run continues at exactly the next batch.
type State struct {
	// Epoch is the index of the current epoch in the plan.
	Epoch int `json:"epoch"`
	// Batch is the next batch of that epoch.
	Batch int `json:"batch"`
	// Step is the number of optimizer steps taken.
	Step int64 `json:"step"`
	// BestRecommendationAccuracy is the best validation RecAcc so far, -1 before any.
	BestRecommendationAccuracy float64 `json:"bestRecommendationAccuracy"`
	// LowRewardEvals counts consecutive evaluations whose epoch's mean step reward was
	// below earlyStopping.minReward.
	LowRewardEvals int `json:"lowRewardEvals"`
	// TargetEvals counts consecutive evaluations whose metric reached
	// earlyStopping.target.
	TargetEvals int `json:"targetEvals"`
	// ReferenceFrozen is whether the reference policy was snapshotted (after SFT).
	ReferenceFrozen bool `json:"referenceFrozen"`
	// History holds the validation results so far, without per-channel detail.
	History []EvalResult `json:"history,omitempty"`
	// Workers is the number of workers of the gang that wrote the checkpoint (0 in a
	// checkpoint of a version before it): a resume on another number says so.
	Workers int `json:"workers,omitempty"`
	// Tracking holds, by tracker, the metric points it had not recorded when the
	// checkpoint was written: a resumed run sends them.
	Tracking map[string][]tracking.Point `json:"tracking,omitempty"`
}

// Options are what a Trainer needs besides its Config.
type Options struct {
	// Workers is the gang of policy workers (worker.NewGang); the trainer deals whole
	// episodes among them, and releases them at the end of Run, but does not close
	// the gang.
	Workers *worker.Gang
	// Reporter receives progress; nil discards it.
	Reporter Reporter
	// Metrics receives Prometheus metrics; nil discards them.
	Metrics *Metrics
	// Tracker records the run in the experiment trackers of spec.tracking
	// (NewTracker); nil records nothing. Run ends it, waiting at most
	// TrackerCloseTimeout (0: a minute) for it to send what it still queues.
	Tracker             *tracking.Tracker
	TrackerCloseTimeout time.Duration
	// Clock reads the time and times the reports of a wait for workers; nil is the
	// real clock.
	Clock clock.Clock
	// Log is the progress log.
	Log logr.Logger
	// Drain, closed when the process is asked to stop (SIGTERM: a suspend, a
	// preemption, a gang restart), makes the run stop at the next safe point: after
	// the step in flight, whose state it checkpoints (when spec.checkpoint is set), or
	// at once during an evaluation (the epoch's checkpoint is written; the evaluation
	// runs again on resume); while it waits for its workers to start, at once. Run then
	// reports where it stopped and returns ErrDrained; an error of the step in flight
	// is then no outcome. At every end Run calls Release on the workers, so that
	// workers asked to stop exit. nil never drains.
	Drain <-chan struct{}
	// PodRoot is the folder under which this machine holds the pod's files (the local
	// mode's $ESPO_POD_ROOT), empty in a cluster: the errors of the datasets name
	// their files as the pod sees them, without it.
	PodRoot string
	// Version is the trainer binary's version, recorded in the run's provenance.
	Version string

	// DialEnvironment connects to the server of spec.datasets.environment.endpoint;
	// nil dials it with environment.Dial and no token.
	DialEnvironment experience.Dial

	// Estimator is the advantage estimator of the reinforcement epochs; empty for the
	// one spec.algorithm names (espo or grpo). The others (outcome-only, GiGPO, the
	// shuffled-COUT control) are an experiment's, as the comparison of methods in
	// hack/results runs them: no job sets one.
	Estimator estimator.Name

	// Observer, when set, is shown every step's advantages and told of every
	// optimizer step: an experiment's diagnostics (hack/results -diagnose); no job
	// sets one, and a run without it trains the same.
	Observer Observer

	// embeddingRetryWait waits before a retry of the embedding service
	// (spec.rewards.intent.embedder) and returns early with ctx's error; nil waits on
	// a timer. Tests set it to retry at once.
	embeddingRetryWait func(ctx context.Context, d time.Duration) error
}

// Observer watches a run step by step: an experiment's, as the diagnostics of
// hack/results -diagnose run it; no job sets one. The training loop calls it
// synchronously, between the workers' calls, so it may itself call the workers
// (to evaluate the policy between two steps); it must change neither the batches
// nor the advantages it is shown.
type Observer interface {
	// Advantages is called in every reinforcement step once the candidates'
	// advantages are computed, before the backward pass: step is the number of
	// optimizer steps taken before it, groups the batch's groups, and adv[i][j*G+g]
	// the advantage of candidate g of step j of groups[i] (G = 1 for rollouts lived
	// through an environment).
	Advantages(step int64, groups []*experience.Group, adv [][]float64)
	// Stepped is called after every optimizer step: step is the number of steps
	// taken, kind the epoch's, and epochEnd whether the step ended its epoch (the
	// validation evaluation follows). An error stops the run as a failed step.
	Stepped(ctx context.Context, step int64, kind plan.Kind, epochEnd bool) error
}

// Trainer runs one training job.
type Trainer struct {
	// settings is the run's configuration; cfg its run config.
	settings *Settings
	cfg      *Config
	// src is where the batches and the evaluations' episodes come from; it samples
	// with policy, the gang with its Generate calls timed.
	src    experience.Source
	policy *timedPolicy
	plan   *plan.Plan
	// estimator computes the advantages of the reinforcement epochs (nil for a run of
	// SFT only).
	estimator estimator.Estimator
	opts      Options
	rewarder  *espo.Rewarder // made by start (prepareRewards)
	store     *checkpoint.Store
	state     State
	// intents judges the intents of the rewards and the evaluations.
	intents *intents.Judge
	// status is the report being built; the loop fills it and sends it.
	status trainingv1alpha1.TrainingStatus
	// epochReward accumulates the current epoch's step rewards.
	epochReward meanAcc
	// lastReport is the last report sent (reportStep bounds the rate of reports).
	lastReport lastReport
	// trackEnded is set once the tracker was ended (trackEnd); checkpointTracked is
	// the step whose checkpoint time the tracker got last.
	trackEnded        bool
	checkpointTracked int64
}

// New loads the datasets of the run s configures, and plans it.
func New(s *Settings, opts Options) (*Trainer, error) {
	if opts.Workers == nil {
		return nil, errors.New("trainer: Options.Workers is nil: give the trainer a worker.Gang")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Reporter == nil {
		opts.Reporter = DiscardReporter{}
	}
	cfg := s.Config
	t := &Trainer{settings: s, cfg: cfg, opts: opts, policy: &timedPolicy{gang: opts.Workers, clock: opts.Clock}}
	var err error
	if t.src, err = newSource(s, opts, t.policy); err != nil {
		return nil, err
	}
	t.plan = t.src.Plan()
	if err := t.checkValidationForBest(); err != nil {
		return nil, err
	}
	if t.estimator, err = newEstimator(&cfg.Spec.Algorithm, opts.Estimator, s.Advantage, cfg.Spec.Datasets.Environment != nil); err != nil {
		return nil, err
	}
	if t.intents, err = intents.New(s.Rewards, cfg.Spec.Rewards.Intent.Embedder, opts.Workers, opts.embeddingRetryWait); err != nil {
		return nil, err
	}
	t.state.BestRecommendationAccuracy = -1
	b, err := runBinding(cfg, t.src.Recorded())
	if err != nil {
		return nil, err
	}
	t.status.Provenance = provenance(cfg, b, opts.Version)
	if t.store, err = newStore(cfg, b, opts.Log.WithName("checkpoint")); err != nil {
		return nil, err
	}
	return t, nil
}

// newSource returns the run's source of experience, whose candidates p samples: the
// environment of spec.datasets.environment, or the recorded episodes of
// spec.datasets.sources.
func newSource(set *Settings, opts Options, p experience.Policy) (experience.Source, error) {
	cfg := set.Config
	s := &cfg.Spec
	if env := s.Datasets.Environment; env != nil {
		if err := experience.CheckRewards(s); err != nil {
			return nil, permanent.ConfigInvalid(err)
		}
		dial := opts.DialEnvironment
		if dial == nil {
			dial = func(addr string, timeout time.Duration) (*environment.Remote, error) {
				return environment.Dial(addr, "", timeout)
			}
		}
		l, err := experience.NewLived(env, &s.Algorithm, p, dial)
		if err != nil {
			return nil, permanent.ConfigInvalid(err)
		}
		return l, nil
	}
	data, err := experience.LoadSplits(cfg.DataRoot, s.Datasets.Sources, set.Split, uint64(s.Datasets.Split.Seed))
	if err != nil {
		return nil, permanent.InPodPaths(err, opts.PodRoot)
	}
	r, err := experience.NewRecorded(data, &s.Algorithm, p)
	if err != nil {
		return nil, err
	}
	return r, intents.CheckSlotsHavePreferences(set.Rewards, data.Train, data.Validation, data.Test)
}

// newEstimator returns the estimator of the reinforcement epochs: name, or when it
// is empty the one alg names; nil for a run of SFT only. rollouts says whether the
// batches are rollouts lived through an environment.
func newEstimator(alg *trainingv1alpha1.AlgorithmSpec, name estimator.Name, cfg espo.AdvantageConfig, rollouts bool) (estimator.Estimator, error) {
	if name == "" {
		if alg.Name == trainingv1alpha1.AlgorithmSFT {
			return nil, nil
		}
		name = estimator.Name(alg.Name)
	}
	return estimator.New(name, cfg, rollouts)
}

// Splits returns the recorded episodes the trainer uses (none in an environment).
func (t *Trainer) Splits() *experience.Splits { return t.src.Recorded() }

// Run trains to the end of the plan (or an early stop), evaluates on the test split and
// returns the final report. It resumes from the newest valid checkpoint when there is
// one; when that checkpoint belongs to another job or spec, Run refuses it: it reports
// the CheckpointMismatch outcome and returns the error, training nothing. A run that
// fails otherwise reports the Error outcome (unless ctx ended) and returns the error;
// a drained one returns ErrDrained. At every end it releases the workers.
func (t *Trainer) Run(ctx context.Context) (*Report, error) {
	defer t.releaseWorkers()
	defer t.src.Close()
	defer t.trackEnd(t.drained()) // a run stopped without an outcome stays open in the trackers
	return t.end(ctx, t.run(ctx))
}

// run starts the workers and trains, and says why it stopped.
func (t *Trainer) run(ctx context.Context) stop {
	startCtx, cancel := t.untilDrained(ctx) // waiting for workers is no step in flight
	err := t.start(startCtx)
	cancel()
	if err != nil {
		return t.failed(err)
	}
	return t.train(ctx)
}

// releaseWorkers tells every worker the trainer is done with it (Release), so that
// workers asked to stop exit now; a worker that does not know the call, or is gone,
// is no error.
func (t *Trainer) releaseWorkers() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = t.opts.Workers.Release(ctx)
}

// releaseTimeout bounds the Release calls at the end of a run.
const releaseTimeout = 5 * time.Second

// draining reports whether Options.Drain is closed.
func (t *Trainer) draining() bool {
	select {
	case <-t.opts.Drain:
		return true
	default:
		return false
	}
}

// untilDrained returns a context that is also cancelled when Options.Drain closes.
func (t *Trainer) untilDrained(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if t.opts.Drain != nil {
		go func() {
			select {
			case <-t.opts.Drain:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// start configures the workers, from the newest checkpoint when there is one, then
// makes the rewarder (with an embedding service, once the workers are ready: a
// service started with the job has had their start-up time to come up).
func (t *Trainer) start(ctx context.Context) error {
	t.status.TotalSteps = t.plan.TotalSteps()
	t.opts.Metrics.observeTotal(t.status.TotalSteps)
	if err := t.checkExportWritable(); err != nil {
		return err
	}
	loadPath, err := t.resumePoint()
	if err != nil {
		return err
	}
	setup := worker.Setup{Seed: t.settings.Seed, Options: t.settings.WorkerOptions, LoadPath: loadPath}
	// A wait for workers is reported every status interval, at least every second (a
	// config loaded without an API server may set the interval to 0).
	d, err := configureWorkers(ctx, t.opts.Workers, setup, t.opts.Clock, max(t.settings.StatusInterval, time.Second),
		func(wait string) { t.reportWorkerWait(ctx, wait) })
	if err != nil {
		return permanent.OfWorkers(err, t.opts.PodRoot)
	}
	t.opts.Log.Info("workers ready", "workers", t.opts.Workers.Size(), "model", d.Model,
		"device", d.Device, "parameters", d.Parameters)
	t.status.Provenance.ModelConfig, t.status.Provenance.Encoder = d.ModelConfigSHA256, d.EncoderSHA256
	t.trackStart()
	return t.prepareRewards(ctx)
}

// prepareRewards readies the intent judge on the recorded episodes (an embedding
// service embeds their requirements now, before any step) and makes the rewarder,
// with the slot vocabulary of the source.
func (t *Trainer) prepareRewards(ctx context.Context) error {
	data := t.src.Recorded()
	if err := t.intents.Prepare(ctx, t.opts.Log, data.Train, data.Validation, data.Test); err != nil {
		return err
	}
	rewarder, err := espo.NewRewarder(t.settings.Rewards, t.intents.Embedder())
	if err != nil {
		return fmt.Errorf("spec.rewards: %w", err)
	}
	rewarder.SetSlotVocab(t.src.Vocab())
	t.rewarder = rewarder
	return nil
}

// train runs the epochs of the plan from the current state and says why it stopped.
func (t *Trainer) train(ctx context.Context) stop {
	for ; t.state.Epoch < len(t.plan.Epochs); t.state.Epoch, t.state.Batch = t.state.Epoch+1, 0 {
		ep := &t.plan.Epochs[t.state.Epoch]
		if err := t.freezeReferenceBefore(ctx, ep.Kind); err != nil {
			return t.failed(err)
		}
		if s, stopped := t.trainEpoch(ctx, ep); stopped {
			return s
		}
		if err := t.checkpoint(ctx); err != nil {
			return t.failed(err)
		}
		s, stopped := t.evaluateEpoch(ctx, ep)
		if t.draining() { // the epoch's checkpoint is written; the evaluation runs again on resume
			return t.drained()
		}
		if stopped {
			return s
		}
	}
	return stop{reason: stopCompleted, message: "every epoch ran"}
}

// freezeReferenceBefore snapshots the reference policy once, before the first
// reinforcement epoch: the reference of the KL penalty is the SFT cold-start policy.
func (t *Trainer) freezeReferenceBefore(ctx context.Context, k plan.Kind) error {
	if k == plan.SFT || t.state.ReferenceFrozen {
		return nil
	}
	err := t.opts.Workers.SnapshotReference(ctx)
	t.state.ReferenceFrozen = err == nil
	return err
}

// trainEpoch runs the remaining batches of one epoch; it stops the loop on a failure,
// a loss that is not finite, or a drain (after the step in flight, checkpointed).
func (t *Trainer) trainEpoch(ctx context.Context, ep *plan.Epoch) (stop, bool) {
	t.status.Stage, t.status.Epoch = ep.Kind.Stage(), int32(ep.Number)
	if t.state.Batch == 0 {
		t.epochReward = meanAcc{}
	}
	for ; t.state.Batch < ep.Batches; t.state.Batch++ {
		start := t.opts.Clock.Now()
		stats, err := t.trainBatch(ctx, ep.Kind)
		if err != nil {
			return t.failed(err), true
		}
		t.state.Step++
		// The trackers get the step before its checkpoint, which keeps what they have
		// not recorded yet.
		t.trackStep(ep.Kind, stats, t.opts.Clock.Since(start))
		if !finite(stats.gradNorm) || !finite(stats.objective) {
			t.record(ctx, ep, stats, t.opts.Clock.Since(start))
			return stop{reason: stopNonFiniteLoss, message: fmt.Sprintf("step %d: the loss or gradient is not finite (objective %v, gradient norm %v)",
				t.state.Step, stats.objective, stats.gradNorm)}, true
		}
		checkpointed := t.checkpointDue() || t.draining()
		if checkpointed {
			if err := timed(t.opts.Clock, stats.times, trainingv1alpha1.PhaseCheckpoint, func() error { return t.checkpointAfterBatch(ctx) }); err != nil {
				return t.failed(err), true
			}
		}
		t.record(ctx, ep, stats, t.opts.Clock.Since(start))
		if err := t.observeStep(ctx, ep); err != nil {
			return t.failed(err), true
		}
		if t.draining() && !checkpointed { // asked to stop while the step was reported
			if err := t.checkpointAfterBatch(ctx); err != nil {
				return t.failed(err), true
			}
		}
		if t.draining() {
			return t.drained(), true
		}
	}
	return stop{}, false
}

// checkpointAfterBatch checkpoints the state after the current batch: a resume
// starts at the next one.
func (t *Trainer) checkpointAfterBatch(ctx context.Context) error {
	t.state.Batch++
	defer func() { t.state.Batch-- }()
	return t.checkpoint(ctx)
}

func (t *Trainer) checkpointDue() bool {
	if every := t.settings.CheckpointEvery; t.store != nil && every > 0 {
		return t.state.Step%every == 0
	}
	return false
}

// checkpoint saves the gang's state (worker 0's) and the trainer state.
func (t *Trainer) checkpoint(ctx context.Context) error {
	if t.store == nil {
		return nil
	}
	t.state.Workers = t.opts.Workers.Size()
	defer func() { t.state.Tracking = nil }()
	// The state is written after the workers' (the store marshals it then): it keeps
	// what the trackers have not recorded, this checkpoint's time included.
	dir, err := t.store.Save(t.state.Step, &t.state, func(dir string) error {
		start := t.opts.Clock.Now()
		if err := t.opts.Workers.Save(ctx, filepath.Join(dir, checkpoint.WorkerStateFile)); err != nil {
			return err
		}
		t.trackCheckpoint(t.opts.Clock.Since(start))
		if tr := t.opts.Tracker; tr != nil {
			t.state.Tracking = tr.Pending()
		}
		return nil
	})
	if err != nil {
		return err
	}
	now := t.now()
	t.status.LastCheckpoint = &trainingv1alpha1.CheckpointStatus{Step: t.state.Step, Path: dir, Time: &now}
	t.opts.Log.V(1).Info("checkpoint written", "dir", dir, "step", t.state.Step)
	return nil
}

// record updates the running statistics, metrics and report after a training step.
func (t *Trainer) record(ctx context.Context, ep *plan.Epoch, s batchStats, took time.Duration) {
	t.epochReward.add(s.rewardSum, s.rewardCount)
	t.status.Step = t.state.Step
	if s.rewardCount > 0 {
		t.status.MeanStepReward = trainingv1alpha1.NewMetric(s.rewardSum / float64(s.rewardCount))
		t.status.MeanCOUTReward = trainingv1alpha1.NewMetric(s.cout)
		t.status.KL = trainingv1alpha1.NewMetric(s.kl)
	}
	kv := []any{"stage", ep.Kind, "epoch", ep.Number, "step", t.state.Step, "totalSteps", t.status.TotalSteps,
		"meanStepReward", s.meanReward(), "cout", s.cout, "kl", s.kl, "clipFraction", s.clipFraction}
	if smp := s.sampler; smp != nil {
		t.status.SamplerMismatch = trainingv1alpha1.NewMetric(smp.mismatch)
		kv = append(kv, "samplerMismatch", smp.mismatch, "samplerWeight", smp.weight, "samplerTruncated", smp.truncated)
	}
	t.status.LastStep = stepTimes(t.state.Step, took, s.times, s.tokens)
	t.opts.Metrics.observeStep(ep.Kind, t.state.Step, s, took)
	t.opts.Log.Info("step", append(kv, "gradNorm", s.gradNorm, "stepSeconds", took.Seconds(), "tokens", s.tokens,
		"dominantPhase", t.status.LastStep.Dominant,
		"eta", (time.Duration(t.status.TotalSteps-t.state.Step)*took).Round(time.Second).String())...)
	t.reportStep(ctx)
}

// checkValidationForBest refuses spec.export.bestBy when the loaded datasets give
// the validation set no episode.
func (t *Trainer) checkValidationForBest() error {
	if ex := t.settings.Export; ex == nil || ex.BestBy == "" || t.cfg.Spec.Datasets.Environment != nil {
		return nil
	}
	if len(t.src.Recorded().Validation) > 0 {
		return nil
	}
	return permanent.ConfigInvalid(errors.New("spec.export.bestBy: it compares validation evaluations, and the split leaves the validation set no episode: " +
		"give spec.datasets.split.validation a larger share, add a source with split: validation, or remove bestBy"))
}

// checkExportWritable makes sure, before any training, that the export's folder can
// be written: it creates the folder's parent and a file in it. A target that cannot
// be written fails the run at once with ConfigInvalid, naming spec.export.
func (t *Trainer) checkExportWritable() error {
	ex := t.settings.Export
	if ex == nil {
		return nil
	}
	parent := filepath.Dir(filepath.Clean(ex.Dir))
	err := os.MkdirAll(parent, 0o755)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(parent, ".espo-export-check-"); err == nil {
			err = errors.Join(f.Close(), os.Remove(f.Name()))
		}
	}
	if err != nil {
		return permanent.InPodPaths(permanent.ConfigInvalid(fmt.Errorf("%s: the export cannot be written: %w; "+
			"let the trainer's user (uid and gid 65532) write the claim, or name another claim or path", ex.Where, err)), t.opts.PodRoot)
	}
	return nil
}

// bestEvaluation is the validation evaluation of the history that scored highest on
// spec.export.bestBy, the earliest of equal scores; false before any.
func (t *Trainer) bestEvaluation() (EvalResult, bool) {
	ex := t.settings.Export
	if ex == nil || ex.BestBy == "" {
		return EvalResult{}, false
	}
	var best EvalResult
	found := false
	for i := range t.state.History {
		r := &t.state.History[i]
		if !found || r.named()[ex.BestBy] > best.named()[ex.BestBy] {
			best, found = *r, true
		}
	}
	return best, found
}

// protectBest keeps the best checkpoint by spec.export.bestBy from pruning.
func (t *Trainer) protectBest() {
	if best, ok := t.bestEvaluation(); ok && t.store != nil {
		t.store.Protect(best.Step)
	}
}

// observeStep tells Options.Observer, when set, that a step of ep was taken.
func (t *Trainer) observeStep(ctx context.Context, ep *plan.Epoch) error {
	if t.opts.Observer == nil {
		return nil
	}
	return t.opts.Observer.Stepped(ctx, t.state.Step, ep.Kind, t.state.Batch == ep.Batches-1)
}

// trackStart hands the tracker the run's parameters (the immutable sections of the
// spec and the provenance digests), its tags (versions and images) and the points a
// resumed checkpoint kept unsent.
func (t *Trainer) trackStart() {
	tr := t.opts.Tracker
	if tr == nil {
		return
	}
	tr.Restore(t.state.Tracking)
	t.state.Tracking = nil
	tr.Params(runParams(&t.cfg.Spec, t.status.Provenance))
	tr.Tags(versionTags(t.status.Provenance))
}

// trackStep hands the tracker the metrics of the step just taken (took is its wall
// time, before any checkpoint).
func (t *Trainer) trackStep(k plan.Kind, s batchStats, took time.Duration) {
	if tr := t.opts.Tracker; tr != nil {
		tr.Log(stepPoints(k, t.state.Step, s, t.stepOptions(t.state.Step-1).LearningRate, took, t.opts.Clock.Now())...)
	}
}

// trackCheckpoint hands the tracker the time the workers took to save a checkpoint
// (its bulk) as time/checkpoint at the current step, once per step (the end of an
// epoch may checkpoint a step again). It is called before the checkpoint's state is
// written, which then keeps it with the step's other metrics (trackStep) when the
// trackers have not recorded them.
func (t *Trainer) trackCheckpoint(took time.Duration) {
	if tr := t.opts.Tracker; tr != nil && t.state.Step > t.checkpointTracked {
		t.checkpointTracked = t.state.Step
		tr.Log(tracking.Point{Key: "time/" + string(trainingv1alpha1.PhaseCheckpoint), Value: took.Seconds(),
			Step: t.state.Step, Time: t.opts.Clock.Now()})
	}
}

// trackEnd sends what the trackers still queue (for at most
// Options.TrackerCloseTimeout) and ends their runs with s's outcome (trackerOutcome).
// It acts once; later calls do nothing.
func (t *Trainer) trackEnd(s stop) {
	if t.opts.Tracker == nil || t.trackEnded {
		return
	}
	t.trackEnded = true
	endTracking(t.opts.Tracker, s.trackerOutcome(), t.opts.TrackerCloseTimeout, t.opts.Log)
}
