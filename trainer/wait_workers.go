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
	"fmt"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// configureWorkers configures the gang with s. Remote workers start with the
// trainer, in pods of their own: Configure waits until each is reachable, up to
// workerReadyTimeout, rather than failing the run. Meanwhile, every
// waitReportInterval on Options.Clock, the trainer probes its workers and reports
// the first that does not answer in status.training.waitingForWorker (its place,
// its address, how long the trainer has waited, why it got no answer), and logs it;
// the report is cleared once every worker answers or Configure returns.
func (t *Trainer) configureWorkers(ctx context.Context, s worker.Setup) (worker.Description, error) {
	readyCtx, cancel := context.WithTimeout(ctx, workerReadyTimeout)
	defer cancel()
	type configured struct {
		d   worker.Description
		err error
	}
	done := make(chan configured, 1)
	go func() {
		d, err := t.opts.Workers.Configure(readyCtx, s)
		done <- configured{d, err}
	}()
	since := t.opts.Clock.Now()
	for {
		timer := t.opts.Clock.NewTimer(t.waitReportInterval())
		select {
		case c := <-done:
			timer.Stop()
			t.reportWorkerWait(ctx, "")
			return c.d, c.err
		case <-timer.C():
			t.reportWorkerWait(ctx, t.workerWait(readyCtx, since))
		}
	}
}

// waitReportInterval is how often a wait for workers is reported:
// spec.trainer.statusInterval, at least a second (a config loaded without an API
// server may set the interval to 0).
func (t *Trainer) waitReportInterval() time.Duration {
	return max(t.statusInterval(), time.Second)
}

// workerWait probes the gang and says which worker the trainer has waited for since
// since, and why it got no answer; "" when every worker answers.
func (t *Trainer) workerWait(ctx context.Context, since time.Time) string {
	silent := t.opts.Workers.Silent(ctx)
	if len(silent) == 0 {
		return ""
	}
	first := silent[0]
	msg := fmt.Sprintf("waiting %s for worker %d (%s): %s", t.opts.Clock.Since(since).Round(time.Second),
		first.Index, first.Address, first.Reason)
	if n := len(silent) - 1; n > 0 {
		msg += fmt.Sprintf("; %d more of the %d workers do not answer either", n, t.opts.Workers.Size())
	}
	return msg
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
