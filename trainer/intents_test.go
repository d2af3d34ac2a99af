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
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// embeddingService is a fake OpenAI-compatible embedding service that embeds with
// espo's HashEmbedder of the default dimension, so that a run against it must equal a
// run with the built-in embedder. Requests from the failFrom-th on (0-based; -1:
// none) are answered 500. With apiKey set, a request without "Authorization: Bearer
// <apiKey>" is answered 401 with a body that quotes the header it got.
type embeddingService struct {
	srv      *httptest.Server
	failFrom int
	apiKey   string

	mu       sync.Mutex
	inputs   []string
	models   []string
	batches  []int
	requests int
}

func newEmbeddingService(t *testing.T, failFrom int) *embeddingService {
	s := &embeddingService{failFrom: failFrom}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *embeddingService) endpoint() string { return s.srv.URL + "/v1/embeddings" }

func (s *embeddingService) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := s.requests
	s.requests++
	s.mu.Unlock()
	if got := r.Header.Get("Authorization"); s.apiKey != "" && got != "Bearer "+s.apiKey {
		http.Error(w, fmt.Sprintf(`{"error": "invalid API key in header %q"}`, got), http.StatusUnauthorized)
		return
	}
	if s.failFrom >= 0 && n >= s.failFrom {
		http.Error(w, "the embedding model crashed", http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.inputs = append(s.inputs, req.Input...)
	s.models = append(s.models, req.Model)
	s.batches = append(s.batches, len(req.Input))
	s.mu.Unlock()
	h := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	type item struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		v := make([]float64, h.Dim())
		h.Embed(v, text)
		data[len(data)-1-i] = item{Index: i, Embedding: v} // the index, not the order, says which
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// noWait makes the embedding client's retries immediate.
func noWait(context.Context, time.Duration) error { return nil }

// embeddingConfig returns smallConfig judging every intent by embedding: the generated
// episodes carry preferences, which auto would judge by slots.
func embeddingConfig(t *testing.T) *Config {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchEmbedding
	return c
}

// withEmbedder returns embeddingConfig with spec.rewards.intent.embedder at endpoint.
func withEmbedder(t *testing.T, endpoint string, batchSize int32) *Config {
	c := embeddingConfig(t)
	c.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Endpoint: endpoint, Model: "sentence-encoder", BatchSize: batchSize}
	c.Spec.Default()
	return c
}

// TestEmbeddingServiceRunEqualsTheBuiltInEmbeddersRun runs the same job twice: with
// the built-in embedder, and with an embedding service that embeds as the built-in one
// does. Every reward, so every weight and metric, must be the same, which holds only if
// the trainer sent the service every text the rewards embed; the service must have
// received every requirement and predicted intents besides.
func TestEmbeddingServiceRunEqualsTheBuiltInEmbeddersRun(t *testing.T) {
	builtIn := cpuMembers(1)
	want, tr := run(t, embeddingConfig(t), Options{Workers: worker.NewGang(builtIn...)})

	svc := newEmbeddingService(t, -1)
	served := cpuMembers(1)
	rec := &recorder{}
	got, _ := run(t, withEmbedder(t, svc.endpoint(), 7), Options{Workers: worker.NewGang(served...), Reporter: rec, embeddingRetryWait: noWait})
	if got.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", got.Outcome, got.Message)
	}
	if !bytes.Equal(savedState(t, served[0]), savedState(t, builtIn[0])) {
		t.Error("the final weights differ from the built-in embedder's run")
	}
	for _, r := range append([]EvalResult{*got.Test, *want.Test}, append(got.Validation, want.Validation...)...) {
		if r.IntentMatch != "embedding-service" && r.IntentMatch != "embedding" {
			t.Errorf("%s evaluation judged intents by %q, want embedding(-service)", r.Split, r.IntentMatch)
		}
	}
	sameButTheMatch(got, want)
	if !reflect.DeepEqual(got.Test, want.Test) || !reflect.DeepEqual(got.Validation, want.Validation) {
		t.Errorf("evaluations differ:\n service  %+v\n built-in %+v", got.Test, want.Test)
	}

	svc.mu.Lock()
	defer svc.mu.Unlock()
	received := map[string]bool{}
	for _, text := range svc.inputs {
		received[text] = true
	}
	requirements := map[string]bool{}
	for _, eps := range [][]dataset.Episode{tr.Splits().Train, tr.Splits().Validation, tr.Splits().Test} {
		for _, ep := range eps {
			requirements[ep.Requirement] = true
			if !received[ep.Requirement] {
				t.Errorf("the service never received the requirement %q", ep.Requirement)
			}
		}
	}
	if len(received) <= len(requirements) {
		t.Errorf("the service received %d texts for %d requirements: no predicted intent", len(received), len(requirements))
	}
	for i, n := range svc.batches {
		if n > 7 || svc.models[i] != "sentence-encoder" {
			t.Errorf("request %d: %d texts for model %q, want at most 7 for sentence-encoder", i, n, svc.models[i])
		}
	}
}

// sameButTheMatch sets the intent match of got's evaluations to want's, which says
// embedding where got's says embedding-service.
func sameButTheMatch(got, want *Report) {
	got.Test.IntentMatch = want.Test.IntentMatch
	for i := range got.Validation {
		got.Validation[i].IntentMatch = want.Validation[i].IntentMatch
	}
}

// TestFailingEmbeddingServiceFailsTheRun: a service answering 500 fails the run with
// an Error outcome naming the endpoint, whether it fails from the start or in the
// first reinforcement step; the built-in embedder never stands in.
func TestFailingEmbeddingServiceFailsTheRun(t *testing.T) {
	for name, tc := range map[string]struct {
		failFrom int
		sft      int32
	}{
		"at start":          {failFrom: 0, sft: 1},
		"in the first step": {failFrom: 1, sft: 0},
	} {
		t.Run(name, func(t *testing.T) {
			svc := newEmbeddingService(t, tc.failFrom)
			c := withEmbedder(t, svc.endpoint(), 0)
			c.Spec.Algorithm.SFTEpochs = &tc.sft
			rec := &recorder{}
			waits := 0
			tr, err := newTrainer(c, Options{Workers: cpuGang(1), Reporter: rec, Log: logr.Discard(),
				embeddingRetryWait: func(context.Context, time.Duration) error { waits++; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := tr.Run(context.Background())
			if rep != nil || err == nil {
				t.Fatalf("Run = %+v, %v; want an error", rep, err)
			}
			for _, want := range []string{"spec.rewards.intent.embedder", svc.endpoint(), "HTTP 500", "the embedding model crashed"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			last := rec.reports[len(rec.reports)-1]
			if last.Outcome != trainingv1alpha1.OutcomeError || !strings.Contains(last.Message, svc.endpoint()) {
				t.Errorf("last report: outcome %q, message %q; want Error naming the endpoint", last.Outcome, last.Message)
			}
			if last.Step != 0 || waits != 3 {
				t.Errorf("failed at step %d after %d retry waits, want step 0 and 3", last.Step, waits)
			}
		})
	}
}

// embedderKey is a made-up API key of the fake embedding service.
const embedderKey = "espo-test-embedder-key-0123456789"

// withEmbedderKey returns withEmbedder's config with the API key's Secret named.
func withEmbedderKey(t *testing.T, endpoint string) *Config {
	c := withEmbedder(t, endpoint, 0)
	c.Spec.Rewards.Intent.Embedder.APIKeySecretRef = &trainingv1alpha1.SecretKeyRef{Name: "embeddings", Key: "api-key"}
	return c
}

// setAPIKey sets the API key's variable, ESPO_EMBEDDER_API_KEY, for the test.
func setAPIKey(t *testing.T, value string) { t.Setenv(trainingv1alpha1.EmbedderAPIKeyEnv, value) }

// unsetAPIKey unsets the API key's variable for the test.
func unsetAPIKey(t *testing.T) {
	setAPIKey(t, "") // restored at the test's end
	if err := os.Unsetenv(trainingv1alpha1.EmbedderAPIKeyEnv); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddingServiceWithAnAPIKey runs against a service that answers only requests
// bearing its key, which the trainer reads from ESPO_EMBEDDER_API_KEY (as the
// controller sets it from the Secret; the line break of a key file dropped).
func TestEmbeddingServiceWithAnAPIKey(t *testing.T) {
	svc := newEmbeddingService(t, -1)
	svc.apiKey = embedderKey
	setAPIKey(t, embedderKey+"\n")
	rep, _ := run(t, withEmbedderKey(t, svc.endpoint()), Options{Workers: cpuGang(1), embeddingRetryWait: noWait})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.requests == 0 || len(svc.batches) != svc.requests {
		t.Errorf("%d requests, %d answered: want every one answered", svc.requests, len(svc.batches))
	}
}

// TestEmbedderAPIKeyMissingFailsClearly: with apiKeySecretRef set and the variable
// unset or blank, New fails naming the field, the Secret and the variable, and nothing
// is sent to the service.
func TestEmbedderAPIKeyMissingFailsClearly(t *testing.T) {
	for name, setEnv := range map[string]func(*testing.T){
		"unset": unsetAPIKey,
		"empty": func(t *testing.T) { setAPIKey(t, "") },
		"blank": func(t *testing.T) { setAPIKey(t, " \n") },
	} {
		t.Run(name, func(t *testing.T) {
			setEnv(t)
			svc := newEmbeddingService(t, -1)
			_, err := newTrainer(withEmbedderKey(t, svc.endpoint()), Options{Workers: cpuGang(1), Log: logr.Discard()})
			if err == nil {
				t.Fatal("New succeeded without the API key")
			}
			for _, want := range []string{"spec.rewards.intent.embedder.apiKeySecretRef", `key "api-key" of Secret "embeddings"`,
				"ESPO_EMBEDDER_API_KEY is unset or empty"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			svc.mu.Lock()
			defer svc.mu.Unlock()
			if svc.requests != 0 {
				t.Errorf("%d requests sent", svc.requests)
			}
		})
	}
	// Without apiKeySecretRef the variable is not read: a job that names no Secret
	// does not depend on the trainer's environment, even one whose key is malformed.
	setAPIKey(t, "a key with a control character\x01")
	svc := newEmbeddingService(t, -1)
	if _, err := newTrainer(withEmbedder(t, svc.endpoint(), 0), Options{Workers: cpuGang(1), Log: logr.Discard()}); err != nil {
		t.Fatal(err)
	}
}

// TestWrongEmbedderAPIKeyFailsWithoutQuotingIt: a service refusing the key with a 401
// whose body quotes the header fails the run; neither the error nor the reported
// message holds the key.
func TestWrongEmbedderAPIKeyFailsWithoutQuotingIt(t *testing.T) {
	svc := newEmbeddingService(t, -1)
	svc.apiKey = "the-service-wants-another-key"
	setAPIKey(t, embedderKey)
	rec := &recorder{}
	tr, err := newTrainer(withEmbedderKey(t, svc.endpoint()), Options{Workers: cpuGang(1), Reporter: rec, Log: logr.Discard(),
		embeddingRetryWait: noWait})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if err == nil {
		t.Fatal("Run succeeded with a refused key")
	}
	last := rec.reports[len(rec.reports)-1]
	for _, msg := range []string{err.Error(), last.Message} {
		if strings.Contains(msg, embedderKey[:12]) || !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, "Bearer [redacted]") {
			t.Errorf("message %q: want HTTP 401 with the key redacted", msg)
		}
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if last.Outcome != trainingv1alpha1.OutcomeError || svc.requests != 1 {
		t.Errorf("outcome %q after %d requests, want Error after 1 (a 401 is not retried)", last.Outcome, svc.requests)
	}
}
