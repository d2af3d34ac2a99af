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

// Package tracking records a run's parameters and metrics in experiment trackers
// (spec.tracking: MLflow, TensorBoard) so that runs can be compared, without letting
// a tracker that is down or slow stop the run. Each tracker is a Sink (the packages
// mlflow and tensorboard); the trainer's Tracker fans the points out to them.
package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Point is one scalar of the run at a global step (the optimizer steps taken so far,
// status.training.step), as every tracker plots it.
type Point struct {
	// Key names the metric, such as "train/loss" or "eval/validation/recommendationAccuracy":
	// the same key in every tracker (an MLflow metric key, a TensorBoard tag).
	Key   string
	Value float64
	Step  int64
	// Time is when the value was measured.
	Time time.Time
}

// Run identifies the run a sink records: one per ESPOJob, found again by the job's UID
// after a gang restart or a resume.
type Run struct {
	// JobUID, Namespace and JobName are the ESPOJob's.
	JobUID, Namespace, JobName string
	// Name is the run's display name (spec.tracking.mlflow.runName, rendered).
	Name string
}

// Opened is what a sink already holds of the run when it opens it.
type Opened struct {
	// RunID is the tracker's id of the run (MLflow's run_id); empty for a tracker
	// without one (TensorBoard).
	RunID string
	// LastSteps holds, per metric key, the largest step at which the sink already has
	// a value: the trainer skips points at or before it, so that a run resumed from a
	// checkpoint logs each step of each metric exactly once. Keys without a value are
	// absent.
	LastSteps map[string]int64
}

// Sink is one experiment tracker's end of a run. Its methods are called from one
// goroutine at a time.
type Sink interface {
	// Name is the spec field that configures the sink, for messages and conditions:
	// "spec.tracking.mlflow" or "spec.tracking.tensorboard".
	Name() string
	// Open finds the run (for the job of run.JobUID) or starts it, and says what it
	// already holds.
	Open(ctx context.Context, run Run) (Opened, error)
	// LogParams records the run's parameters (hyper-parameters, provenance digests).
	// Logging the same value again is no error.
	LogParams(ctx context.Context, params map[string]string) error
	// Log records points, all or none: after an error the caller sends them again.
	Log(ctx context.Context, points []Point) error
	// Close ends the run with the job's outcome ("Succeeded", "Failed", or "" when the
	// trainer stops to be resumed: the run stays open) and releases the sink.
	Close(ctx context.Context, outcome string) error
}

// Tagger is a Sink that also records string tags on its run (MLflow), such as where
// the exported model lives.
type Tagger interface {
	SetTags(ctx context.Context, tags map[string]string) error
}

// PermanentError is an error that no retry fixes: a tracking URI that answers as no
// tracker, credentials the tracker refuses, a log folder that cannot be written. Field
// names the spec field to fix, such as "spec.tracking.mlflow.trackingURI".
type PermanentError struct {
	Field string
	Err   error
}

func (e *PermanentError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }

func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError naming field.
func Permanent(field string, err error) error { return &PermanentError{Field: field, Err: err} }

// IsPermanent reports whether err, or an error it wraps, is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// pointJSON is a Point as a checkpoint keeps it (Point.MarshalJSON).
type pointJSON struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	Step  int64           `json:"step"`
	Time  time.Time       `json:"time"`
}

// MarshalJSON writes p as {"key", "value", "step", "time"}, its value a JSON number
// or, for the values JSON numbers cannot hold, the string "NaN", "+Inf" or "-Inf".
func (p Point) MarshalJSON() ([]byte, error) {
	v := []byte(strconv.FormatFloat(p.Value, 'g', -1, 64))
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		v = []byte(strconv.Quote(strconv.FormatFloat(p.Value, 'g', -1, 64)))
	}
	return json.Marshal(pointJSON{Key: p.Key, Value: v, Step: p.Step, Time: p.Time})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Point) UnmarshalJSON(b []byte) error {
	var j pointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	text := string(j.Value)
	if s, err := strconv.Unquote(text); err == nil {
		text = s
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return fmt.Errorf("tracking point %s at step %d: value %s: %w", j.Key, j.Step, j.Value, err)
	}
	*p = Point{Key: j.Key, Value: v, Step: j.Step, Time: j.Time}
	return nil
}
