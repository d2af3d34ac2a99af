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
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking"
	"github.com/espo-dev/espo-operator/trainer/tracking/mlflow"
)

// The tests of this file put servers that are not MLflow, or an MLflow that is not
// there, where the tracking URI points: what the sink makes of their answers.

// answering returns the URI of a server that answers every request with status,
// contentType and body.
func answering(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// openAt opens a run with a Client of cfg, its experiment set, and returns the error.
func openAt(t *testing.T, cfg mlflow.Config) error {
	t.Helper()
	cfg.Experiment = "espo"
	c, err := mlflow.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = c.Open(context.Background(), jobRun("3f9c1d52-0000-4000-8000-0000000000e1"))
	return err
}

const htmlPage = "<!doctype html><html><body><h1>Not Found</h1></body></html>"

// TestURIThatAnswersAsNoMLflowIsPermanent points the tracking URI at servers that
// are no MLflow: a 404 page, an HTML page answered with 200 (a web app's catch-all
// route), and JSON that is not MLflow's. The error is permanent and names the
// tracking URI.
func TestURIThatAnswersAsNoMLflowIsPermanent(t *testing.T) {
	for name, uri := range map[string]string{
		"404 HTML": answering(t, http.StatusNotFound, "text/html", htmlPage),
		"404 text": answering(t, http.StatusNotFound, "text/plain", "404 page not found"),
		"200 HTML": answering(t, http.StatusOK, "text/html", htmlPage),
		"200 JSON": answering(t, http.StatusOK, "application/json", `{"status": "ok"}`),
	} {
		t.Run(name, func(t *testing.T) {
			checkPermanent(t, openAt(t, mlflow.Config{TrackingURI: uri}), mlflow.FieldTrackingURI, "answers as no MLflow tracking server")
		})
	}
}

// TestRefusedCredentialsArePermanent points the tracking URI at a server that
// refuses the request (401, 403): the error is permanent, names the credentials'
// field, and quotes no credential.
func TestRefusedCredentialsArePermanent(t *testing.T) {
	const token = "s3cr3t-t0ken"
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		uri := answering(t, status, "text/plain", "You are not authenticated.")
		err := openAt(t, mlflow.Config{TrackingURI: uri, Token: token})
		checkPermanent(t, err, mlflow.FieldCredentials, "refused the credentials")
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("the error quotes the token: %v", err)
		}
		err = openAt(t, mlflow.Config{TrackingURI: uri, Username: "ada", Password: token})
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("the error quotes the password: %v", err)
		}
		checkPermanent(t, openAt(t, mlflow.Config{TrackingURI: uri}), mlflow.FieldCredentials, "without credentials")
	}
}

// TestUnreachableOrFailingTrackerIsTransient points the tracking URI at a closed
// port, at servers that fail (503) or throttle (429), and at one slower than the
// request timeout: each error is transient (the run goes on, the sink retries) and
// names the URI.
func TestUnreachableOrFailingTrackerIsTransient(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(slow.Close)

	for _, tc := range []struct {
		name, uri, words string
		timeout          time.Duration
	}{
		{"closed port", closed, "is unreachable", 0},
		{"503", answering(t, http.StatusServiceUnavailable, "text/html", "<html>upstream down</html>"), "HTTP 503", 0},
		{"429", answering(t, http.StatusTooManyRequests, "application/json", `{"error_code": "REQUEST_LIMIT_EXCEEDED", "message": "slow down"}`), "REQUEST_LIMIT_EXCEEDED: slow down", 0},
		{"slow", slow.URL, "did not answer experiments/get-by-name within 50ms", 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openAt(t, mlflow.Config{TrackingURI: tc.uri, RequestTimeout: tc.timeout})
			if err == nil || tracking.IsPermanent(err) || !strings.Contains(err.Error(), tc.uri) || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("error %v, want a transient one naming %s and saying %q", err, tc.uri, tc.words)
			}
		})
	}
}

// TestCredentialsAreSentAsMLflowSendsThem checks the Authorization header of a
// token (MLFLOW_TRACKING_TOKEN) and of a username and password
// (MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD).
func TestCredentialsAreSentAsMLflowSendsThem(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		cfg  mlflow.Config
		want string
	}{
		{mlflow.Config{TrackingURI: srv.URL, Token: "t0ken"}, "Bearer t0ken"},
		{mlflow.Config{TrackingURI: srv.URL, Username: "ada", Password: "l0velace"}, "Basic YWRhOmwwdmVsYWNl"},
		{mlflow.Config{TrackingURI: srv.URL}, ""},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		_ = openAt(t, tc.cfg)
		mu.Lock()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("Authorization headers %q, want one %q", got, tc.want)
		}
		mu.Unlock()
	}
}

// TestNewRefusesABadConfig checks the permanent errors of New, each naming the field
// to fix.
func TestNewRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   mlflow.Config
		field string
		words string
	}{
		{"file URI", mlflow.Config{TrackingURI: "file:///mlruns", Experiment: "e"}, mlflow.FieldTrackingURI, "no http or https URL"},
		{"no scheme", mlflow.Config{TrackingURI: "mlflow:5000", Experiment: "e"}, mlflow.FieldTrackingURI, "no http or https URL"},
		{"empty URI", mlflow.Config{Experiment: "e"}, mlflow.FieldTrackingURI, "no http or https URL"},
		{"bad escape", mlflow.Config{TrackingURI: "http://ada:s3cr3t%zz@mlflow:5000", Experiment: "e"}, mlflow.FieldTrackingURI, "does not parse"},
		{"credentials in URI", mlflow.Config{TrackingURI: "http://ada:s3cr3t@mlflow:5000", Experiment: "e"}, mlflow.FieldTrackingURI, "holds credentials"},
		{"no experiment", mlflow.Config{TrackingURI: "http://mlflow:5000"}, mlflow.FieldExperiment, "no experiment name"},
		{"token and username", mlflow.Config{TrackingURI: "http://mlflow:5000", Experiment: "e", Token: "t", Username: "u", Password: "p"}, mlflow.FieldCredentials, "not both"},
		{"username alone", mlflow.Config{TrackingURI: "http://mlflow:5000", Experiment: "e", Username: "u"}, mlflow.FieldCredentials, "without a password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mlflow.New(tc.cfg)
			checkPermanent(t, err, tc.field, tc.words)
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

// TestMethodsBeforeOpenFail checks that a Client records nothing before Open.
func TestMethodsBeforeOpenFail(t *testing.T) {
	ctx := context.Background()
	c, err := mlflow.New(mlflow.Config{TrackingURI: "http://mlflow:5000", Experiment: "e"})
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"LogParams": c.LogParams(ctx, map[string]string{"a": "b"}),
		"SetTags":   c.SetTags(ctx, map[string]string{"a": "b"}),
		"Log":       c.Log(ctx, []tracking.Point{{Key: "a", Step: 1}}),
		"Close":     c.Close(ctx, "Succeeded"),
	} {
		if err == nil || !strings.Contains(err.Error(), "not open") {
			t.Errorf("%s before Open: %v, want an error saying the run is not open", name, err)
		}
	}
	if c.Name() != "spec.tracking.mlflow" {
		t.Errorf("Name() = %q", c.Name())
	}
}
