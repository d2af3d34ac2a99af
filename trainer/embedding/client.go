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

// Package embedding puts an embedding service behind the intent reward
// (spec.rewards.intent.embedder): a Client of the OpenAI-compatible embeddings API,
// and a Cache that implements espo.Embedder from embeddings fetched before a scoring
// pass, since an espo reward can neither wait for the network nor fail.
package embedding

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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Defaults of Config, the same as the API's (v1alpha1.EmbedderSpec).
const (
	DefaultTimeout   = 30 * time.Second
	DefaultBatchSize = 256
)

const (
	// Attempts is how often one batch is sent before the client gives up on a
	// failure that may pass: a connection error, a timeout, HTTP 429 or 5xx. Other
	// failures (HTTP 4xx, a malformed answer) are not retried.
	Attempts = 4
	// FirstBackoff is the wait before the first retry; each later wait doubles.
	FirstBackoff = time.Second
	// maxResponseBytes bounds a response body: 256 texts of 4,096 dimensions are
	// about 20 MiB of JSON.
	maxResponseBytes = 256 << 20
	// snippetBytes bounds the part of a response body quoted in an error.
	snippetBytes = 200
)

// Config configures a Client.
type Config struct {
	// Endpoint is the URL the client POSTs to, http or https.
	Endpoint string
	// Model is sent as the request's "model"; empty omits it.
	Model string
	// APIKey, when not empty, is sent as "Authorization: Bearer <APIKey>" with every
	// request. The client never puts it in an error: where an answer quotes it (a
	// service that echoes the request's headers), it is replaced by Redacted.
	APIKey string
	// Timeout bounds each request (each attempt); 0 means DefaultTimeout.
	Timeout time.Duration
	// BatchSize is the most texts in one request; 0 means DefaultBatchSize.
	BatchSize int
	// HTTPClient sends the requests; nil means a new http.Client.
	HTTPClient *http.Client
	// Wait waits d before a retry and returns early with ctx's error when ctx ends;
	// nil waits on a timer. Tests return at once.
	Wait func(ctx context.Context, d time.Duration) error
}

// Redacted stands for the API key wherever an answer of the service quoted it.
const Redacted = "[redacted]"

// Client calls an embedding service that speaks the OpenAI-compatible embeddings API:
//
//	POST endpoint  {"model": model, "input": [text, ...]}
//	               (Authorization: Bearer <APIKey>, with an API key)
//	200            {"data": [{"index": i, "embedding": [x, ...]}, ...]}
//
// It may be used by several goroutines at once.
type Client struct {
	cfg Config
	// secrets are the spellings of the API key an answer may quote (spellings): as it
	// is, and as JSON encoders write it; none without a key.
	secrets []string
	// dim is the dimension of every vector returned so far, 0 before the first.
	dim atomic.Int64
}

// NewClient returns a Client for cfg with its defaults filled in. It returns an error
// when the endpoint is not an http or https URL with a host, a bound is negative, or
// the API key cannot be sent in a header.
func NewClient(cfg Config) (*Client, error) {
	if err := CheckEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	if err := CheckAPIKey(cfg.APIKey); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.BatchSize < 0 {
		return nil, fmt.Errorf("embedding: negative timeout %v or batch size %d", cfg.Timeout, cfg.BatchSize)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Wait == nil {
		cfg.Wait = waitOnTimer
	}
	return &Client{cfg: cfg, secrets: spellings(cfg.APIKey)}, nil
}

// spellings returns key as it is and as JSON encoders may write it inside a string
// (escaping quotes and backslashes, and HTML characters, "/", both or neither), each
// once; none for an empty key. Longer spellings come first, so that none is left
// half replaced by a shorter one.
func spellings(key string) []string {
	if key == "" {
		return nil
	}
	out := []string{key}
	for _, html := range []bool{false, true} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(key) // a string always encodes: "...", then a line break
		inner := strings.TrimSuffix(b.String(), "\n")
		inner = inner[1 : len(inner)-1]
		for _, s := range []string{inner, strings.ReplaceAll(inner, "/", `\/`)} {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// CheckEndpoint returns an error unless s is an absolute http or https URL with a
// host, a port of 1-65535 if any, and no credentials: the rules the API server applies
// to spec.rewards.intent.embedder.endpoint. The error never quotes credentials.
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		bare := *u
		bare.User = nil
		return fmt.Errorf("the endpoint of host %s holds credentials (user:password@host), which would be copied into the run "+
			"config, events and logs; put the key in a Secret and name it in apiKeySecretRef", bare.Host)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
		return fmt.Errorf("%q is not an http or https URL with a host; use one such as http://embeddings.ml.svc:8080/v1/embeddings", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: the port must be between 1 and 65535", s)
		}
	}
	return nil
}

// CheckAPIKey returns an error, which does not quote the key, when key cannot be sent
// in an HTTP header: it has a control character (a line break, say) or white space at
// either end. An empty key is valid: none is sent.
func CheckAPIKey(key string) error {
	if strings.TrimSpace(key) != key {
		return errors.New("the API key has white space at its start or end")
	}
	for i, r := range key {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("the API key has a control character at byte %d", i)
		}
	}
	return nil
}

// Endpoint returns the URL the client POSTs to.
func (c *Client) Endpoint() string { return c.cfg.Endpoint }

// Embed returns the embeddings of texts in their order, asking the service for
// batches of at most BatchSize texts, one batch after the other. Every vector it has
// ever returned has the same non-zero length and finite values. Texts are sent as
// they are, empty ones too. Errors start with "embedding service <endpoint>".
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.BatchSize {
		vecs, err := c.embedBatch(ctx, texts[start:min(start+c.cfg.BatchSize, len(texts))])
		if err != nil {
			return nil, c.fail(err)
		}
		if err := c.keepDimension(len(vecs[0])); err != nil {
			return nil, c.fail(err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// keepDimension records the dimension of the first vectors and refuses any other
// afterwards: a service that changes its model mid-run would make cosines meaningless.
func (c *Client) keepDimension(dim int) error {
	if c.dim.CompareAndSwap(0, int64(dim)) {
		return nil
	}
	if had := c.dim.Load(); had != int64(dim) {
		return fmt.Errorf("vectors of dimension %d, earlier ones had %d", dim, had)
	}
	return nil
}

// fail prefixes err with the endpoint. Should the message still hold the API key
// (snippet redacts what the service answers, so nothing is known to put it there), it
// is replaced by a redacted copy, which drops the error chain.
func (c *Client) fail(err error) error {
	err = fmt.Errorf("embedding service %s: %w", c.cfg.Endpoint, err)
	if msg := err.Error(); c.redact(msg) != msg {
		return errors.New(c.redact(msg))
	}
	return err
}

// redact replaces every occurrence of the API key in s, as it is or as a JSON string
// spells it, by Redacted.
func (c *Client) redact(s string) string {
	for _, key := range c.secrets {
		s = strings.ReplaceAll(s, key, Redacted)
	}
	return s
}

// request is the body of an embeddings request.
type request struct {
	Model string   `json:"model,omitempty"`
	Input []string `json:"input"`
}

// embedBatch asks for the embeddings of one batch, up to Attempts times while the
// failure is one that may pass, waiting FirstBackoff, then twice as long, and so on.
func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float64, error) {
	body, err := json.Marshal(request{Model: c.cfg.Model, Input: texts})
	if err != nil {
		return nil, err
	}
	wait := FirstBackoff
	for attempt := 1; ; attempt++ {
		vecs, retry, err := c.post(ctx, body, len(texts))
		switch {
		case err == nil:
			return vecs, nil
		case !retry || ctx.Err() != nil:
			return nil, err
		case attempt == Attempts:
			return nil, fmt.Errorf("%w (gave up after %d attempts)", err, Attempts)
		}
		if werr := c.cfg.Wait(ctx, wait); werr != nil {
			return nil, fmt.Errorf("%w (retry cancelled: %v)", err, werr)
		}
		wait *= 2
	}
}

// post sends one request and decodes its answer into n vectors. retry says whether
// the failure may pass: a connection error, a timeout, HTTP 429 or 5xx.
func (c *Client) post(ctx context.Context, body []byte, n int) (vecs [][]float64, retry bool, err error) {
	attemptCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, c.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, true, c.explainTimeout(ctx, attemptCtx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, true, fmt.Errorf("reading the response: %w", c.explainTimeout(ctx, attemptCtx, err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, retryableStatus(resp.StatusCode), fmt.Errorf("HTTP %s: %s", resp.Status, c.snippet(data))
	}
	if len(data) > maxResponseBytes {
		return nil, false, fmt.Errorf("the response is larger than %d MiB: lower batchSize", maxResponseBytes>>20)
	}
	vecs, err = decodeResponse(data, n, c.snippet)
	return vecs, false, err
}

// explainTimeout says so when the attempt, not the caller's ctx, ran out of time.
func (c *Client) explainTimeout(ctx, attemptCtx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(attemptCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v (timeoutSeconds)", c.cfg.Timeout)
	}
	return err
}

// retryableStatus reports whether an HTTP status may pass: 429 Too Many Requests and
// every 5xx.
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// response is the body of an embeddings answer; other fields are ignored.
type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// decodeResponse returns the n vectors of an answer by their index: every index in
// [0, n) must come exactly once, and the vectors must pass checkVectors. snippet
// quotes the answer in an error.
func decodeResponse(data []byte, n int, snippet func([]byte) string) ([][]float64, error) {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the response is not embeddings JSON (%v): %s", err, snippet(data))
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(r.Data), n)
	}
	out := make([][]float64, n)
	seen := make([]bool, n)
	for i, d := range r.Data {
		switch {
		case d.Index == nil:
			return nil, fmt.Errorf("data[%d] has no index", i)
		case *d.Index < 0 || *d.Index >= n:
			return nil, fmt.Errorf("data[%d].index %d is not in [0, %d)", i, *d.Index, n)
		case seen[*d.Index]:
			return nil, fmt.Errorf("index %d comes more than once", *d.Index)
		}
		seen[*d.Index] = true
		out[*d.Index] = d.Embedding
	}
	return out, checkVectors(out)
}

// checkVectors returns an error unless every vector has the same non-zero length and
// only finite values.
func checkVectors(vecs [][]float64) error {
	for i, v := range vecs {
		if len(v) == 0 {
			return fmt.Errorf("the embedding of input %d is empty", i)
		}
		if len(v) != len(vecs[0]) {
			return fmt.Errorf("the embedding of input %d has %d dimensions, that of input 0 has %d", i, len(v), len(vecs[0]))
		}
		for k, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("the embedding of input %d has the non-finite value %v at %d", i, x, k)
			}
		}
	}
	return nil
}

// snippet returns the start of a response body for an error message as snippet does,
// with the API key redacted first: every whole occurrence, and, where the body is cut,
// a start of the key at the end of what is kept.
func (c *Client) snippet(data []byte) string {
	head := string(data[:min(len(data), 4*snippetBytes)])
	head = c.redact(head)
	if len(data) > 4*snippetBytes {
		for _, key := range c.secrets {
			for n := min(len(key)-1, len(head)); n > 0; n-- {
				if strings.HasSuffix(head, key[:n]) {
					head = head[:len(head)-n]
					break
				}
			}
		}
	}
	return snippet([]byte(head))
}

// snippet returns the start of a response body for an error message: valid UTF-8,
// white space collapsed, at most snippetBytes bytes.
func snippet(data []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data[:min(len(data), 4*snippetBytes)]), "?")), " ")
	if s == "" {
		return "(empty body)"
	}
	if len(s) <= snippetBytes {
		return s
	}
	cut := snippetBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// waitOnTimer waits d, or until ctx ends.
func waitOnTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
