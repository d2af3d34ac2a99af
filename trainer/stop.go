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

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/permanent"
)

// stopReason is why the training loop stopped.
type stopReason int

const (
	// stopCompleted: every epoch of the plan ran.
	stopCompleted stopReason = iota + 1
	// stopTargetReached: validations reached spec.earlyStopping.target for
	// spec.earlyStopping.patience evaluations in a row.
	stopTargetReached
	// stopRewardCollapsed: the mean step reward stayed below
	// spec.earlyStopping.minReward for spec.earlyStopping.patience evaluations in a row.
	stopRewardCollapsed
	// stopNonFiniteLoss: a step's loss or gradient norm was not finite.
	stopNonFiniteLoss
	// stopDrained: Options.Drain closed and the loop stopped at a safe point; the
	// run has not ended, the next start resumes it.
	stopDrained
	// stopFailed: an error ended the run.
	stopFailed
	// stopCheckpointMismatch: the checkpoint folder's newest checkpoint belongs to
	// another run (a *checkpointRefused), which the run refuses to resume.
	stopCheckpointMismatch
	// stopInvalidInput: an error of the run's input that a restart would meet again
	// (an *inputError: a model folder that lacks files); its outcome is the error's.
	stopInvalidInput
)

// stop is why and how the training loop stopped: its reason, what the report says
// about it, and the error of a failure or of the step a drain interrupted (nil
// otherwise).
type stop struct {
	reason  stopReason
	message string
	cause   error
}

// outcome is the status outcome of a run that stopped so: the one place that maps
// the loop's reasons to the API's outcomes. A drain is no end and has none.
func (s stop) outcome() trainingv1alpha1.TrainingOutcome {
	switch s.reason {
	case stopCompleted:
		return trainingv1alpha1.OutcomeCompleted
	case stopTargetReached:
		return trainingv1alpha1.OutcomeTargetReached
	case stopRewardCollapsed:
		return trainingv1alpha1.OutcomeRewardCollapsed
	case stopNonFiniteLoss:
		return trainingv1alpha1.OutcomeNonFiniteLoss
	case stopFailed:
		return trainingv1alpha1.OutcomeError
	case stopCheckpointMismatch:
		return trainingv1alpha1.OutcomeCheckpointMismatch
	case stopInvalidInput:
		return permanent.Outcome(s.cause)
	}
	return ""
}

// failed is the stop of an error: a drain when the run is draining (the error
// interrupted the step in flight: a worker of the gang already gone, say), else a
// failure (failure), permanent where a worker refused what a restart would send
// again (permanent.OfWorkers).
func (t *Trainer) failed(err error) stop {
	if t.draining() {
		return stop{reason: stopDrained, cause: err}
	}
	if permanent.Outcome(err) == "" {
		err = permanent.OfWorkers(err, t.opts.PodRoot)
	}
	return failure(err)
}

// failure is the stop of an error that ends the run: a refused checkpoint, invalid
// input, or any other failure.
func failure(err error) stop {
	reason := stopFailed
	if refused := (*checkpointRefused)(nil); errors.As(err, &refused) {
		reason = stopCheckpointMismatch
	} else if permanent.Outcome(err) != "" {
		reason = stopInvalidInput
	}
	return stop{reason: reason, message: err.Error(), cause: err}
}

// drained is the stop of a drain at a safe point.
func (t *Trainer) drained() stop { return stop{reason: stopDrained} }

// end reports how the run stopped and returns Run's results: the final report of a
// run that ended, ErrDrained for a drain, the cause of a failure (a refused
// checkpoint and invalid input included).
func (t *Trainer) end(ctx context.Context, s stop) (*Report, error) {
	switch s.reason {
	case stopDrained:
		return nil, t.reportDrained(ctx, s.cause)
	case stopFailed, stopCheckpointMismatch, stopInvalidInput:
		return nil, t.fail(ctx, s.cause)
	}
	return t.finish(ctx, s)
}

// reportEnd reports the outcome of a run that ended as s.
func (t *Trainer) reportEnd(ctx context.Context, s stop) {
	t.trackEnd(s)
	t.status.Outcome, t.status.Message = s.outcome(), trainingv1alpha1.BoundMessage(s.message)
	t.report(ctx)
}

// fail reports an unrecoverable error as the run's outcome and returns it; an error
// of a run being stopped (ctx done, or draining) is no outcome.
func (t *Trainer) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil || t.draining() {
		return err
	}
	t.reportEnd(ctx, failure(err))
	return err
}

// ErrDrained is Run's error when it stopped because Options.Drain was closed.
var ErrDrained = errors.New("the trainer was asked to stop (SIGTERM) and stopped at a safe point")

// reportDrained reports where a drained run stopped and returns ErrDrained, wrapped
// with the step and the checkpoint the next start resumes from; err, when not nil, is
// what interrupted the step in flight (a worker of the gang already gone, say).
func (t *Trainer) reportDrained(ctx context.Context, err error) error {
	var resume string
	switch c := t.status.LastCheckpoint; {
	case t.store == nil:
		resume = "no checkpoint: spec.checkpoint is not set, the next start begins the run again"
	case c == nil:
		resume = "no checkpoint written yet: the next start begins the run again"
	default:
		resume = fmt.Sprintf("the next start resumes from the checkpoint of step %d", c.Step)
	}
	msg := fmt.Sprintf("stopped on SIGTERM after step %d; %s", t.state.Step, resume)
	if err != nil {
		msg = fmt.Sprintf("stopped on SIGTERM after step %d, the next one interrupted (%v); %s", t.state.Step, err, resume)
	}
	t.status.Message = trainingv1alpha1.BoundMessage(msg)
	t.trackEnd(t.drained())
	t.report(ctx)
	t.opts.Log.Info(msg)
	return fmt.Errorf("%w: %s", ErrDrained, msg)
}

// PermanentOutcome is the outcome of an error that a restart cannot fix (a dataset
// that cannot be read, a split that leaves a set empty, a model folder that lacks
// files), or "" for any other error.
func PermanentOutcome(err error) trainingv1alpha1.TrainingOutcome { return permanent.Outcome(err) }

// trackerOutcome is how the experiment trackers' run ends when the trainer stops
// as s: Succeeded or Failed with the run's outcome, left open ("") when it stops to
// be resumed.
func (s stop) trackerOutcome() string {
	switch s.reason {
	case stopDrained:
		return ""
	case stopCompleted, stopTargetReached:
		return "Succeeded"
	}
	return "Failed"
}
