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
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relistenTimeout bounds Up's tries to listen on the Switch's port again: a
// connection's local end may hold the port for a moment.
const relistenTimeout = 5 * time.Second

// FailedAnswer is the body of the 503 a Switch answers to a request its filter
// fails, as an overloaded MLflow answers.
const FailedAnswer = `{"error_code": "TEMPORARILY_UNAVAILABLE", "message": "the proxy failed it"}`

// Switch is an HTTP proxy on loopback to a tracking server, that a test takes down
// and brings back up while a client uses it. Down, the tracker is gone as when its
// process or machine is: a new connection is refused, and each open connection,
// with the request in flight on it, is closed. Its methods are safe for concurrent
// use.
type Switch struct {
	t         testing.TB
	addr      string // host:port it listens on, down or up
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	passed    atomic.Int64
	handling  atomic.Int64 // requests in the handler now

	mu       sync.Mutex // guards the fields below
	srv      *http.Server
	cancel   context.CancelFunc // of the contexts of srv's requests
	down     bool
	closed   bool
	delay    time.Duration
	pass     func(r *http.Request, body []byte) bool
	inFlight sync.WaitGroup

	passing sync.Mutex // one call of pass at a time
}

// NewSwitch starts a Switch, up, to target (a URI such as Server.URI), closed at
// t's end.
func NewSwitch(t testing.TB, target string) *Switch {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("switch to %q: %v", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Switch{t: t, addr: l.Addr().String(), proxy: httputil.NewSingleHostReverseProxy(u)}
	s.transport = http.DefaultTransport.(*http.Transport).Clone()
	s.proxy.Transport = s.transport
	s.proxy.ErrorHandler = proxyError
	s.serve(l)
	t.Cleanup(s.close)
	return s
}

// URI is the tracking URI of the server behind the switch, http://127.0.0.1:<port>,
// the same down and up.
func (s *Switch) URI() string { return "http://" + s.addr }

// Handling is how many requests the switch is handling now: waiting (Slow), being
// filtered or passed on.
func (s *Switch) Handling() int { return int(s.handling.Load()) }

// Passed is how many requests the switch has passed to the server.
func (s *Switch) Passed() int { return int(s.passed.Load()) }

// Down takes the tracker down: the switch stops listening (a connection is
// refused) and closes every connection to it. Down when down does nothing.
func (s *Switch) Down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down || s.closed {
		return
	}
	s.stopServing()
	s.down = true
}

// Up brings the tracker back up, on the same port; up, it does nothing. Where the
// port cannot be listened on again within a few seconds it fails the test, and the
// switch stays down.
func (s *Switch) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down || s.closed {
		return
	}
	deadline := time.Now().Add(relistenTimeout)
	for {
		l, err := net.Listen("tcp", s.addr)
		if err == nil {
			s.serve(l)
			s.down = false
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("the switch cannot listen on %s again: %v", s.addr, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Slow makes each request wait d before it goes on, as to a slow tracker; 0 ends
// the wait. Down ends the waits.
func (s *Switch) Slow(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Filter shows each request that reaches the switch after, and its body, to pass,
// one call at a time; the switch answers the requests pass reports false for itself,
// with HTTP 503 and FailedAnswer, and passes the others on. pass may do what it
// likes meanwhile (such as send a request of its own to the server). Nil passes
// every request.
func (s *Switch) Filter(pass func(r *http.Request, body []byte) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pass = pass
}

// serve serves on l, the switch's lock held or not yet shared.
func (s *Switch) serve(l net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: time.Minute,
	}
	s.cancel = cancel
	go func(srv *http.Server) { _ = srv.Serve(l) }(s.srv)
}

// stopServing closes the listener and every connection, and ends the requests in
// flight (their wait, their request to the server), the switch's lock held.
func (s *Switch) stopServing() {
	_ = s.srv.Close()
	s.cancel()
	s.srv = nil
}

// proxyError answers a request the switch could not pass on: not at all where the
// switch went down meanwhile, else with HTTP 502, as a gateway to a server that is
// not there.
func proxyError(w http.ResponseWriter, r *http.Request, _ error) {
	if r.Context().Err() != nil {
		panic(http.ErrAbortHandler)
	}
	w.WriteHeader(http.StatusBadGateway)
}

func (s *Switch) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "the switch is closed", http.StatusServiceUnavailable)
		return
	}
	s.inFlight.Add(1)
	defer s.inFlight.Done()
	s.handling.Add(1)
	defer s.handling.Add(-1)
	delay, pass := s.delay, s.pass
	s.mu.Unlock()

	if delay > 0 {
		wait := time.NewTimer(delay)
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-r.Context().Done():
			panic(http.ErrAbortHandler) // no answer
		}
	}
	if pass != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			panic(http.ErrAbortHandler) // the client is gone
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.passing.Lock()
		ok := pass(r, body)
		s.passing.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, FailedAnswer)
			return
		}
	}
	s.passed.Add(1)
	s.proxy.ServeHTTP(w, r)
}

// close closes the switch and waits for the requests it is handling, so that none
// calls a filter after the test.
func (s *Switch) close() {
	s.mu.Lock()
	s.closed = true
	if s.srv != nil {
		s.stopServing()
	}
	s.mu.Unlock()
	s.inFlight.Wait()
	s.transport.CloseIdleConnections()
}
