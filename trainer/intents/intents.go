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

// Package intents judges the intents the policy states at item-pool steps, as the
// run's rewards and evaluations do: by slots against an episode's preferences, or by
// embedding, with espo's built-in HashEmbedder, an embedding service
// (spec.rewards.intent.embedder.endpoint) or the sentence encoder the policy workers
// load (spec.rewards.intent.embedder.worker). A Judge embeds ahead of each scoring
// pass what that pass will embed, so that scoring itself does no I/O.
package intents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/embedding"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/permanent"
)

// EmbedderField is the spec's path of the embedding service, the prefix of its errors.
const EmbedderField = "spec.rewards.intent.embedder"

// matchField is the spec's path of the intent match, the prefix of its errors.
const matchField = "spec.rewards.intent.match"

// Encoder embeds texts with the sentence encoder the policy workers loaded: the gang
// of policy workers (*worker.Gang).
type Encoder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// Judge judges intents as the rewards rc say, embedding through cache (nil: espo's
// built-in embedder).
type Judge struct {
	rc    espo.RewardConfig
	spec  *trainingv1alpha1.EmbedderSpec
	cache *embedding.Cache
}

// New returns the Judge of the rewards rc and the embedder spec names: the
// built-in embedder when spec is nil; with spec.worker the policy workers' encoder
// (enc); else the embedding service at spec.endpoint, its API key read from the
// environment with spec.apiKeySecretRef. It does no I/O. wait waits before a retry
// of the service (embedding.Config.Wait; nil waits on a timer).
func New(rc espo.RewardConfig, spec *trainingv1alpha1.EmbedderSpec, enc Encoder, wait func(ctx context.Context, d time.Duration) error) (*Judge, error) {
	j := &Judge{rc: rc, spec: spec}
	if spec == nil {
		return j, nil
	}
	if spec.Worker != nil {
		j.cache = embedding.NewCache(&workerEncoder{enc: enc, batch: int(spec.BatchSize),
			timeout: time.Duration(spec.TimeoutSeconds) * time.Second})
		return j, nil
	}
	apiKey, err := embedderAPIKey(spec)
	if err != nil {
		return nil, err
	}
	c, err := embedding.NewClient(embedding.Config{
		Endpoint:  spec.Endpoint,
		Model:     spec.Model,
		APIKey:    apiKey,
		Timeout:   time.Duration(spec.TimeoutSeconds) * time.Second,
		BatchSize: int(spec.BatchSize),
		Wait:      wait,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EmbedderField, err)
	}
	j.cache = embedding.NewCache(c)
	return j, nil
}

// Prepare readies the embedder before the run's first step. With an embedding
// service (or the workers' encoder) it embeds the requirement (the true intent) of
// every item-pool step of the splits' episodes that is judged by embedding, kept for
// the whole run: that checks that the service answers, before any step, and learns
// the dimension of its vectors, which the rewarder needs. When no step is judged by
// embedding (every episode carries preferences and spec.rewards.intent.match is auto
// or slots) the service is not used at all.
func (j *Judge) Prepare(ctx context.Context, log logr.Logger, splits ...[]dataset.Episode) error {
	if j.cache == nil {
		return nil
	}
	reqs := requirementTexts(j.rc, splits...)
	if err := j.prefetch(ctx, reqs); err != nil {
		return err
	}
	if !j.cache.Ready() {
		log.Info("embedding service unused: no item-pool step is judged by embedding (" + matchField + ")")
		j.cache = nil
		return nil
	}
	log.Info("intent embedder ready", "embedder", embedderName(j.spec), "dimension", j.cache.Dim(), "poolSteps", len(reqs.Pinned))
	return nil
}

// Embedder returns the Embedder of the intent rewards: the service's Cache, or nil (a
// nil interface, not a nil *Cache) for espo's default.
func (j *Judge) Embedder() espo.Embedder {
	if j.cache == nil {
		return nil
	}
	return j.cache
}

// PrefetchBatch embeds what scoring the groups' candidates embeds (candidate g of
// step j is Samples[j*G+g]); without an embedding service it does nothing.
func (j *Judge) PrefetchBatch(ctx context.Context, gs []*experience.Group) error {
	if j.cache == nil {
		return nil
	}
	ts := &embedding.Texts{}
	for _, g := range gs {
		G := len(g.Samples) / len(g.Steps)
		for k, s := range g.Steps {
			gt := g.Episode.GroundTruth(&g.Episode.Steps[s])
			if !byEmbedding(j.rc, &gt) {
				continue
			}
			for _, c := range g.Samples[k*G : (k+1)*G] {
				ts.AddScored(&gt, c.Answer.Text)
			}
		}
	}
	return j.prefetch(ctx, ts)
}

// PrefetchEvaluation embeds what judging answers[e][k], the answer to step k of
// eps[e], embeds; without an embedding service it does nothing.
func (j *Judge) PrefetchEvaluation(ctx context.Context, eps []dataset.Episode, answers [][]string) error {
	if j.cache == nil {
		return nil
	}
	ts := &embedding.Texts{}
	for e := range eps {
		ep := &eps[e]
		for k, answer := range answers[e] {
			if gt := ep.GroundTruth(&ep.Steps[k]); byEmbedding(j.rc, &gt) {
				ts.AddScored(&gt, answer)
			}
		}
	}
	return j.prefetch(ctx, ts)
}

// prefetch embeds every text of ts the cache lacks. A failing service fails the
// pass: it never falls back to the built-in embedder.
func (j *Judge) prefetch(ctx context.Context, ts *embedding.Texts) error {
	if err := j.cache.Prefetch(ctx, ts); err != nil {
		return permanent.OfWorkers(fmt.Errorf("%s: %w", EmbedderField, err), "")
	}
	return nil
}

// Release drops the predicted intents of the pass just scored, so that the cache
// holds the requirements and at most one batch's predictions.
func (j *Judge) Release() {
	if j.cache != nil {
		j.cache.Release()
	}
}

// Match names how the intents of the pool steps of eps are judged, for
// status.training.intentMatch: "slots", "embedding" (the built-in embedder),
// "embedding-service", "embedding-worker", or "slots+" one of the others when both
// judge; "" when eps has no item-pool step.
func (j *Judge) Match(eps []dataset.Episode) string {
	var bySlots, byEmbed bool
	for e := range eps {
		ep := &eps[e]
		for k := range ep.Steps {
			gt := ep.GroundTruth(&ep.Steps[k])
			switch j.rc.IntentJudge(&gt) {
			case espo.IntentMatchSlots:
				bySlots = true
			case espo.IntentMatchEmbedding:
				byEmbed = true
			}
		}
	}
	var names []string
	if bySlots {
		names = append(names, string(espo.IntentMatchSlots))
	}
	switch {
	case byEmbed && j.cache != nil && j.spec.Worker != nil:
		names = append(names, "embedding-worker")
	case byEmbed && j.cache != nil:
		names = append(names, "embedding-service")
	case byEmbed:
		names = append(names, string(espo.IntentMatchEmbedding))
	}
	return strings.Join(names, "+")
}

// workerEncoder is the embedding.Fetcher of spec.rewards.intent.embedder.worker: the
// sentence encoder the policy workers loaded, asked through the gang (its first
// worker) in calls of at most batch texts, each bounded by timeout.
type workerEncoder struct {
	enc     Encoder
	batch   int
	timeout time.Duration
}

func (w *workerEncoder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += w.batch {
		part := texts[start:min(start+w.batch, len(texts))]
		callCtx, cancel := context.WithTimeout(ctx, w.timeout)
		vecs, err := w.enc.Embed(callCtx, part)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the workers' sentence encoder (%s.worker): %w", EmbedderField, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// embedderAPIKey returns the embedding service's API key: "" when spec names no
// Secret, else the value of ESPO_EMBEDDER_API_KEY (trainingv1alpha1.EmbedderAPIKeyEnv), which
// the controller fills from the Secret, without the white space around it (the line
// break a key read from a file often ends with). A key that is unset or empty is an
// error, naming the field and the variable; no error quotes the key.
func embedderAPIKey(spec *trainingv1alpha1.EmbedderSpec) (string, error) {
	ref := spec.APIKeySecretRef
	if ref == nil {
		return "", nil
	}
	key := strings.TrimSpace(os.Getenv(trainingv1alpha1.EmbedderAPIKeyEnv))
	if key == "" {
		return "", fmt.Errorf("%s.apiKeySecretRef (key %q of Secret %q): the environment variable %s is unset or empty; "+
			"the controller sets it from that Secret in the trainer container, so the key's value is empty "+
			"(running the trainer yourself, set the variable)", EmbedderField, ref.Key, ref.Name, trainingv1alpha1.EmbedderAPIKeyEnv)
	}
	if err := embedding.CheckAPIKey(key); err != nil {
		return "", fmt.Errorf("%s.apiKeySecretRef (key %q of Secret %q, in %s): %w", EmbedderField, ref.Key, ref.Name, trainingv1alpha1.EmbedderAPIKeyEnv, err)
	}
	return key, nil
}

// CheckSlotsHavePreferences returns an error naming spec.rewards.intent.match when
// it is slots and an episode has an item-pool step but no preferences: that step
// could never be judged right.
func CheckSlotsHavePreferences(rc espo.RewardConfig, splits ...[]dataset.Episode) error {
	if rc.Match != espo.IntentMatchSlots {
		return nil
	}
	for _, eps := range splits {
		for e := range eps {
			if ep := &eps[e]; len(ep.Preferences) == 0 && hasPoolStep(ep) {
				return permanent.ConfigInvalid(fmt.Errorf(
					"%s: slots, but episode %s has an item-pool step and no preferences to judge its intent by; "+
						"give every episode its preferences (slot: value), or set %s to auto (slots where there are preferences, "+
						"embedding elsewhere) or embedding", matchField, ep.ID, matchField))
			}
		}
	}
	return nil
}

func hasPoolStep(ep *dataset.Episode) bool {
	for j := range ep.Steps {
		if ep.Steps[j].Stage == dataset.StagePool {
			return true
		}
	}
	return false
}

// embedderName says what embeds the intents, for the log: the service's endpoint, or
// the workers' encoder folder.
func embedderName(e *trainingv1alpha1.EmbedderSpec) string {
	if e.Worker != nil {
		return "worker encoder " + e.Worker.Model
	}
	return e.Endpoint
}

// byEmbedding reports whether the rewards rc judge step gt's intent by embedding:
// only those steps' texts are embedded.
func byEmbedding(rc espo.RewardConfig, gt *espo.GroundTruth) bool {
	return rc.IntentJudge(gt) == espo.IntentMatchEmbedding
}

// requirementTexts returns the true intent of every item-pool step of the splits'
// episodes that rc judges by embedding, as the rewards see it (Episode.GroundTruth).
func requirementTexts(rc espo.RewardConfig, splits ...[]dataset.Episode) *embedding.Texts {
	ts := &embedding.Texts{}
	for _, eps := range splits {
		for e := range eps {
			ep := &eps[e]
			for j := range ep.Steps {
				if gt := ep.GroundTruth(&ep.Steps[j]); byEmbedding(rc, &gt) {
					ts.AddIntent(gt.Intent)
				}
			}
		}
	}
	return ts
}

// CheckEmbedder applies to spec.rewards.intent.embedder, when set and defaulted, the
// rules the API server applies: exactly one of endpoint and worker; an http or https
// endpoint with a host, a port of 1-65535 if any and no credentials, and an
// apiKeySecretRef with a name and a key; a worker model named, without the service's
// model and apiKeySecretRef; the bounds of timeoutSeconds and batchSize. The rule
// that worker needs a PyTorch (or external) worker is CheckEncoderWorker's.
func CheckEmbedder(e *trainingv1alpha1.EmbedderSpec) error {
	if e == nil {
		return nil
	}
	var errs []error
	switch {
	case (e.Endpoint == "") == (e.Worker == nil):
		errs = append(errs, fmt.Errorf("%s: set exactly one of endpoint (an embedding service) and worker (a sentence encoder the policy workers load)", EmbedderField))
	case e.Worker != nil:
		if e.Worker.Model == "" {
			errs = append(errs, fmt.Errorf("%s.worker.model: empty: name the sentence-transformers model folder", EmbedderField))
		}
		if e.Model != "" || e.APIKeySecretRef != nil {
			errs = append(errs, fmt.Errorf("%s: model and apiKeySecretRef are an embedding service's: with worker, remove them", EmbedderField))
		}
	default:
		if err := embedding.CheckEndpoint(e.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("%s.endpoint: %w", EmbedderField, err))
		}
		if ref := e.APIKeySecretRef; ref != nil && (ref.Name == "" || ref.Key == "") {
			errs = append(errs, fmt.Errorf("%s.apiKeySecretRef: name and key are required", EmbedderField))
		}
	}
	if e.TimeoutSeconds < 1 || e.TimeoutSeconds > trainingv1alpha1.MaxEmbedderTimeoutSeconds {
		errs = append(errs, fmt.Errorf("%s.timeoutSeconds: %d not in [1, %d]", EmbedderField, e.TimeoutSeconds, trainingv1alpha1.MaxEmbedderTimeoutSeconds))
	}
	if e.BatchSize < 1 || e.BatchSize > trainingv1alpha1.MaxEmbedderBatchSize {
		errs = append(errs, fmt.Errorf("%s.batchSize: %d not in [1, %d]", EmbedderField, e.BatchSize, trainingv1alpha1.MaxEmbedderBatchSize))
	}
	return errors.Join(errs...)
}

// CheckEncoderWorker refuses spec.rewards.intent.embedder.worker with the CPU policy,
// which loads no sentence encoder, as the API server does.
func CheckEncoderWorker(s *trainingv1alpha1.ESPOJobSpec) error {
	if e := s.Rewards.Intent.Embedder; e == nil || e.Worker == nil || s.Model.Worker != trainingv1alpha1.WorkerCPU {
		return nil
	}
	return fmt.Errorf("%s.worker needs spec.model.worker cuda or external: the CPU policy loads no sentence encoder", EmbedderField)
}
