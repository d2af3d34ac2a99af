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

	"k8s.io/utils/clock"

	"github.com/espo-dev/espo-operator/trainer/worker"
)

// configureWorkers configures gang with s. Remote workers start with the trainer, in
// pods of their own: Configure waits until each is reachable, up to
// workerReadyTimeout, rather than failing the run. Meanwhile, every interval on clk,
// it probes the workers and calls wait with what it waits for: the first worker that
// does not answer (its place, its address, how long the trainer has waited, why it
// got no answer); and with "" once every worker answers or Configure returns.
func configureWorkers(ctx context.Context, gang *worker.Gang, s worker.Setup, clk clock.Clock, interval time.Duration,
	wait func(string)) (worker.Description, error) {
	readyCtx, cancel := context.WithTimeout(ctx, workerReadyTimeout)
	defer cancel()
	type configured struct {
		d   worker.Description
		err error
	}
	done := make(chan configured, 1)
	go func() {
		d, err := gang.Configure(readyCtx, s)
		done <- configured{d, err}
	}()
	since := clk.Now()
	for {
		timer := clk.NewTimer(interval)
		select {
		case c := <-done:
			timer.Stop()
			wait("")
			return c.d, c.err
		case <-timer.C():
			wait(workerWait(readyCtx, gang, clk.Since(since)))
		}
	}
}

// workerWait probes the gang and says which worker the trainer has waited for,
// for waited, and why it got no answer; "" when every worker answers.
func workerWait(ctx context.Context, gang *worker.Gang, waited time.Duration) string {
	silent := gang.Silent(ctx)
	if len(silent) == 0 {
		return ""
	}
	first := silent[0]
	msg := fmt.Sprintf("waiting %s for worker %d (%s): %s", waited.Round(time.Second), first.Index, first.Address, first.Reason)
	if n := len(silent) - 1; n > 0 {
		msg += fmt.Sprintf("; %d more of the %d workers do not answer either", n, gang.Size())
	}
	return msg
}
