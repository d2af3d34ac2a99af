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
	"strings"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// inputError is an error in the run's input (its datasets, their split, the model
// folder) that a restart would meet again; outcome is the outcome that ends the run
// with it.
type inputError struct {
	outcome trainingv1alpha1.TrainingOutcome
	err     error
}

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// invalidInput wraps err, an error of the run's input, with the outcome it ends the
// run with.
func invalidInput(outcome trainingv1alpha1.TrainingOutcome, err error) error {
	return &inputError{outcome: outcome, err: err}
}

// inPodPaths returns err with every path under podRoot named as the pod sees it
// (podRoot+"/data/x" as "/data/x"), its outcome kept; an empty podRoot changes nothing.
func inPodPaths(err error, podRoot string) error {
	podRoot = strings.TrimSuffix(podRoot, "/")
	if podRoot == "" || !strings.Contains(err.Error(), podRoot+"/") {
		return err
	}
	shown := errors.New(strings.ReplaceAll(err.Error(), podRoot+"/", "/"))
	if outcome := PermanentOutcome(err); outcome != "" {
		return invalidInput(outcome, shown)
	}
	return shown
}

// modelIncomplete returns err, an error of the workers' Configure, with the
// ModelIncomplete outcome when a worker refused a model folder that lacks files (a
// *worker.ModelIncompleteError), its paths as the pod sees them; any other error
// unchanged.
func modelIncomplete(err error, podRoot string) error {
	if mi := (*worker.ModelIncompleteError)(nil); errors.As(err, &mi) {
		return inPodPaths(invalidInput(trainingv1alpha1.OutcomeModelIncomplete, err), podRoot)
	}
	return err
}

// configInvalid returns err with the ConfigInvalid outcome when a restart would meet
// it again: a worker refused the Configure options the spec makes as invalid
// (worker.ErrInvalid), or has no sentence encoder where the spec asks one to embed
// (worker.ErrNoEncoder); any other error unchanged.
func configInvalid(err error) error {
	if errors.Is(err, worker.ErrInvalid) || errors.Is(err, worker.ErrNoEncoder) {
		return invalidInput(trainingv1alpha1.OutcomeConfigInvalid, err)
	}
	return err
}

// PermanentOutcome is the outcome of an error that a restart cannot fix (a dataset
// that cannot be read, a split that leaves a set empty, a model folder that lacks
// files), or "" for any other error.
func PermanentOutcome(err error) trainingv1alpha1.TrainingOutcome {
	if in := (*inputError)(nil); errors.As(err, &in) {
		return in.outcome
	}
	return ""
}

// ReportSetupError reports err, an error of New, as the run's outcome when a
// restart cannot fix it, so that the job fails at once rather than after its
// restarts; it returns err. Other errors, and a nil reporter, report nothing.
func ReportSetupError(ctx context.Context, r Reporter, err error) error {
	outcome := PermanentOutcome(err)
	if outcome == "" || r == nil {
		return err
	}
	s := &trainingv1alpha1.TrainingStatus{Outcome: outcome, Message: trainingv1alpha1.BoundMessage(err.Error())}
	if rerr := r.Report(ctx, s); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}
