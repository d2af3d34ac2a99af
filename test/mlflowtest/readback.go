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

package mlflowtest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking/mlflow"
)

// readback is the script that reads runs back through MLflow's Python client,
// written to each server's folder as readbackScript.
//
//go:embed readback.py
var readback []byte

const readbackScript = "readback.py"

// readTimeout bounds one read back (about 1.5 s, most of it Python's import of
// MLflow).
const readTimeout = time.Minute

// Run is a run as MLflow's own Python client reads it back.
type Run struct {
	ID      string
	Status  string // RUNNING, FINISHED, FAILED or KILLED
	EndTime *int64 // in milliseconds since the epoch; nil or 0 where the run has not ended
	Params  map[string]string
	Tags    map[string]string
	// History holds the history of each metric key asked for, by step, then
	// timestamp; a key MLflow has no value of has none.
	History map[string][]Metric
}

// Metric is one value of a metric's history.
type Metric struct {
	Step int64
	// Value as MLflow holds it: NaN stays NaN, but its SQL store keeps +Inf and -Inf
	// as the largest and smallest float64.
	Value     float64
	Timestamp int64 // in milliseconds since the epoch
}

// ReadRun reads run runID back through MLflow's Python client, with the history of
// each of keys, or fails t.
func (s *Server) ReadRun(t testing.TB, runID string, keys ...string) Run {
	t.Helper()
	runs := s.readBack(t, append([]string{"run", runID}, keys...))
	if len(runs) != 1 {
		t.Fatalf("reading run %s back: %d runs", runID, len(runs))
	}
	return runs[0]
}

// FindRun finds, through MLflow's Python client, the run of the job jobUID (its tag
// mlflow.TagJobUID) in the experiment named experiment, and reads it back as
// ReadRun does, with the history of each of keys. It reports false where there is
// none (or no such experiment), and fails t where there are several: a job has one
// run, which its restarts open again.
func (s *Server) FindRun(t testing.TB, experiment, jobUID string, keys ...string) (Run, bool) {
	t.Helper()
	runs := s.readBack(t, append([]string{"find", experiment, mlflow.TagJobUID, jobUID}, keys...))
	switch len(runs) {
	case 0:
		return Run{}, false
	case 1:
		return runs[0], true
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	t.Fatalf("job %s has %d runs in experiment %q: %s", jobUID, len(runs), experiment, strings.Join(ids, ", "))
	return Run{}, false
}

// readBack runs the readback script with args after the tracking URI and decodes
// the runs it prints.
func (s *Server) readBack(t testing.TB, args []string) []Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.python, append([]string{filepath.Join(s.dir, readbackScript), s.uri}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var got []struct {
		ID      string            `json:"id"`
		Status  string            `json:"status"`
		EndTime *int64            `json:"end_time"`
		Params  map[string]string `json:"params"`
		Tags    map[string]string `json:"tags"`
		History map[string][]struct {
			Value     string `json:"value"` // Python's repr of the float: "nan", "inf", "0.5"
			Step      int64  `json:"step"`
			Timestamp int64  `json:"timestamp"`
		} `json:"history"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("readback.py %s: %v in %s", strings.Join(args, " "), err, out)
	}
	runs := make([]Run, len(got))
	for i, g := range got {
		r := Run{ID: g.ID, Status: g.Status, EndTime: g.EndTime, Params: g.Params, Tags: g.Tags, History: map[string][]Metric{}}
		for key, values := range g.History {
			h := make([]Metric, len(values))
			for j, v := range values {
				f, err := strconv.ParseFloat(v.Value, 64) // Go reads Python's nan, inf and -inf
				if err != nil {
					t.Fatalf("readback.py: value %q of %s: %v", v.Value, key, err)
				}
				h[j] = Metric{Step: v.Step, Value: f, Timestamp: v.Timestamp}
			}
			sort.SliceStable(h, func(a, b int) bool {
				return h[a].Step < h[b].Step || h[a].Step == h[b].Step && h[a].Timestamp < h[b].Timestamp
			})
			r.History[key] = h
		}
		runs[i] = r
	}
	return runs
}
