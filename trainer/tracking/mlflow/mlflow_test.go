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

package mlflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/espo-dev/espo-operator/test/mlflowtest"
	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/tracking/mlflow"
)

// start is the time of the tests' first point: whole milliseconds, as MLflow keeps
// timestamps.
var start = time.UnixMilli(1_790_000_000_000)

// uniqueExperiment returns an experiment name of the test no other test or earlier
// run of the test in this binary (go test -count) uses.
func uniqueExperiment(t testing.TB) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

// jobRun returns the Run of a job with uid.
func jobRun(uid string) tracking.Run {
	return tracking.Run{JobUID: uid, Namespace: "team-a", JobName: "job-" + uid, Name: "run of " + uid}
}

// newClient returns a Client of the experiment at uri.
func newClient(t testing.TB, uri, experiment string) *mlflow.Client {
	t.Helper()
	c, err := mlflow.New(mlflow.Config{TrackingURI: uri, Experiment: experiment})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// open opens run with c, failing the test on an error.
func open(t testing.TB, c *mlflow.Client, run tracking.Run) tracking.Opened {
	t.Helper()
	o, err := c.Open(context.Background(), run)
	if err != nil {
		t.Fatalf("Open(%s): %v", run.JobUID, err)
	}
	return o
}

// series returns the points of key at steps, step s measured s seconds after start.
func series(key string, value func(step int64) float64, steps ...int64) []tracking.Point {
	points := make([]tracking.Point, len(steps))
	for i, s := range steps {
		points[i] = tracking.Point{Key: key, Value: value(s), Step: s, Time: start.Add(time.Duration(s) * time.Second)}
	}
	return points
}

// stepsTo returns 1..n.
func stepsTo(n int64) []int64 {
	steps := make([]int64, n)
	for i := range steps {
		steps[i] = int64(i) + 1
	}
	return steps
}

// checkHistory checks that the history MLflow holds of each key of points is those
// points, each once (+Inf and -Inf read back as the largest and smallest float64, as
// MLflow's SQL store keeps them).
func checkHistory(t *testing.T, run mlflowtest.Run, points []tracking.Point) {
	t.Helper()
	want := map[string][]mlflowtest.Metric{}
	for _, p := range points {
		v := p.Value
		if math.IsInf(v, 0) {
			v = math.Copysign(math.MaxFloat64, v)
		}
		want[p.Key] = append(want[p.Key], mlflowtest.Metric{Step: p.Step, Value: v, Timestamp: p.Time.UnixMilli()})
	}
	for key, w := range want {
		got := run.History[key]
		sort.Slice(w, func(i, j int) bool { return w[i].Step < w[j].Step })
		if len(got) != len(w) {
			t.Errorf("history of %s: %d values, want %d", key, len(got), len(w))
			continue
		}
		for i := range w {
			if !sameMetric(got[i], w[i]) {
				t.Errorf("history of %s [%d]: %+v, want %+v", key, i, got[i], w[i])
				break
			}
		}
	}
}

// sameMetric compares metrics, NaN the same as NaN.
func sameMetric(got, want mlflowtest.Metric) bool {
	sameValue := got.Value == want.Value || math.IsNaN(got.Value) && math.IsNaN(want.Value)
	return sameValue && got.Step == want.Step && got.Timestamp == want.Timestamp
}

// TestNewRunRecordsParamsTagsAndMetrics records a new run as a job's trainer does:
// params (more than one request of them, one longer than MLflow keeps), a tag,
// metrics at steps (more than one request of them, NaN and infinities among them),
// and ends it Succeeded; MLflow's Python client reads back each param, the job's
// tags, each metric's history exactly, and the run FINISHED.
func TestNewRunRecordsParamsTagsAndMetrics(t *testing.T) {
	s := mlflowtest.Shared(t)
	ctx := context.Background()
	c := newClient(t, s.URI(), uniqueExperiment(t))
	run := jobRun("3f9c1d52-0000-4000-8000-000000000001")
	opened := open(t, c, run)
	if opened.RunID == "" || len(opened.LastSteps) != 0 {
		t.Fatalf("Open of a new run: %+v, want a run id and no last steps", opened)
	}

	params := map[string]string{"long": strings.Repeat("é", 7000)}
	for i := range 150 {
		params[fmt.Sprintf("espo.param%03d", i)] = strconv.Itoa(i * i)
	}
	if err := c.LogParams(ctx, params); err != nil {
		t.Fatalf("LogParams: %v", err)
	}
	if err := c.SetTags(ctx, map[string]string{"espo.dev/model": "s3://models/job-1"}); err != nil {
		t.Fatalf("SetTags: %v", err)
	}
	points := series("train/loss", func(s int64) float64 { return 1 / float64(s) }, stepsTo(1200)...)
	points = append(points, series("eval/validation/recommendationAccuracy", func(s int64) float64 { return float64(s) / 2000 }, 100, 600, 1200)...)
	odd := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.25}
	points = append(points, series("train/gradNorm", func(s int64) float64 { return odd[s-1] }, 1, 2, 3, 4)...)
	if err := c.Log(ctx, points); err != nil {
		t.Fatalf("Log: %v", err)
	}
	if err := c.Close(ctx, "Succeeded"); err != nil {
		t.Fatalf("Close: %v", err)
	}

	rb := s.ReadRun(t, opened.RunID, "train/loss", "eval/validation/recommendationAccuracy", "train/gradNorm")
	if rb.Status != "FINISHED" || rb.EndTime == nil || *rb.EndTime == 0 {
		t.Errorf("status %s, end time %v; want FINISHED with an end time", rb.Status, rb.EndTime)
	}
	checkParams(t, rb.Params, params)
	wantTags := map[string]string{
		mlflow.TagJobUID: run.JobUID, mlflow.TagNamespace: run.Namespace, mlflow.TagJobName: run.JobName,
		"mlflow.runName": run.Name, "espo.dev/model": "s3://models/job-1",
	}
	for k, v := range wantTags {
		if rb.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, rb.Tags[k], v)
		}
	}
	checkHistory(t, rb, points)
}

// checkParams checks that MLflow holds params, the long value cut to MLflow's 6000
// characters with a tail that says so.
func checkParams(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d params, want %d", len(got), len(want))
	}
	for k, v := range want {
		g := got[k]
		if utf8.RuneCountInString(v) <= 6000 {
			if g != v {
				t.Errorf("param %s = %q, want %q", k, g, v)
			}
			continue
		}
		if n := utf8.RuneCountInString(g); n != 6000 || !strings.HasPrefix(v, g[:100]) || !strings.Contains(g, "cut by espo: 7000 characters") {
			t.Errorf("param %s of %d characters: got %d characters ending %q, want 6000 with a tail saying it was cut", k, utf8.RuneCountInString(v), n, g[len(g)-60:])
		}
	}
}

// TestOpenAgainFindsTheRunAndItsLastSteps is a gang restart: a new Client opens the
// job's run again, by its UID, and learns the largest step of each metric, though
// the metric's later points were logged at smaller steps (MLflow keeps as "latest"
// the value of the largest step). A run that ended Failed is RUNNING again; another
// job gets a run of its own.
func TestOpenAgainFindsTheRunAndItsLastSteps(t *testing.T) {
	s := mlflowtest.Shared(t)
	ctx := context.Background()
	exp := uniqueExperiment(t)
	run := jobRun("3f9c1d52-0000-4000-8000-000000000002")
	first := newClient(t, s.URI(), exp)
	opened := open(t, first, run)
	points := []tracking.Point{
		{Key: "train/loss", Value: 0.9, Step: 5, Time: start.Add(3 * time.Second)},
		{Key: "train/loss", Value: 0.7, Step: 7, Time: start.Add(1 * time.Second)},
		{Key: "train/loss", Value: 0.8, Step: 6, Time: start.Add(9 * time.Second)},
		{Key: "eval/accuracy", Value: 0.5, Step: 2, Time: start.Add(9 * time.Second)},
	}
	if err := first.Log(ctx, points); err != nil {
		t.Fatalf("Log: %v", err)
	}
	if err := first.Close(ctx, "Failed"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if rb := s.ReadRun(t, opened.RunID); rb.Status != "FAILED" || rb.EndTime == nil {
		t.Errorf("after Close(Failed): status %s, end time %v; want FAILED with an end time", rb.Status, rb.EndTime)
	}

	again := open(t, newClient(t, s.URI(), exp), run)
	want := map[string]int64{"train/loss": 7, "eval/accuracy": 2}
	if again.RunID != opened.RunID || !equalSteps(again.LastSteps, want) {
		t.Errorf("Open again: %+v, want run %s with last steps %v", again, opened.RunID, want)
	}

	other := open(t, newClient(t, s.URI(), exp), jobRun("3f9c1d52-0000-4000-8000-000000000003"))
	if other.RunID == opened.RunID || len(other.LastSteps) != 0 {
		t.Errorf("Open of another job: %+v, want a run of its own, without steps", other)
	}
	if found, ok := s.FindRun(t, exp, run.JobUID); !ok || found.ID != opened.RunID || found.Status != "RUNNING" {
		t.Errorf("the job's run after Open again: %s %s (found: %t), want run %s RUNNING", found.ID, found.Status, ok, opened.RunID)
	}
}

func equalSteps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestLogParamsAgainIsNoError logs the same params twice, as a restarted trainer
// does; a changed value is MLflow's INVALID_PARAMETER_VALUE, an *APIError that is
// not permanent.
func TestLogParamsAgainIsNoError(t *testing.T) {
	s := mlflowtest.Shared(t)
	ctx := context.Background()
	c := newClient(t, s.URI(), uniqueExperiment(t))
	open(t, c, jobRun("3f9c1d52-0000-4000-8000-000000000004"))
	params := map[string]string{"learningRate": "1e-06", "groupSize": "8"}
	for i := range 2 {
		if err := c.LogParams(ctx, params); err != nil {
			t.Fatalf("LogParams #%d: %v", i+1, err)
		}
	}
	err := c.LogParams(ctx, map[string]string{"learningRate": "2e-06"})
	var apiErr *mlflow.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "INVALID_PARAMETER_VALUE" || tracking.IsPermanent(err) {
		t.Errorf("LogParams of a changed value: %v, want MLflow's INVALID_PARAMETER_VALUE, not permanent", err)
	}
}

// TestLogAfterAFailedRequestRecordsEachPointOnce sends 2500 points (three requests)
// through a proxy that fails the second request with 503: Log fails, transiently;
// the caller sends the points again with ten more, and the proxy passes each point
// to MLflow once, which holds each once.
func TestLogAfterAFailedRequestRecordsEachPointOnce(t *testing.T) {
	s := mlflowtest.Shared(t)
	ctx := context.Background()
	var batches, forwarded int
	proxy := mlflowtest.NewSwitch(t, s.URI())
	proxy.Filter(func(r *http.Request, body []byte) bool {
		if !strings.HasSuffix(r.URL.Path, "/runs/log-batch") {
			return true
		}
		var req struct {
			Metrics []json.RawMessage `json:"metrics"`
		}
		_ = json.Unmarshal(body, &req)
		if batches++; batches == 2 {
			return false
		}
		forwarded += len(req.Metrics)
		return true
	})
	c := newClient(t, proxy.URI(), uniqueExperiment(t))
	opened := open(t, c, jobRun("3f9c1d52-0000-4000-8000-000000000005"))
	points := series("train/loss", func(s int64) float64 { return float64(s) }, stepsTo(2500)...)
	err := c.Log(ctx, points)
	if err == nil || tracking.IsPermanent(err) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Log through a proxy that fails the second request: %v, want a transient error naming HTTP 503", err)
	}
	points = append(points, series("train/loss", func(s int64) float64 { return float64(s) }, 2501, 2502, 2503, 2504, 2505, 2506, 2507, 2508, 2509, 2510)...)
	if err := c.Log(ctx, points); err != nil {
		t.Fatalf("Log again: %v", err)
	}
	if forwarded != len(points) {
		t.Errorf("the proxy passed %d metrics to MLflow, want each of the %d once", forwarded, len(points))
	}
	checkHistory(t, s.ReadRun(t, opened.RunID, "train/loss"), points)
}

// TestExperimentCreatedMeanwhileIsUsed opens the first run of an experiment while
// another trainer creates the experiment between this one's look-up and its
// creation (a proxy creates it first): MLflow answers RESOURCE_ALREADY_EXISTS, and
// Open uses the experiment the other created.
func TestExperimentCreatedMeanwhileIsUsed(t *testing.T) {
	s := mlflowtest.Shared(t)
	exp := uniqueExperiment(t)
	created := false
	proxy := mlflowtest.NewSwitch(t, s.URI())
	proxy.Filter(func(r *http.Request, body []byte) bool {
		if strings.HasSuffix(r.URL.Path, "/experiments/create") && !created {
			created = true
			resp, err := http.Post(s.URI()+r.URL.Path, "application/json", bytes.NewReader(body))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("the other trainer's experiments/create: %v %v", resp, err)
			}
			if err == nil {
				_ = resp.Body.Close()
			}
		}
		return true
	})
	opened := open(t, newClient(t, proxy.URI(), exp), jobRun("3f9c1d52-0000-4000-8000-000000000009"))
	if !created || opened.RunID == "" {
		t.Errorf("Open: %+v (experiment created meanwhile: %t), want a run", opened, created)
	}
	again := open(t, newClient(t, s.URI(), exp), jobRun("3f9c1d52-0000-4000-8000-000000000009"))
	if again.RunID != opened.RunID {
		t.Errorf("Open at the server itself: run %s, want %s, in the experiment created meanwhile", again.RunID, opened.RunID)
	}
}

// TestRunWithoutANameIsNamedAfterTheJob checks that a run whose Name is empty is
// named after the job, not with a name MLflow makes up.
func TestRunWithoutANameIsNamedAfterTheJob(t *testing.T) {
	s := mlflowtest.Shared(t)
	run := jobRun("3f9c1d52-0000-4000-8000-000000000008")
	run.Name = ""
	exp := uniqueExperiment(t)
	opened := open(t, newClient(t, s.URI(), exp), run)
	if found, ok := s.FindRun(t, exp, run.JobUID); !ok || found.ID != opened.RunID || found.Tags["mlflow.runName"] != run.JobName {
		t.Errorf("the job's run %s (found: %t) is named %q, want run %s named after the job, %q", found.ID, ok, found.Tags["mlflow.runName"], opened.RunID, run.JobName)
	}
}

// TestCloseWithAnUnknownOutcomeKeepsTheRun checks that Close with an outcome that
// is none of the contract's is an error that leaves the run open, and that Close
// without an outcome releases it.
func TestCloseWithAnUnknownOutcomeKeepsTheRun(t *testing.T) {
	s := mlflowtest.Shared(t)
	ctx := context.Background()
	c := newClient(t, s.URI(), uniqueExperiment(t))
	open(t, c, jobRun("3f9c1d52-0000-4000-8000-000000000007"))
	if err := c.Close(ctx, "Paused"); err == nil || !strings.Contains(err.Error(), `outcome "Paused"`) {
		t.Errorf("Close(Paused): %v, want an error naming the outcome", err)
	}
	if err := c.Log(ctx, series("train/loss", func(int64) float64 { return 1 }, 1)); err != nil {
		t.Errorf("Log after Close(Paused): %v, want the run still open", err)
	}
	if err := c.Close(ctx, ""); err != nil {
		t.Errorf("Close without an outcome: %v", err)
	}
	if err := c.Log(ctx, nil); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Errorf("Log after Close: %v, want an error saying the run is not open", err)
	}
}

// TestDeletedExperimentIsPermanent opens a run in an experiment someone deleted in
// MLflow: no retry brings it back, so the error is permanent and names the
// experiment's field.
func TestDeletedExperimentIsPermanent(t *testing.T) {
	s := mlflowtest.Shared(t)
	exp := uniqueExperiment(t)
	open(t, newClient(t, s.URI(), exp), jobRun("3f9c1d52-0000-4000-8000-000000000006"))
	deleteExperiment(t, s, exp)
	_, err := newClient(t, s.URI(), exp).Open(context.Background(), jobRun("3f9c1d52-0000-4000-8000-000000000006"))
	checkPermanent(t, err, mlflow.FieldExperiment, "is deleted")
}

// checkPermanent checks that err is a tracking.PermanentError naming field, with
// words in its message.
func checkPermanent(t *testing.T, err error, field, words string) {
	t.Helper()
	var p *tracking.PermanentError
	if !errors.As(err, &p) || p.Field != field || !strings.Contains(err.Error(), words) {
		t.Errorf("error %v, want a permanent one naming %s and saying %q", err, field, words)
	}
}
