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

package embedding

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// vectorOf is the fake service's embedding of a text: its length, its first byte, 1.
func vectorOf(text string) []float64 {
	first := 0.0
	if text != "" {
		first = float64(text[0])
	}
	return []float64{float64(len(text)), first, 1}
}

// item is one entry of an answer's data.
type item struct {
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// service is a fake embedding service. Each request is recorded; the n-th is answered
// by script[n] when there is one, else with every input's vectorOf, in index order.
type service struct {
	t      *testing.T
	srv    *httptest.Server
	script []func(w http.ResponseWriter, req request)

	mu       sync.Mutex
	requests []request
}

func newService(t *testing.T, script ...func(w http.ResponseWriter, req request)) *service {
	s := &service{t: t, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *service) url() string { return s.srv.URL + "/v1/embeddings" }

func (s *service) serve(w http.ResponseWriter, r *http.Request) {
	var req request
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want POST /v1/embeddings with JSON", http.StatusMethodNotAllowed)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if n < len(s.script) && s.script[n] != nil {
		s.script[n](w, req)
		return
	}
	answer(w, inOrder(req.Input))
}

// recorded returns the requests received so far.
func (s *service) recorded() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

// inOrder returns the data of an answer to inputs, in index order.
func inOrder(inputs []string) []item {
	data := make([]item, len(inputs))
	for i, text := range inputs {
		data[i] = item{Index: i, Embedding: vectorOf(text)}
	}
	return data
}

func answer(w http.ResponseWriter, data []item) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
}

// status answers with an HTTP status and a body.
func status(code int, body string) func(w http.ResponseWriter, req request) {
	return func(w http.ResponseWriter, _ request) { http.Error(w, body, code) }
}

// raw answers 200 with a body as it is.
func raw(body string) func(w http.ResponseWriter, req request) {
	return func(w http.ResponseWriter, _ request) { _, _ = w.Write([]byte(body)) }
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// waits records the retry waits and returns at once.
type waits struct{ got []time.Duration }

func (w *waits) wait(_ context.Context, d time.Duration) error {
	w.got = append(w.got, d)
	return nil
}

func newTestClient(t *testing.T, s *service, cfg Config) (*Client, *waits) {
	t.Helper()
	w := &waits{}
	cfg.Endpoint, cfg.Wait = s.url(), w.wait
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

func TestEmbedSendsBatchesWithTheModelAndKeepsTheOrder(t *testing.T) {
	s := newService(t)
	c, _ := newTestClient(t, s, Config{Model: "encoder-v1", BatchSize: 2})
	texts := []string{"a cheap hotel", "near the station", "", "vegan food", "a flight on Friday"}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !reflect.DeepEqual(got[i], vectorOf(text)) {
			t.Errorf("vector %d = %v, want that of %q, %v", i, got[i], text, vectorOf(text))
		}
	}
	want := []request{
		{Model: "encoder-v1", Input: texts[0:2]},
		{Model: "encoder-v1", Input: texts[2:4]},
		{Model: "encoder-v1", Input: texts[4:5]},
	}
	if reqs := s.recorded(); !reflect.DeepEqual(reqs, want) {
		t.Errorf("requests %+v, want %+v", reqs, want)
	}
}

func TestEmbedOmitsAnEmptyModelAndSendsNothingForNoText(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		bodies = append(bodies, fmt.Sprint(m))
		mu.Unlock()
		answer(w, inOrder([]string{"x"}))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Embed(context.Background(), nil); err != nil || len(got) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", got, err)
	}
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"map[input:[x]]"}; !reflect.DeepEqual(bodies, want) {
		t.Errorf("request bodies %q, want %q", bodies, want)
	}
}

func TestEmbedPutsVectorsAtTheirIndex(t *testing.T) {
	shuffled := func(w http.ResponseWriter, req request) {
		data := inOrder(req.Input)
		answer(w, []item{data[2], data[0], data[3], data[1]})
	}
	s := newService(t, shuffled)
	c, _ := newTestClient(t, s, Config{})
	texts := []string{"alpha", "bb", "c", "dddd"}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !reflect.DeepEqual(got[i], vectorOf(text)) {
			t.Errorf("vector %d = %v, want that of %q", i, got[i], text)
		}
	}
}

func TestEmbedRetriesFailuresThatMayPass(t *testing.T) {
	s := newService(t, status(500, "warming up"), hangUp, status(429, "slow down"))
	c, w := newTestClient(t, s, Config{})
	got, err := c.Embed(context.Background(), []string{"x"})
	if err != nil {
		t.Fatalf("the fourth attempt succeeds, got %v", err)
	}
	if !reflect.DeepEqual(got, [][]float64{vectorOf("x")}) {
		t.Errorf("got %v", got)
	}
	if n := len(s.recorded()); n != Attempts {
		t.Errorf("%d requests, want %d", n, Attempts)
	}
	if want := []time.Duration{FirstBackoff, 2 * FirstBackoff, 4 * FirstBackoff}; !reflect.DeepEqual(w.got, want) {
		t.Errorf("waits %v, want %v", w.got, want)
	}
}

func TestEmbedGivesUpAfterTheLastAttempt(t *testing.T) {
	fail := status(503, "the model is loading")
	s := newService(t, fail, fail, fail, fail, fail)
	c, w := newTestClient(t, s, Config{})
	_, err := c.Embed(context.Background(), []string{"x"})
	for _, want := range []string{"embedding service " + s.url(), "HTTP 503 Service Unavailable", "the model is loading", "gave up after 4 attempts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	if n := len(s.recorded()); n != Attempts || len(w.got) != Attempts-1 {
		t.Errorf("%d requests and %d waits, want %d and %d", n, len(w.got), Attempts, Attempts-1)
	}
}

func TestEmbedFailsAtOnceOnAClientError(t *testing.T) {
	s := newService(t, status(400, `{"error": {"message": "model \"encoder-v9\" does not exist"}}`))
	c, w := newTestClient(t, s, Config{Model: "encoder-v9"})
	_, err := c.Embed(context.Background(), []string{"x"})
	for _, want := range []string{"embedding service " + s.url(), "HTTP 400 Bad Request", `model \"encoder-v9\" does not exist`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	if n := len(s.recorded()); n != 1 || len(w.got) != 0 {
		t.Errorf("%d requests and %d waits, want 1 and none: a 4xx is not retried", n, len(w.got))
	}
}

func TestEmbedQuotesOnlyTheStartOfALongBody(t *testing.T) {
	s := newService(t, status(404, strings.Repeat("no such route ", 100)))
	c, _ := newTestClient(t, s, Config{})
	_, err := c.Embed(context.Background(), []string{"x"})
	if err == nil || len(err.Error()) > len(s.url())+300 || !strings.HasSuffix(err.Error(), "...") {
		t.Errorf("error %v: want the body cut to %d bytes and marked", err, snippetBytes)
	}
}

func TestEmbedRefusesAMalformedAnswer(t *testing.T) {
	two := []string{"a", "b"}
	cases := map[string]struct {
		answer func(w http.ResponseWriter, req request)
		want   string
	}{
		"too few":  {func(w http.ResponseWriter, req request) { answer(w, inOrder(req.Input)[:1]) }, "1 embeddings for 2 inputs"},
		"no index": {raw(`{"data": [{"embedding": [1]}, {"index": 1, "embedding": [1]}]}`), "data[0] has no index"},
		"index out of range": {func(w http.ResponseWriter, req request) {
			d := inOrder(req.Input)
			d[1].Index = 2
			answer(w, d)
		}, "data[1].index 2 is not in [0, 2)"},
		"index twice": {func(w http.ResponseWriter, req request) {
			d := inOrder(req.Input)
			d[1].Index = 0
			answer(w, d)
		}, "index 0 comes more than once"},
		"dimensions differ": {func(w http.ResponseWriter, req request) {
			d := inOrder(req.Input)
			d[1].Embedding = d[1].Embedding[:2]
			answer(w, d)
		}, "the embedding of input 1 has 2 dimensions, that of input 0 has 3"},
		"empty vector": {raw(`{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}`), "the embedding of input 0 is empty"},
		"NaN":          {raw(`{"data": [{"index": 0, "embedding": [NaN, 1]}, {"index": 1, "embedding": [1, 1]}]}`), "the response is not embeddings JSON"},
		"base64":       {raw(`{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": "AAAA"}]}`), "the response is not embeddings JSON"},
		"not JSON":     {raw(`<html>gateway</html>`), "<html>gateway</html>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newService(t, tc.answer)
			c, _ := newTestClient(t, s, Config{})
			_, err := c.Embed(context.Background(), two)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.url()) {
				t.Errorf("error %v, want one naming the endpoint and %q", err, tc.want)
			}
			if n := len(s.recorded()); n != 1 {
				t.Errorf("%d requests, want 1: a malformed answer is not retried", n)
			}
		})
	}
}

func TestCheckVectorsRefusesNonFiniteValues(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		err := checkVectors([][]float64{{0, 1}, {1, x}})
		if err == nil || !strings.Contains(err.Error(), "input 1 has the non-finite value") {
			t.Errorf("checkVectors with %v: %v", x, err)
		}
	}
	if err := checkVectors([][]float64{{0, 1}, {-1e300, 0}}); err != nil {
		t.Errorf("finite vectors refused: %v", err)
	}
}

func TestEmbedKeepsOneDimensionForTheClientsLife(t *testing.T) {
	s := newService(t, nil, func(w http.ResponseWriter, req request) {
		answer(w, []item{{Index: 0, Embedding: []float64{1, 2}}})
	})
	c, _ := newTestClient(t, s, Config{})
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Embed(context.Background(), []string{"y"})
	if err == nil || !strings.Contains(err.Error(), "vectors of dimension 2, earlier ones had 3") {
		t.Errorf("error %v, want a dimension change refused", err)
	}
}

func TestEmbedRetriesATimeoutAndSaysSo(t *testing.T) {
	release := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(hang))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	w := &waits{}
	c, err := NewClient(Config{Endpoint: srv.URL, Timeout: 10 * time.Millisecond, Wait: w.wait})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "no answer within 10ms (timeoutSeconds)") || len(w.got) != Attempts-1 {
		t.Errorf("error %v after %d waits, want a timeout retried %d times", err, len(w.got), Attempts-1)
	}
}

func TestEmbedStopsRetryingWhenTheContextEnds(t *testing.T) {
	fail := status(500, "down")
	s := newService(t, fail, fail, fail, fail)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewClient(Config{Endpoint: s.url(), Wait: func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Embed(ctx, []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "retry cancelled: context canceled") {
		t.Errorf("error %v, want the retry cancelled", err)
	}
	if n := len(s.recorded()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for s, ok := range map[string]bool{
		"http://embeddings.ml.svc:8080/v1/embeddings":            true,
		"https://embeddings.ml.svc.cluster.local/v1/embeddings":  true,
		"http://10.0.0.7:8000/v1/embeddings":                     true,
		"http://[fd00::7]:8000/embed":                            true,
		"embeddings.ml.svc:8080":                                 false,
		"ftp://embeddings.ml.svc/v1/embeddings":                  false,
		"http:///v1/embeddings":                                  false,
		"/v1/embeddings":                                         false,
		"":                                                       false,
		"http://embeddings.ml.svc:8080/v1/embeddings\n":          false,
		"grpc://embeddings.ml.svc:8080":                          false,
		"https://embeddings.ml.svc/v1/embeddings?dimensions=512": true,
		"http://user:secret@embeddings.ml.svc:8080/v1":           false,
		"https://sk-abc@embeddings.example/v1":                   false,
		"http://embeddings.ml.svc:0/v1":                          false,
		"http://embeddings.ml.svc:65536/v1":                      false,
		"http://embeddings.ml.svc:65535/v1":                      true,
	} {
		err := CheckEndpoint(s)
		if (err == nil) != ok {
			t.Errorf("CheckEndpoint(%q) = %v, want ok %v", s, err, ok)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sk-abc")) {
			t.Errorf("CheckEndpoint(%q) quotes the credentials: %v", s, err)
		}
	}
}

// testAPIKey is a made-up API key, long enough that a cut through it would show.
const testAPIKey = "espo-test-key/0123456789+abcdefghij<klmnop>"

func TestEmbedSendsTheAPIKeyAsABearerTokenWithEveryRequest(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req request
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		answer(w, inOrder(req.Input))
	}))
	t.Cleanup(srv.Close)
	texts := []string{"a cheap hotel", "near the station", "vegan food"}
	for _, tc := range []struct{ key, want string }{{testAPIKey, "Bearer " + testAPIKey}, {"", ""}} {
		auth = nil
		c, err := NewClient(Config{Endpoint: srv.URL, APIKey: tc.key, BatchSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Embed(context.Background(), texts); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if want := []string{tc.want, tc.want}; !reflect.DeepEqual(auth, want) {
			t.Errorf("key %q: Authorization headers %q, want %q", tc.key, auth, want)
		}
		mu.Unlock()
	}
}

// echoHeaders answers with an HTTP status and a body that quotes the request's
// Authorization header, as a careless service or proxy may, after pad: as Go's JSON
// encoder writes it (<, > escaped), with "/" escaped (as PHP's does), and raw.
func echoHeaders(code int, pad string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		quoted, _ := json.Marshal(auth)
		w.WriteHeader(code)
		fmt.Fprintf(w, `%s{"error": "invalid token", "authorization": %s, "escaped": "%s", "raw": "%s"}`,
			pad, quoted, strings.ReplaceAll(auth, "/", `\/`), auth)
	}
}

func TestEmbedNeverPutsTheAPIKeyInAnError(t *testing.T) {
	for name, tc := range map[string]struct {
		handler http.HandlerFunc
		want    []string
	}{
		"401 quoting the header": {echoHeaders(http.StatusUnauthorized, ""),
			[]string{"HTTP 401 Unauthorized", `"authorization": "Bearer ` + Redacted + `"`, "invalid token"}},
		"500, retried, quoting the header": {echoHeaders(http.StatusInternalServerError, ""),
			[]string{"HTTP 500", "Bearer " + Redacted, "gave up after 4 attempts"}},
		"200 that is not JSON, quoting the header": {echoHeaders(http.StatusOK, "oops "),
			[]string{"is not embeddings JSON", "oops", "Bearer " + Redacted}},
		"the key cut at the end of the quoted part": { // white space collapsed, it would be in the snippet
			echoHeaders(http.StatusForbidden, "denied"+strings.Repeat(" ", 4*snippetBytes-len("denied")-len(`{"error": "invalid token", "authorization": "Bearer `)-20)),
			[]string{"HTTP 403 Forbidden", `denied {"error": "invalid token", "authorization": "Bearer`}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			c, err := NewClient(Config{Endpoint: srv.URL, APIKey: testAPIKey, Wait: (&waits{}).wait})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Embed(context.Background(), []string{"x"})
			if err == nil {
				t.Fatal("no error")
			}
			for _, part := range []string{testAPIKey[:12], testAPIKey[len(testAPIKey)-12:], "0123456789"} {
				if strings.Contains(err.Error(), part) {
					t.Errorf("the error quotes the API key (%q): %v", part, err)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestFailRedactsAnAPIKeyFromAnyError(t *testing.T) {
	c, err := NewClient(Config{Endpoint: "http://embeddings.ml.svc/v1/embeddings", APIKey: testAPIKey})
	if err != nil {
		t.Fatal(err)
	}
	got := c.fail(fmt.Errorf("wrapped: %w", fmt.Errorf("sent Bearer %s", testAPIKey))).Error()
	if want := "embedding service http://embeddings.ml.svc/v1/embeddings: wrapped: sent Bearer " + Redacted; got != want {
		t.Errorf("fail = %q, want %q", got, want)
	}
}

func TestCheckAPIKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"":                    true,
		testAPIKey:            true,
		"a b":                 true,
		"secret-value\n":      false, // a file's line break: kubectl create secret --from-file
		" secret-value":       false,
		"secret\r\nX-Evil: 1": false,
		"secret\x7f":          false,
		"secret\tvalue":       false,
	} {
		err := CheckAPIKey(key)
		if (err == nil) != ok {
			t.Errorf("CheckAPIKey(%q) = %v, want ok %v", key, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckAPIKey(%q) quotes the key: %v", key, err)
		}
		if _, err := NewClient(Config{Endpoint: "http://embeddings.ml.svc/v1/embeddings", APIKey: key}); (err == nil) != ok {
			t.Errorf("NewClient with key %q: %v, want ok %v", key, err, ok)
		}
	}
}
