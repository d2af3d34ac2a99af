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

// Package mlflow records a run in an MLflow tracking server (spec.tracking.mlflow):
// a tracking.Sink and tracking.Tagger over MLflow's REST API (/api/2.0/mlflow/),
// with net/http and encoding/json, as MLflow has no Go client.
//
// One ESPOJob is one MLflow run, tagged with the job's UID (TagJobUID) and found again
// by it, so that a gang restart or a resume goes on logging into the same run.
// Errors are of two kinds: a tracker that is down, slow or failing (network errors,
// timeouts, HTTP 5xx and 429) is a plain error, worth a retry; a tracking URI that
// answers as no MLflow server or credentials the server refuses is a
// tracking.PermanentError that names the spec field to fix.
package mlflow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// The spec fields the sink's errors name.
const (
	// FieldSink is the spec field that configures the sink (its Name).
	FieldSink = "spec.tracking.mlflow"
	// FieldTrackingURI is the field of the server's address.
	FieldTrackingURI = FieldSink + ".trackingURI"
	// FieldExperiment is the field of the experiment's name.
	FieldExperiment = FieldSink + ".experiment"
	// FieldCredentials is the field of the Secret with the credentials (a token, or a
	// username and a password).
	FieldCredentials = FieldSink + ".credentialsSecret"
)

// The tags of a run that say which ESPOJob it records: Open finds the job's run by
// TagJobUID.
const (
	TagJobUID    = "espo.dev/job-uid"
	TagNamespace = "espo.dev/namespace"
	TagJobName   = "espo.dev/job-name"
	// tagRunName is MLflow's own tag of the run's display name.
	tagRunName = "mlflow.runName"
)

// DefaultRequestTimeout bounds each request to the server when Config.RequestTimeout
// is zero.
const DefaultRequestTimeout = 30 * time.Second

// MLflow's limits (mlflow/utils/validation.py of MLflow 3.x): a log-batch request
// holds at most 1000 metrics, 100 params, 100 tags and 1000 of them in all; a param
// value holds at most 6000 characters, a tag value 8000. maxBatchBytes keeps each
// request under the 1 MB that MLflow documents for log-batch (its own server does not
// enforce it; hosted ones and proxies may).
const (
	maxMetricsPerBatch = 1000
	maxParamsPerBatch  = 100
	maxTagsPerBatch    = 100
	maxParamValueLen   = 6000
	maxTagValueLen     = 8000
	maxBatchBytes      = 900_000
)

// Config configures a Client.
type Config struct {
	// TrackingURI is the server's address: an http or https URL, such as
	// "http://mlflow.mlops:5000", without credentials in it.
	TrackingURI string
	// Experiment names the experiment of the run; Open creates it when missing.
	Experiment string
	// Token, when set, is sent as "Authorization: Bearer <token>" (as MLflow's
	// MLFLOW_TRACKING_TOKEN).
	Token string
	// Username and Password, when set, are sent as HTTP basic authentication (as
	// MLflow's MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD). A Config holds
	// a token or a username and password, not both.
	Username, Password string
	// HTTPClient sends the requests; nil is a client of its own.
	HTTPClient *http.Client
	// RequestTimeout bounds each request (DefaultRequestTimeout when zero).
	RequestTimeout time.Duration
}

// Client is a run in an MLflow tracking server: a tracking.Sink and a
// tracking.Tagger. Open starts or finds the run; the other methods record into it
// and fail before Open. Its methods are called from one goroutine at a time.
type Client struct {
	api   *api
	exp   string
	runID string
	// sent is the prefix of the points of the last Log call that failed which the
	// server accepted: a resend that starts with these points skips them.
	sent []tracking.Point
}

var (
	_ tracking.Sink   = (*Client)(nil)
	_ tracking.Tagger = (*Client)(nil)
)

// New returns a Client of cfg, sending nothing yet. A TrackingURI that is not an
// http or https URL, or that holds credentials, is a tracking.PermanentError naming
// FieldTrackingURI; an empty Experiment one naming FieldExperiment; a token together
// with a username, or a username without a password, one naming FieldCredentials.
func New(cfg Config) (*Client, error) {
	base, err := parseTrackingURI(cfg.TrackingURI)
	if err != nil {
		return nil, tracking.Permanent(FieldTrackingURI, err)
	}
	if strings.TrimSpace(cfg.Experiment) == "" {
		return nil, tracking.Permanent(FieldExperiment, errors.New("no experiment name: name the MLflow experiment the run belongs to"))
	}
	auth, err := authorization(cfg)
	if err != nil {
		return nil, tracking.Permanent(FieldCredentials, err)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("%s: request timeout %s, want a positive one", FieldSink, timeout)
	}
	httpClient, own := cfg.HTTPClient, false
	if httpClient == nil {
		httpClient, own = &http.Client{}, true
	}
	return &Client{
		api: &api{base: base, auth: auth, http: httpClient, ownHTTP: own, timeout: timeout},
		exp: cfg.Experiment,
	}, nil
}

// parseTrackingURI returns the server's address as an http or https URL without a
// trailing slash, or an error that says how to write it.
func parseTrackingURI(uri string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(uri))
	if err != nil {
		// The URI is not quoted: it may hold a password.
		return nil, errors.New("the tracking URI does not parse as a URL: write the MLflow server's address, such as http://mlflow.mlops:5000")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is no http or https URL: write the MLflow server's address, such as http://mlflow.mlops:5000 (file and databricks URIs are not supported)", u.Redacted())
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q holds credentials: put them in the Secret of %s and write the URI without them", u.Redacted(), FieldCredentials)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q has a query or a fragment: write the MLflow server's address alone, such as http://mlflow.mlops:5000", u.Redacted())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// authorization returns the Authorization header value of cfg's credentials, empty
// for none.
func authorization(cfg Config) (string, error) {
	switch {
	case cfg.Token != "" && (cfg.Username != "" || cfg.Password != ""):
		return "", errors.New("both a token and a username or password: give the Secret a token or a username and password, not both")
	case cfg.Token != "":
		return "Bearer " + cfg.Token, nil
	case cfg.Username != "" && cfg.Password == "", cfg.Username == "" && cfg.Password != "":
		return "", errors.New("a username without a password or a password without a username: give the Secret both")
	case cfg.Username != "":
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(cfg.Username, cfg.Password)
		return r.Header.Get("Authorization"), nil
	}
	return "", nil
}

// Name returns FieldSink.
func (c *Client) Name() string { return FieldSink }

// RunID returns the id of the run Open found or started; empty before Open.
func (c *Client) RunID() string { return c.runID }

// Open finds the run of run.JobUID in the experiment (creating the experiment when
// it is missing): the oldest active run tagged TagJobUID with it, set RUNNING again
// if it had ended; else it starts one named run.Name (the job's name when that is
// empty), tagged with the job's UID, namespace and name. LastSteps holds each
// metric's largest logged step: the step of MLflow's latest value of the key, which
// MLflow orders by step first (then by timestamp and value). An experiment that was
// deleted is a tracking.PermanentError naming FieldExperiment.
func (c *Client) Open(ctx context.Context, run tracking.Run) (tracking.Opened, error) {
	if run.JobUID == "" || strings.ContainsAny(run.JobUID, `'\`) {
		return tracking.Opened{}, fmt.Errorf("%s: job UID %q: want a non-empty one without quotes or backslashes", FieldSink, run.JobUID)
	}
	expID, err := c.experimentID(ctx)
	if err != nil {
		return tracking.Opened{}, err
	}
	r, found, err := c.findRun(ctx, expID, run.JobUID)
	if err != nil {
		return tracking.Opened{}, err
	}
	if !found {
		r, err = c.createRun(ctx, expID, run)
	} else if r.Info.Status != statusRunning {
		err = c.setStatus(ctx, r.Info.RunID, statusRunning, time.Time{})
	}
	if err != nil {
		return tracking.Opened{}, err
	}
	c.runID, c.sent = r.Info.RunID, nil
	return tracking.Opened{RunID: c.runID, LastSteps: lastSteps(r.Data.Metrics)}, nil
}

// lastSteps maps each key of the latest metrics of a run to its step.
func lastSteps(latest []metric) map[string]int64 {
	steps := make(map[string]int64, len(latest))
	for _, m := range latest {
		if s, ok := steps[m.Key]; !ok || m.Step > s {
			steps[m.Key] = m.Step
		}
	}
	return steps
}

// experimentID returns the id of the experiment named c.exp, creating it when it is
// missing; a concurrent creation of it is no error.
func (c *Client) experimentID(ctx context.Context) (string, error) {
	exp, err := c.getExperiment(ctx)
	if hasCode(err, codeNotFound) {
		id, cerr := c.createExperiment(ctx)
		if !hasCode(cerr, codeAlreadyExists) {
			return id, cerr
		}
		exp, err = c.getExperiment(ctx)
	}
	if err != nil {
		return "", err
	}
	if exp.LifecycleStage == "deleted" {
		return "", tracking.Permanent(FieldExperiment, fmt.Errorf("experiment %q (id %s) is deleted in MLflow at %s: restore it or name another", c.exp, exp.ID, c.api.where()))
	}
	return exp.ID, nil
}

func (c *Client) getExperiment(ctx context.Context) (experiment, error) {
	var resp struct {
		Experiment experiment `json:"experiment"`
	}
	err := c.api.get(ctx, "experiments/get-by-name", url.Values{"experiment_name": {c.exp}}, &resp)
	if err == nil && resp.Experiment.ID == "" {
		err = tracking.Permanent(FieldTrackingURI, fmt.Errorf("%s answers as no MLflow tracking server: its answer to %sexperiments/get-by-name names no experiment", c.api.where(), apiPath))
	}
	return resp.Experiment, err
}

func (c *Client) createExperiment(ctx context.Context) (string, error) {
	var resp struct {
		ID string `json:"experiment_id"`
	}
	err := c.api.post(ctx, "experiments/create", map[string]any{"name": c.exp}, &resp)
	return resp.ID, err
}

// findRun returns the oldest active run of the experiment tagged TagJobUID with uid.
// A tag key with dots and slashes is quoted with backticks in MLflow's filter syntax.
func (c *Client) findRun(ctx context.Context, expID, uid string) (mlflowRun, bool, error) {
	var resp struct {
		Runs []mlflowRun `json:"runs"`
	}
	err := c.api.post(ctx, "runs/search", map[string]any{
		"experiment_ids": []string{expID},
		"filter":         fmt.Sprintf("tags.`%s` = '%s'", TagJobUID, uid),
		"run_view_type":  "ACTIVE_ONLY",
		"order_by":       []string{"attributes.start_time ASC"},
		"max_results":    1,
	}, &resp)
	if err != nil || len(resp.Runs) == 0 {
		return mlflowRun{}, false, err
	}
	return resp.Runs[0], true, nil
}

// createRun starts the run of run in the experiment, named run.Name (the job's name
// when that is empty, where MLflow would make one up).
func (c *Client) createRun(ctx context.Context, expID string, run tracking.Run) (mlflowRun, error) {
	name := run.Name
	if name == "" {
		name = run.JobName
	}
	var resp struct {
		Run mlflowRun `json:"run"`
	}
	err := c.api.post(ctx, "runs/create", map[string]any{
		"experiment_id": expID,
		"run_name":      name,
		"start_time":    time.Now().UnixMilli(),
		"tags": []keyValue{
			{TagJobUID, run.JobUID},
			{TagNamespace, run.Namespace},
			{TagJobName, run.JobName},
			{tagRunName, name},
		},
	}, &resp)
	return resp.Run, err
}

// The statuses of a run (MLflow's RunStatus).
const (
	statusRunning  = "RUNNING"
	statusFinished = "FINISHED"
	statusFailed   = "FAILED"
)

// setStatus sets the status of run id, and its end time unless end is zero.
func (c *Client) setStatus(ctx context.Context, id, status string, end time.Time) error {
	req := map[string]any{"run_id": id, "status": status}
	if !end.IsZero() {
		req["end_time"] = end.UnixMilli()
	}
	return c.api.post(ctx, "runs/update", req, nil)
}

// errNotOpen is the error of a method called before Open.
var errNotOpen = errors.New(FieldSink + ": the run is not open: call Open first")

// LogParams records params, in requests of at most 100 (and under 1 MB). A value
// longer than MLflow's 6000 characters is cut, its tail saying so. Logging a value a
// param already has is no error; another value is MLflow's INVALID_PARAMETER_VALUE
// (an *APIError).
func (c *Client) LogParams(ctx context.Context, params map[string]string) error {
	return c.logKeyValues(ctx, "params", params, maxParamsPerBatch, maxParamValueLen)
}

// SetTags records tags on the run, in requests of at most 100 (and under 1 MB),
// replacing a tag's earlier value. A value longer than MLflow's 8000 characters is
// cut, its tail saying so.
func (c *Client) SetTags(ctx context.Context, tags map[string]string) error {
	return c.logKeyValues(ctx, "tags", tags, maxTagsPerBatch, maxTagValueLen)
}

// logKeyValues sends kv, sorted by key and each value cut to maxLen characters, as
// the field of log-batch requests of at most perBatch.
func (c *Client) logKeyValues(ctx context.Context, field string, kv map[string]string, perBatch, maxLen int) error {
	if c.runID == "" {
		return errNotOpen
	}
	keys := slices.Sorted(maps.Keys(kv))
	items := make([]keyValue, len(keys))
	for i, k := range keys {
		items[i] = keyValue{Key: k, Value: truncate(kv[k], maxLen)}
	}
	size := func(i int) int { return len(items[i].Key) + len(items[i].Value) + 32 }
	for _, b := range batches(len(items), perBatch, size) {
		if err := c.logBatch(ctx, field, items[b[0]:b[1]]); err != nil {
			return err
		}
	}
	return nil
}

// truncate returns s when it has at most limit characters (Unicode code points, as
// MLflow counts them), else its head followed by a tail that says it was cut.
func truncate(s string, limit int) string {
	runes := []rune(s)
	if len(runes) <= limit {
		return s
	}
	tail := fmt.Sprintf(" … [cut by espo: %d characters, MLflow keeps %d]", len(runes), limit)
	return string(runes[:limit-len([]rune(tail))]) + tail
}

// batches splits n items into ranges [from, to) of at most perBatch items whose sizes
// add up to at most maxBatchBytes; an item larger than that goes alone.
func batches(n, perBatch int, size func(i int) int) [][2]int {
	var out [][2]int
	from, bytes := 0, 0
	for i := 0; i < n; i++ {
		s := size(i)
		if i > from && (i-from == perBatch || bytes+s > maxBatchBytes) {
			out = append(out, [2]int{from, i})
			from, bytes = i, 0
		}
		bytes += s
	}
	if from < n {
		out = append(out, [2]int{from, n})
	}
	return out
}

// Log records points as metrics (key, value, step, and Time in milliseconds; a zero
// Time is sent as the Unix epoch), in log-batch requests of at most 1000 in the order
// given. NaN is recorded as NaN (sent as the protobuf JSON "NaN"); +Inf and -Inf
// are sent as "Infinity" and "-Infinity", which MLflow's SQL stores record as
// +math.MaxFloat64 and -math.MaxFloat64. No point is skipped.
//
// All or none: when a request fails, Log returns its error and remembers the points
// the requests before it recorded; a next call whose points start with those (the
// caller sending the same points again, maybe with more after them) skips them, so
// that each point is recorded once. A request that fails after the server recorded
// its points (a timeout at the wrong moment) is sent again in full: MLflow's SQL
// stores ignore a metric equal to one they hold in key, value, step and timestamp.
func (c *Client) Log(ctx context.Context, points []tracking.Point) error {
	if c.runID == "" {
		return errNotOpen
	}
	start := 0
	if hasPrefix(points, c.sent) {
		start = len(c.sent)
	}
	c.sent = nil
	for start < len(points) {
		end := min(start+maxMetricsPerBatch, len(points))
		if err := c.logBatch(ctx, "metrics", metrics(points[start:end])); err != nil {
			c.sent = slices.Clone(points[:start])
			return err
		}
		start = end
	}
	return nil
}

// hasPrefix reports whether points starts with prefix.
func hasPrefix(points, prefix []tracking.Point) bool {
	if len(prefix) == 0 || len(points) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		q := points[i]
		if p.Key != q.Key || p.Step != q.Step || !p.Time.Equal(q.Time) || math.Float64bits(p.Value) != math.Float64bits(q.Value) {
			return false
		}
	}
	return true
}

// metrics returns points as MLflow metrics.
func metrics(points []tracking.Point) []metric {
	out := make([]metric, len(points))
	for i, p := range points {
		var ms int64
		if !p.Time.IsZero() {
			ms = p.Time.UnixMilli()
		}
		out[i] = metric{Key: p.Key, Value: jsonFloat(p.Value), Timestamp: ms, Step: p.Step}
	}
	return out
}

// logBatch sends one runs/log-batch request with items as its field (metrics,
// params or tags).
func (c *Client) logBatch(ctx context.Context, field string, items any) error {
	return c.api.post(ctx, "runs/log-batch", map[string]any{"run_id": c.runID, field: items}, nil)
}

// Close ends the run with outcome: "Succeeded" sets it FINISHED and "Failed" FAILED,
// with the end time now; "" leaves it RUNNING, for the trainer that resumes it. The
// Client holds no run after it, whatever the error, but for an unknown outcome,
// which is an error that changes nothing.
func (c *Client) Close(ctx context.Context, outcome string) error {
	if c.runID == "" {
		return errNotOpen
	}
	status, ok := map[string]string{"": statusRunning, "Succeeded": statusFinished, "Failed": statusFailed}[outcome]
	if !ok {
		return fmt.Errorf("%s: outcome %q: want Succeeded, Failed or empty", FieldSink, outcome)
	}
	id := c.runID
	c.runID, c.sent = "", nil
	defer c.api.closeIdle()
	if status == statusRunning {
		return nil
	}
	return c.setStatus(ctx, id, status, time.Now())
}
