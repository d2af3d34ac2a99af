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
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// logProbsRecorder forwards every call to a worker and counts the LogProbs calls, those
// that asked for the reference only, and the answers that came back with current
// log-probs. With ignoreReferenceOnly it clears ReferenceOnly before forwarding, so
// it stands for a worker that does not know the field.
type logProbsRecorder struct {
	worker.Member
	ignoreReferenceOnly bool

	mu                                   sync.Mutex
	calls, referenceOnly, currentAnswers int
}

func (w *logProbsRecorder) LogProbs(ctx context.Context, items []worker.Scored, o worker.ScoreOptions) ([]worker.TokenLogProbs, error) {
	w.mu.Lock()
	w.calls++
	if o.ReferenceOnly {
		w.referenceOnly++
	}
	w.mu.Unlock()
	if w.ignoreReferenceOnly {
		o.ReferenceOnly = false
	}
	lps, err := w.Member.LogProbs(ctx, items, o)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range lps {
		if len(it.Current) > 0 {
			w.currentAnswers++
		}
	}
	return lps, nil
}

// recordedRun is what a run with a logProbsRecorder around one CPU worker gives.
type recordedRun struct {
	rec     *logProbsRecorder
	report  *Report
	reports []*trainingv1alpha1.TrainingStatus
	state   []byte
}

// runRecorded runs c on one CPU worker behind a logProbsRecorder, with a fixed clock so
// that two runs' reports can be compared whole.
func runRecorded(t *testing.T, c *Config, ignoreReferenceOnly bool) recordedRun {
	t.Helper()
	w := &logProbsRecorder{Member: cpuMembers(1)[0], ignoreReferenceOnly: ignoreReferenceOnly}
	rep := &recorder{}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	report, _ := run(t, c, Options{Workers: worker.NewGang(w), Reporter: rep, Clock: clock})
	if report.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", report.Outcome, report.Message)
	}
	return recordedRun{rec: w, report: report, reports: rep.reports, state: savedState(t, w)}
}

// TestRLStepsAskForTheReferenceOnly: an ESPO run with a KL term asks its worker for the
// reference log-probs only, and ends with the same reports and, byte for byte, the same
// worker state as a run whose worker ignores reference_only and returns the current
// log-probs too (which the trainer then uses instead of Generate's).
func TestRLStepsAskForTheReferenceOnly(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	if c.Spec.Algorithm.KL.Coefficient == "0" {
		t.Fatal("the small config has no KL term")
	}
	honoured := runRecorded(t, c, false)
	if r := honoured.rec; r.calls == 0 || r.referenceOnly != r.calls || r.currentAnswers != 0 {
		t.Errorf("%d LogProbs calls, %d with reference_only, %d answers with current log-probs; want every call reference only and no current log-probs",
			r.calls, r.referenceOnly, r.currentAnswers)
	}
	ignored := runRecorded(t, smallConfig(t, trainingv1alpha1.AlgorithmESPO), true)
	if r := ignored.rec; r.calls != honoured.rec.calls || r.currentAnswers == 0 {
		t.Fatalf("the worker that ignores reference_only got %d calls (want %d) and returned current log-probs for %d answers (want some)",
			r.calls, honoured.rec.calls, r.currentAnswers)
	}
	if !reflect.DeepEqual(honoured.report, ignored.report) {
		t.Errorf("reports differ:\nreference only %s\nignored        %s", jsonOf(t, honoured.report), jsonOf(t, ignored.report))
	}
	if !reflect.DeepEqual(honoured.reports, ignored.reports) {
		t.Errorf("the status reports along the runs differ")
	}
	if !bytes.Equal(honoured.state, ignored.state) {
		t.Errorf("final worker states differ (%d vs %d bytes)", len(honoured.state), len(ignored.state))
	}
}

// TestNoKLTermMakesNoLogProbsCalls: with the KL coefficient "0" an RL run needs no
// reference, and the current log-probs are Generate's, so it never calls LogProbs.
func TestNoKLTermMakesNoLogProbsCalls(t *testing.T) {
	for _, alg := range []trainingv1alpha1.AlgorithmName{trainingv1alpha1.AlgorithmESPO, trainingv1alpha1.AlgorithmGRPO} {
		c := smallConfig(t, alg)
		c.Spec.Algorithm.KL.Coefficient = "0"
		if r := runRecorded(t, c, false); r.rec.calls != 0 {
			t.Errorf("%s: %d LogProbs calls, want none", alg, r.rec.calls)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
