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
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/permanent"
)

// newStore returns the run's checkpoint store, bound to the run (b, runBinding's);
// nil when the config has no checkpoint folder.
func newStore(cfg *Config, b checkpoint.Binding, log logr.Logger) (*checkpoint.Store, error) {
	if cfg.CheckpointDir == "" {
		return nil, nil
	}
	keep := 0
	if cfg.Spec.Checkpoint != nil {
		keep = int(cfg.Spec.Checkpoint.Keep)
	}
	return checkpoint.NewStore(cfg.CheckpointDir, keep, b, log)
}

// provenance is what reproduces the run (status.training.provenance): the operator's
// part from the run config, the digests of the run's binding b, the seed and the
// trainer's version.
func provenance(cfg *Config, b checkpoint.Binding, version string) *trainingv1alpha1.RunProvenance {
	p := cfg.Provenance
	p.Datasets, p.Model, p.Algorithm, p.Rewards = b.Parts["datasets"], b.Parts["model"], b.Parts["algorithm"], b.Parts["rewards"]
	p.Seed, p.TrainerVersion = cfg.Spec.Algorithm.Seed, version
	return &p
}

// runBinding is what the run's checkpoints belong to: its job (by UID; a job deleted
// and recreated under the same name is another run) and a digest of each part of
// the spec that gives a checkpoint's state its meaning. The parts are the four
// sections the API makes immutable on a job, because they change what training
// means: datasets (the section and every episode loaded from it, split by split, so
// that files changed under the same path differ too), model, algorithm (the plan:
// epochs, batching, seed, and the update rule) and rewards. The sections a job may
// change while suspended stay out: trainer (replicas, resources, scheduling),
// runPolicy, checkpoint (path, cadence, keep) and earlyStopping (when to stop, not
// what a step means).
func runBinding(cfg *Config, data *experience.Splits) (checkpoint.Binding, error) {
	b := checkpoint.Binding{UID: string(cfg.Job.UID), Parts: map[string]string{}}
	if cfg.Job.Name != "" {
		b.Run = cfg.Job.Namespace + "/" + cfg.Job.Name
	}
	datasets := checkpoint.NewDigest().Add(cfg.Spec.Datasets)
	for _, split := range [][]dataset.Episode{data.Train, data.Validation, data.Test} {
		datasets.Add(len(split))
		for i := range split {
			datasets.Add(&split[i])
		}
	}
	s := &cfg.Spec
	for name, d := range map[string]*checkpoint.Digest{
		"datasets":  datasets,
		"model":     checkpoint.NewDigest().Add(modelAsRun(s.Model)),
		"algorithm": checkpoint.NewDigest().Add(algorithmAsRun(s.Algorithm)),
		"rewards":   checkpoint.NewDigest().Add(s.Rewards),
	} {
		sum, err := d.Sum()
		if err != nil {
			return b, err
		}
		b.Parts[name] = sum
	}
	return b, nil
}

// modelAsRun is m as the workers run it: a cpu model without its cpu section runs
// the CPU policy's defaults, so it digests as the model with them written out.
func modelAsRun(m trainingv1alpha1.ModelSpec) trainingv1alpha1.ModelSpec {
	if m.Worker == trainingv1alpha1.WorkerCPU && m.CPU == nil {
		m.CPU = &trainingv1alpha1.CPUPolicySpec{}
		m.Default()
	}
	return m
}

// algorithmAsRun is a as it binds checkpoints: an optimizer at its defaults (which
// the API server writes into every job, those created before the section existed
// too) digests as none, so that the algorithm's digest, and with it the checkpoints
// of a job from before spec.algorithm.optimizer, stays what it was.
func algorithmAsRun(a trainingv1alpha1.AlgorithmSpec) trainingv1alpha1.AlgorithmSpec {
	if o := a.Optimizer; o != nil {
		var d trainingv1alpha1.OptimizerSpec
		d.Default()
		if *o == d {
			a.Optimizer = nil
		}
	}
	return a
}

// resumePoint returns the worker state to start from: the newest valid checkpoint of
// this run (restoring the trainer's state with it), else the initial checkpoint of the
// config (a checkpoint folder of an earlier run; training starts at its beginning),
// else "" for a fresh, seeded policy. A checkpoint folder whose newest checkpoint
// belongs to another run, or whose position is not one of this run's plan, is
// refused with a *checkpointRefused.
func (t *Trainer) resumePoint() (string, error) {
	if t.store != nil {
		c, err := t.store.Latest()
		if mismatch := (*checkpoint.MismatchError)(nil); errors.As(err, &mismatch) {
			return "", t.refuse(err)
		}
		if err != nil {
			return "", err
		}
		if c != nil {
			return t.resumeFrom(c)
		}
	}
	if t.cfg.InitialCheckpoint == "" {
		return "", nil
	}
	c, err := checkpoint.Verify(t.cfg.InitialCheckpoint)
	if err != nil { // the same claim on every restart: no restart helps
		return "", permanent.InPodPaths(permanent.ConfigInvalid(
			fmt.Errorf("spec.model.initialCheckpoint (%s): %w", t.cfg.InitialCheckpoint, err)), t.opts.PodRoot)
	}
	t.opts.Log.Info("starting from an initial checkpoint", "dir", c.Dir, "itsStep", c.Step)
	return filepath.Join(c.Dir, checkpoint.WorkerStateFile), nil
}

// resumeFrom restores the trainer's state from c, one of this run's checkpoints, and
// returns its worker state. A state that is no position of the plan is refused: the
// run never counts another plan's progress as its own.
func (t *Trainer) resumeFrom(c *checkpoint.Checkpoint) (string, error) {
	var s State
	if err := json.Unmarshal(c.State, &s); err != nil {
		return "", fmt.Errorf("checkpoint %s: trainer state: %w", c.Dir, err)
	}
	if !t.plan.At(s.Epoch, s.Batch, s.Step) {
		return "", t.refuse(fmt.Errorf("checkpoint %s: its position (epoch index %d, batch %d, step %d) is not one of this run's plan (%d epochs, %d steps)",
			c.Dir, s.Epoch, s.Batch, s.Step, len(t.plan.Epochs), t.plan.TotalSteps()))
	}
	t.state, t.status.Step = s, s.Step
	t.protectBest()
	t.status.LastCheckpoint = &trainingv1alpha1.CheckpointStatus{Step: c.Step, Path: c.Dir}
	t.status.ResumedFrom = t.resumeRecord(c, s.Workers)
	t.opts.Log.Info("resuming from checkpoint", "dir", c.Dir, "step", t.state.Step, "epoch", t.state.Epoch, "batch", t.state.Batch)
	if r := t.status.ResumedFrom; r.OnAnotherSize() {
		t.status.Message = r.Describe()
		t.opts.Log.Info(t.status.Message)
	}
	return filepath.Join(c.Dir, checkpoint.WorkerStateFile), nil
}

// resumeRecord is status.training.resumedFrom for a resume now from c, written by
// writtenBy workers (0 when its trainer state does not say), on the current gang.
func (t *Trainer) resumeRecord(c *checkpoint.Checkpoint, writtenBy int) *trainingv1alpha1.ResumeStatus {
	now := t.now()
	return &trainingv1alpha1.ResumeStatus{Step: c.Step, Path: c.Dir, WrittenBy: int32(writtenBy),
		Workers: int32(t.opts.Workers.Size()), Time: &now}
}

// checkpointRefused is the error of a run that refuses the newest checkpoint of its
// checkpoint folder; the run ends with the outcome CheckpointMismatch.
type checkpointRefused struct {
	// where names the folder as the spec does: "spec.checkpoint (claim c, path p)".
	where string
	cause error
}

// refuse wraps err, why the checkpoint is refused, into a *checkpointRefused.
func (t *Trainer) refuse(err error) error {
	where := "the checkpoint folder " + t.cfg.CheckpointDir
	if c := t.cfg.Spec.Checkpoint; c != nil {
		where = fmt.Sprintf("spec.checkpoint (claim %s, path %q)", c.PersistentVolumeClaim.ClaimName, c.PersistentVolumeClaim.Path)
	}
	return &checkpointRefused{where: where, cause: err}
}

// Error names the folder, the checkpoint, what differs, and the two ways on.
func (e *checkpointRefused) Error() string {
	return fmt.Sprintf("%s: %v. This run resumes only its own checkpoints: give spec.checkpoint a new path, or delete the checkpoints in this one; "+
		"to start from that checkpoint's weights on purpose, also set spec.model.initialCheckpoint to its folder (training then starts its own plan at step 0)",
		e.where, e.cause)
}

func (e *checkpointRefused) Unwrap() error { return e.cause }
