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

package mlflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// apiPath is the path of MLflow's REST API under the tracking URI.
const apiPath = "/api/2.0/mlflow/"

// maxResponseBytes bounds the answer read from the server.
const maxResponseBytes = 64 << 20

// MLflow's error codes that the sink acts on.
const (
	codeNotFound      = "RESOURCE_DOES_NOT_EXIST"
	codeAlreadyExists = "RESOURCE_ALREADY_EXISTS"
)

// APIError is an error MLflow answered in its own terms (its JSON error, with an
// error_code) to a request that no retry fixes as such: an invalid parameter, a run
// that does not exist. Status is the HTTP status, Endpoint the API method (such as
// "runs/log-batch").
type APIError struct {
	URI      string
	Endpoint string
	Status   int
	Code     string
	Message  string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: MLflow at %s answered %s with HTTP %d %s: %s", FieldSink, e.URI, e.Endpoint, e.Status, e.Code, e.Message)
}

// hasCode reports whether err is an *APIError with MLflow's error code.
func hasCode(err error, code string) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// api sends requests to MLflow's REST API and classifies what goes wrong.
type api struct {
	base    *url.URL
	auth    string // the Authorization header; empty for none
	http    *http.Client
	ownHTTP bool // http is the api's own, its idle connections closed with the run
	timeout time.Duration
}

// where names the server in messages: its URI, without credentials.
func (a *api) where() string { return a.base.Redacted() }

// closeIdle closes the idle connections of an http.Client of the api's own.
func (a *api) closeIdle() {
	if a.ownHTTP {
		a.http.CloseIdleConnections()
	}
}

// get sends GET endpoint?query and decodes the answer into out.
func (a *api) get(ctx context.Context, endpoint string, query url.Values, out any) error {
	return a.do(ctx, http.MethodGet, endpoint, query, nil, out)
}

// post sends body as JSON to endpoint and decodes the answer into out (nil: the
// answer is checked to be JSON and dropped).
func (a *api) post(ctx context.Context, endpoint string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: encoding %s: %w", FieldSink, endpoint, err)
	}
	return a.do(ctx, http.MethodPost, endpoint, nil, b, out)
}

// do sends one request, bounded by the request timeout, and returns what it means:
// nil with the answer decoded into out, or an error as classify makes it.
func (a *api) do(ctx context.Context, method, endpoint string, query url.Values, body []byte, out any) error {
	ctx, cancel := context.WithTimeoutCause(ctx, a.timeout, errRequestTimeout)
	defer cancel()
	u := *a.base
	u.Path += apiPath + endpoint
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", FieldSink, method, endpoint, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if a.auth != "" {
		req.Header.Set("Authorization", a.auth)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return a.unreachable(ctx, endpoint, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return a.unreachable(ctx, endpoint, err)
	}
	return a.classify(endpoint, resp, answer, out)
}

// errRequestTimeout is the cause of a request's context when the request timeout
// ends it.
var errRequestTimeout = errors.New("request timeout")

// unreachable is the transient error of a request that got no full answer: the
// server is down, unreachable or slower than the request timeout, or the caller's
// context ended (its error is wrapped).
func (a *api) unreachable(ctx context.Context, endpoint string, err error) error {
	if context.Cause(ctx) == errRequestTimeout {
		return fmt.Errorf("%s: MLflow at %s did not answer %s within %s: the tracker is slow or unreachable", FieldSink, a.where(), endpoint, a.timeout)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s to MLflow at %s: %w", FieldSink, endpoint, a.where(), context.Cause(ctx))
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the URL is named once, redacted
	}
	return fmt.Errorf("%s: MLflow at %s is unreachable (%s): %w", FieldSink, a.where(), endpoint, err)
}

// classify returns nil for a 2xx answer in JSON, decoded into out, and otherwise the
// error the answer means:
//   - 401 and 403: a tracking.PermanentError naming FieldCredentials;
//   - 429 and 5xx: a transient error (the tracker is overloaded or failing);
//   - MLflow's JSON error: an *APIError;
//   - 404, or a 2xx answer that is not JSON (an HTML page): a tracking.PermanentError
//     naming FieldTrackingURI, for the URI answers as no MLflow server;
//   - any other status: a plain error naming it.
func (a *api) classify(endpoint string, resp *http.Response, answer []byte, out any) error {
	status := resp.StatusCode
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return tracking.Permanent(FieldCredentials, a.refused(endpoint, status))
	case status == http.StatusTooManyRequests || status >= 500:
		return fmt.Errorf("%s: MLflow at %s is overloaded or failing: it answered %s with HTTP %d%s", FieldSink, a.where(), endpoint, status, mlflowMessage(answer))
	case status >= 200 && status < 300:
		if out == nil {
			out = &json.RawMessage{}
		}
		if err := json.Unmarshal(answer, out); err != nil {
			return tracking.Permanent(FieldTrackingURI, a.notMLflow(endpoint, resp, fmt.Sprintf("its answer is not MLflow's JSON (%v)", err)))
		}
		return nil
	}
	var e struct {
		Code    string `json:"error_code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(answer, &e) == nil && e.Code != "" {
		return &APIError{URI: a.where(), Endpoint: endpoint, Status: status, Code: e.Code, Message: e.Message}
	}
	if status == http.StatusNotFound {
		return tracking.Permanent(FieldTrackingURI, a.notMLflow(endpoint, resp, "it has no such API"))
	}
	return fmt.Errorf("%s: MLflow at %s answered %s with HTTP %d, not in MLflow's JSON", FieldSink, a.where(), endpoint, status)
}

// refused is the error of credentials the server refused (or that it requires when
// none were sent), naming no credential.
func (a *api) refused(endpoint string, status int) error {
	if a.auth == "" {
		return fmt.Errorf("MLflow at %s refused %s (HTTP %d) without credentials: the tracker requires them; name a Secret with a token, or a username and password", a.where(), endpoint, status)
	}
	return fmt.Errorf("MLflow at %s refused the credentials (HTTP %d on %s): fix the token, or the username and password, in the Secret, or the user's permissions on the experiment", a.where(), status, endpoint)
}

// notMLflow is the error of a URI that answers as no MLflow tracking server.
func (a *api) notMLflow(endpoint string, resp *http.Response, why string) error {
	return fmt.Errorf("%s answers as no MLflow tracking server: HTTP %d (%s) to %s%s, and %s; write the address of the server (the URL its UI is at, without /api/...)",
		a.where(), resp.StatusCode, contentType(resp), apiPath, endpoint, why)
}

// contentType names the type of an answer for messages.
func contentType(resp *http.Response) string {
	if t := resp.Header.Get("Content-Type"); t != "" {
		return t
	}
	return "no Content-Type"
}

// mlflowMessage returns ": <error_code>: <message>" of MLflow's JSON error in answer,
// empty when there is none.
func mlflowMessage(answer []byte) string {
	var e struct {
		Code    string `json:"error_code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(answer, &e) != nil || e.Code == "" {
		return ""
	}
	return ": " + e.Code + ": " + e.Message
}

// The messages of MLflow's REST API, as far as the sink reads and writes them.

type experiment struct {
	ID             string `json:"experiment_id"`
	Name           string `json:"name"`
	LifecycleStage string `json:"lifecycle_stage"`
}

type mlflowRun struct {
	Info struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	} `json:"info"`
	Data struct {
		Metrics []metric `json:"metrics"`
	} `json:"data"`
}

// metric is a metric as log-batch takes it and runs/get answers it.
type metric struct {
	Key       string    `json:"key"`
	Value     jsonFloat `json:"value"`
	Timestamp int64     `json:"timestamp"`
	Step      int64     `json:"step"`
}

type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// jsonFloat is a float64 in the protobuf JSON mapping that MLflow's API speaks: NaN,
// +Inf and -Inf are the strings "NaN", "Infinity" and "-Infinity".
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	switch s {
	case "NaN":
		*f = jsonFloat(math.NaN())
	case "Infinity":
		*f = jsonFloat(math.Inf(1))
	case "-Infinity":
		*f = jsonFloat(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("metric value %s: %w", b, err)
		}
		*f = jsonFloat(v)
	}
	return nil
}
