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

// Package permanent marks the errors of a run's input that a restart would meet again
// (a dataset that cannot be read, a split that leaves a set empty, a model folder
// that lacks files, a config the workers refuse) with the outcome that ends the run
// at once, instead of after its restarts.
package permanent

import (
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// inputError is an error in the run's input; outcome is the outcome that ends the run
// with it.
type inputError struct {
	outcome trainingv1alpha1.TrainingOutcome
	err     error
}

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// Error wraps err, an error of the run's input, with the outcome it ends the run with.
func Error(outcome trainingv1alpha1.TrainingOutcome, err error) error {
	return &inputError{outcome: outcome, err: err}
}

// ConfigInvalid wraps err, an error of the spec that a restart would meet again,
// with the ConfigInvalid outcome.
func ConfigInvalid(err error) error {
	return Error(trainingv1alpha1.OutcomeConfigInvalid, err)
}

// Outcome is the outcome of an error that a restart cannot fix, or "" for any other
// error.
func Outcome(err error) trainingv1alpha1.TrainingOutcome {
	if in := (*inputError)(nil); errors.As(err, &in) {
		return in.outcome
	}
	return ""
}

// InPodPaths returns err with every path under podRoot named as the pod sees it
// (podRoot+"/data/x" as "/data/x"), its outcome kept; an empty podRoot changes nothing.
func InPodPaths(err error, podRoot string) error {
	podRoot = strings.TrimSuffix(podRoot, "/")
	if podRoot == "" || !strings.Contains(err.Error(), podRoot+"/") {
		return err
	}
	shown := errors.New(strings.ReplaceAll(err.Error(), podRoot+"/", "/"))
	if outcome := Outcome(err); outcome != "" {
		return Error(outcome, shown)
	}
	return shown
}

// OfWorkers returns err, an error of the workers' Configure or of any later call,
// with the outcome of the input a restart would meet again: a worker's permanent
// refusal with a reason (a *worker.RefusalError: a model that is no folder or that
// the worker cannot train, LoRA targets the model lacks, an attention implementation
// that cannot run) with the outcome worker.RefusalError.Outcome maps its reason to,
// its message naming the spec field, paths as the pod sees them; ModelIncomplete when a
// worker refused a model folder that lacks files (a *worker.ModelIncompleteError,
// its paths as the pod sees them), ConfigInvalid when a worker refused the options
// the spec makes (worker.ErrInvalid) or a call as invalid (gRPC InvalidArgument: the
// same plan sends the same call again after a restart, as a prompt longer than the
// rollout engine's spec.model.rollout.maxModelLen) or has no sentence encoder where
// the spec asks one to embed (worker.ErrNoEncoder); any other error unchanged.
func OfWorkers(err error, podRoot string) error {
	if r := (*worker.RefusalError)(nil); errors.As(err, &r) && r.Outcome() != "" {
		return InPodPaths(Error(r.Outcome(), err), podRoot)
	}
	if mi := (*worker.ModelIncompleteError)(nil); errors.As(err, &mi) {
		return InPodPaths(Error(trainingv1alpha1.OutcomeModelIncomplete, err), podRoot)
	}
	if errors.Is(err, worker.ErrInvalid) || errors.Is(err, worker.ErrNoEncoder) || status.Code(err) == codes.InvalidArgument {
		return ConfigInvalid(err)
	}
	return err
}
