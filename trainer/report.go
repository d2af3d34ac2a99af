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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/permanent"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/tracking/mlflow"
)

// Reporter receives the trainer's progress: the status.training of its ESPOJob.
type Reporter interface {
	Report(ctx context.Context, s *trainingv1alpha1.TrainingStatus) error
}

// DiscardReporter drops every report.
type DiscardReporter struct{}

// Report does nothing.
func (DiscardReporter) Report(context.Context, *trainingv1alpha1.TrainingStatus) error { return nil }

// Report is the trainer's final report, written to <outputDir>/report.json.
type Report struct {
	// Outcome and Message say how the run ended.
	Outcome trainingv1alpha1.TrainingOutcome `json:"outcome"`
	Message string                           `json:"message"`
	// Steps is the number of optimizer steps taken.
	Steps int64 `json:"steps"`
	// Validation holds the validation metrics after each epoch, in order; Test the
	// final test metrics.
	Validation []EvalResult `json:"validation,omitempty"`
	Test       *EvalResult  `json:"test,omitempty"`
	// BestRecommendationAccuracy is the best validation RecAcc.
	BestRecommendationAccuracy float64 `json:"bestRecommendationAccuracy"`
	// IntentMatch is how the intents of the last evaluation were judged, as in
	// status.training.intentMatch: "slots", "embedding" (the built-in embedder),
	// "embedding-service", or "slots+" one of the others when some episodes carried
	// preferences and others did not; "" when no evaluation ran.
	IntentMatch string `json:"intentMatch,omitempty"`
	// Status is the final status.training.
	Status *trainingv1alpha1.TrainingStatus `json:"status"`
}

// writeReport writes r as indented JSON to dir/report.json, atomically.
func writeReport(dir string, r *Report) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".report.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "report.json"))
}

// meanAcc accumulates a mean.
type meanAcc struct {
	sum float64
	n   int
}

func (m *meanAcc) add(sum float64, n int) { m.sum, m.n = m.sum+sum, m.n+n }

func (m meanAcc) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (t *Trainer) now() metav1.Time { return metav1.NewTime(t.opts.Clock.Now()) }

// percent formats a fraction for logs.
func percent(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// lastReport is what the trainer last sent its Reporter: when, and at which stage
// and epoch. reportStep uses it to bound the rate of step reports.
type lastReport struct {
	sent  bool
	at    time.Time
	stage trainingv1alpha1.TrainingStage
	epoch int32
}

// reportStep reports the progress after a training step when the stage or epoch
// changed since the last report, or spec.trainer.statusInterval has passed since it
// (on Options.Clock); otherwise the step is only in the next report. Evaluations and
// the end report at once (report).
func (t *Trainer) reportStep(ctx context.Context) {
	l := t.lastReport
	if l.sent && l.stage == t.status.Stage && l.epoch == t.status.Epoch &&
		t.opts.Clock.Since(l.at) < t.settings.StatusInterval {
		return
	}
	t.report(ctx)
}

// markReported records that the current status was just sent.
func (t *Trainer) markReported() {
	t.lastReport = lastReport{sent: true, at: t.opts.Clock.Now(), stage: t.status.Stage, epoch: t.status.Epoch}
}

// reportWorkerWait reports wait as status.training.waitingForWorker, and logs it,
// when it differs from what was reported last.
func (t *Trainer) reportWorkerWait(ctx context.Context, wait string) {
	if trainingv1alpha1.BoundMessage(wait) == t.status.WaitingForWorker {
		return
	}
	t.status.WaitingForWorker = trainingv1alpha1.BoundMessage(wait)
	if wait != "" {
		t.opts.Log.Info(wait)
	}
	t.report(ctx)
}

// ReportSetupError reports err, an error of New, as the run's outcome when a
// restart cannot fix it, so that the job fails at once rather than after its
// restarts; it returns err. Other errors, and a nil reporter, report nothing.
func ReportSetupError(ctx context.Context, r Reporter, err error) error {
	outcome := permanent.Outcome(err)
	if outcome == "" || r == nil {
		return err
	}
	s := &trainingv1alpha1.TrainingStatus{Outcome: outcome, Message: trainingv1alpha1.BoundMessage(err.Error())}
	if rerr := r.Report(ctx, s); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// report sends the current status; a failed report is logged, never fatal.
func (t *Trainer) report(ctx context.Context) {
	now := t.now()
	t.status.LastUpdateTime = &now
	t.status.Tracking = trackingStatus(t.opts.Tracker)
	t.markReported()
	if err := t.opts.Reporter.Report(ctx, t.status.DeepCopy()); err != nil {
		t.opts.Log.Error(err, "reporting progress")
	}
}

// trackingStatus is status.training.tracking, from tr; nil without a tracker.
func trackingStatus(tr *tracking.Tracker) *trainingv1alpha1.TrackingStatus {
	if tr == nil {
		return nil
	}
	st := tr.Status()
	return &trainingv1alpha1.TrackingStatus{MLflowRunID: st.RunIDs[mlflow.FieldSink],
		Degraded: trainingv1alpha1.BoundMessage(st.Degraded), Pending: st.Pending, Dropped: st.Dropped}
}
