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
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

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
		t.opts.Clock.Since(l.at) < t.statusInterval() {
		return
	}
	t.report(ctx)
}

// statusInterval is spec.trainer.statusInterval; unset, its default. A config
// loaded without an API server may set it to 0: then every step is reported.
func (t *Trainer) statusInterval() time.Duration {
	if d := t.cfg.Spec.Trainer.StatusInterval; d != nil {
		return d.Duration
	}
	return trainingv1alpha1.DefaultStatusInterval
}

// markReported records that the current status was just sent.
func (t *Trainer) markReported() {
	t.lastReport = lastReport{sent: true, at: t.opts.Clock.Now(), stage: t.status.Stage, epoch: t.status.Epoch}
}
