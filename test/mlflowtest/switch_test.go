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

package mlflowtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/espo-dev/espo-operator/test/mlflowtest"
)

// target returns the URI of a server that answers each request "ok", and the count
// of requests it has answered.
func target(t *testing.T) (string, *atomic.Int64) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &served
}

// get sends GET uri/health with c and returns the status and body, or the error.
func get(c *http.Client, uri string) (int, string, error) {
	resp, err := c.Get(uri + "/health")
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestSwitchDownRefusesAndUpPassesAgain: up, the switch passes requests on and
// counts them; down, a connection is refused and nothing reaches the server; up
// again, on the same URI, a client that used it before gets through.
func TestSwitchDownRefusesAndUpPassesAgain(t *testing.T) {
	uri, served := target(t)
	sw := mlflowtest.NewSwitch(t, uri)
	c := &http.Client{Timeout: 10 * time.Second}
	if status, body, err := get(c, sw.URI()); err != nil || status != http.StatusOK || body != "ok" {
		t.Fatalf("up: %d %q %v, want 200 ok", status, body, err)
	}
	sw.Down()
	sw.Down()
	for range 2 {
		if _, _, err := get(c, sw.URI()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("down: %v, want the connection refused", err)
		}
	}
	sw.Up()
	sw.Up()
	if status, _, err := get(c, sw.URI()); err != nil || status != http.StatusOK {
		t.Fatalf("up again: %d %v, want 200", status, err)
	}
	if sw.Passed() != 2 || served.Load() != 2 {
		t.Errorf("passed %d, served %d; want 2 each", sw.Passed(), served.Load())
	}
}

// TestSwitchDownEndsARequestInFlight: a request waiting in the switch (Slow) fails
// as soon as the switch goes down, and never reaches the server.
func TestSwitchDownEndsARequestInFlight(t *testing.T) {
	uri, served := target(t)
	sw := mlflowtest.NewSwitch(t, uri)
	sw.Slow(time.Hour)
	failed := make(chan error, 1)
	go func() {
		_, _, err := get(&http.Client{}, sw.URI())
		failed <- err
	}()
	waitFor(t, "the request reaches the switch", func() bool { return sw.Handling() == 1 })
	began := time.Now()
	sw.Down()
	select {
	case err := <-failed:
		if err == nil {
			t.Error("the request in flight succeeded, want it to fail")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight still waits 10 s after Down")
	}
	if d := time.Since(began); d > 5*time.Second || served.Load() != 0 {
		t.Errorf("the request failed %s after Down, and %d reached the server; want at once, none", d, served.Load())
	}
}

// TestSwitchSlowAndFilter: Slow delays each request; a filter sees each request's
// body and fails those it reports false for with MLflow's 503.
func TestSwitchSlowAndFilter(t *testing.T) {
	uri, served := target(t)
	sw := mlflowtest.NewSwitch(t, uri)
	sw.Slow(200 * time.Millisecond)
	began := time.Now()
	if status, _, err := get(http.DefaultClient, sw.URI()); err != nil || status != http.StatusOK || time.Since(began) < 200*time.Millisecond {
		t.Errorf("slow: %d %v after %s, want 200 after 200ms", status, err, time.Since(began))
	}
	sw.Slow(0)
	var bodies []string
	sw.Filter(func(r *http.Request, body []byte) bool {
		bodies = append(bodies, string(body))
		return !strings.Contains(string(body), "fail")
	})
	for _, body := range []string{"pass", "fail"} {
		resp, err := http.Post(sw.URI()+"/api", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		want := http.StatusOK
		if body == "fail" {
			want = http.StatusServiceUnavailable
		}
		if resp.StatusCode != want || want != http.StatusOK && string(answer) != mlflowtest.FailedAnswer {
			t.Errorf("%s: %d %s, want %d", body, resp.StatusCode, answer, want)
		}
	}
	if strings.Join(bodies, ",") != "pass,fail" || sw.Passed() != 2 || served.Load() != 2 {
		t.Errorf("the filter saw %q; passed %d, served %d; want both bodies, 2 each", bodies, sw.Passed(), served.Load())
	}
}

// TestSwitchIsSafeForConcurrentUse sends requests from several goroutines while
// another takes the switch down and up (go test -race checks the rest): once up,
// every client gets through.
func TestSwitchIsSafeForConcurrentUse(t *testing.T) {
	uri, _ := target(t)
	sw := mlflowtest.NewSwitch(t, uri)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
					_, _, _ = get(c, sw.URI())
					_ = sw.Passed()
				}
			}
		})
	}
	for i := range 20 {
		sw.Down()
		sw.Slow(time.Duration(i%2) * time.Millisecond)
		sw.Up()
		passed := sw.Passed()
		waitFor(t, "a client gets through the switch, up again", func() bool { return sw.Passed() > passed })
	}
	close(stop)
	wg.Wait()
	if status, _, err := get(http.DefaultClient, sw.URI()); err != nil || status != http.StatusOK {
		t.Errorf("up after the toggling: %d %v, want 200", status, err)
	}
}

// waitFor polls cond until it holds, failing the test after the named timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const timeout = 30 * time.Second
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("after %v: %s", timeout, what)
	}
}
