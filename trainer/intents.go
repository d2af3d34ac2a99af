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
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/embedding"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// embedderField is the spec's path of the embedding service, the prefix of its errors.
const embedderField = "spec.rewards.intent.embedder"

// newIntentCache returns a Cache over what spec names to embed the intents, or nil
// when spec is nil: the intent rewards then use espo's built-in HashEmbedder. With
// spec.worker the policy workers embed (workerEncoder over workers); else the
// embedding service at spec.endpoint does, and with spec.apiKeySecretRef the API key
// is read from the environment. It does no I/O. wait waits before a retry
// (embedding.Config.Wait; nil waits on a timer).
func newIntentCache(spec *trainingv1alpha1.EmbedderSpec, workers *worker.Gang, wait func(ctx context.Context, d time.Duration) error) (*embedding.Cache, error) {
	if spec == nil {
		return nil, nil
	}
	if spec.Worker != nil {
		return embedding.NewCache(&workerEncoder{workers: workers, batch: int(spec.BatchSize),
			timeout: time.Duration(spec.TimeoutSeconds) * time.Second}), nil
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
		return nil, fmt.Errorf("%s: %w", embedderField, err)
	}
	return embedding.NewCache(c), nil
}

// workerEncoder is the embedding.Fetcher of spec.rewards.intent.embedder.worker: the
// sentence encoder the policy workers loaded, asked through the gang (its first
// worker) in calls of at most batch texts, each bounded by timeout.
type workerEncoder struct {
	workers *worker.Gang
	batch   int
	timeout time.Duration
}

func (w *workerEncoder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += w.batch {
		part := texts[start:min(start+w.batch, len(texts))]
		callCtx, cancel := context.WithTimeout(ctx, w.timeout)
		vecs, err := w.workers.Embed(callCtx, part)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the workers' sentence encoder (%s.worker): %w", embedderField, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// encoderOption is the Configure option embedder_model of spec, "" without
// spec.rewards.intent.embedder.worker: its model folder, under the models volume
// when spec.model.weights is set (as workerOptions places pretrained).
func encoderOption(spec *trainingv1alpha1.ESPOJobSpec) string {
	e := spec.Rewards.Intent.Embedder
	if e == nil || e.Worker == nil {
		return ""
	}
	if spec.Model.Weights != nil {
		return path.Join(trainingv1alpha1.ModelsMountPath, e.Worker.Model)
	}
	return e.Worker.Model
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
			"(running the trainer yourself, set the variable)", embedderField, ref.Key, ref.Name, trainingv1alpha1.EmbedderAPIKeyEnv)
	}
	if err := embedding.CheckAPIKey(key); err != nil {
		return "", fmt.Errorf("%s.apiKeySecretRef (key %q of Secret %q, in %s): %w", embedderField, ref.Key, ref.Name, trainingv1alpha1.EmbedderAPIKeyEnv, err)
	}
	return key, nil
}

// matchField is the spec's path of the intent match, the prefix of its errors.
const matchField = "spec.rewards.intent.match"

// prepareRewards makes the rewarder, with the slot vocabulary of every split. With
// an embedding service it first embeds the requirement (the true intent) of every
// item-pool step judged by embedding, kept for the whole run: that checks that the
// service answers, before any step, and learns the dimension of its vectors, which
// the rewarder needs. When no step is judged by embedding (every episode carries
// preferences and spec.rewards.intent.match is auto or slots) the service is not
// used at all.
func (t *Trainer) prepareRewards(ctx context.Context) error {
	if t.intents != nil {
		reqs := requirementTexts(t.res.Rewards, t.data.Train, t.data.Validation, t.data.Test)
		if err := t.prefetchIntents(ctx, reqs); err != nil {
			return err
		}
		if !t.intents.Ready() {
			t.opts.Log.Info("embedding service unused: no item-pool step is judged by embedding (" + matchField + ")")
			t.intents = nil
		} else {
			t.opts.Log.Info("intent embedder ready", "embedder", embedderName(t.cfg.Spec.Rewards.Intent.Embedder),
				"dimension", t.intents.Dim(), "poolSteps", len(reqs.Pinned))
		}
	}
	rewarder, err := espo.NewRewarder(t.res.Rewards, t.intentEmbedder())
	if err != nil {
		return fmt.Errorf("spec.rewards: %w", err)
	}
	rewarder.SetSlotVocab(t.slots)
	t.rewarder = rewarder
	return nil
}

// checkSlotsHavePreferences returns an error naming spec.rewards.intent.match when
// it is slots and an episode has an item-pool step but no preferences: that step
// could never be judged right.
func checkSlotsHavePreferences(rc espo.RewardConfig, splits ...[]dataset.Episode) error {
	if rc.Match != espo.IntentMatchSlots {
		return nil
	}
	for _, eps := range splits {
		for e := range eps {
			if ep := &eps[e]; len(ep.Preferences) == 0 && hasPoolStep(ep) {
				return invalidInput(trainingv1alpha1.OutcomeConfigInvalid, fmt.Errorf(
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

// intentMatch names how the intents of the pool steps of eps are judged, for
// status.training.intentMatch: "slots", "embedding" (the built-in embedder),
// "embedding-service", or "slots+" one of the others when both judge; "" when eps
// has no item-pool step.
func (t *Trainer) intentMatch(eps []dataset.Episode) string {
	var bySlots, byEmbedding bool
	for e := range eps {
		ep := &eps[e]
		for j := range ep.Steps {
			gt := ep.GroundTruth(&ep.Steps[j])
			switch t.res.Rewards.IntentJudge(&gt) {
			case espo.IntentMatchSlots:
				bySlots = true
			case espo.IntentMatchEmbedding:
				byEmbedding = true
			}
		}
	}
	var names []string
	if bySlots {
		names = append(names, string(espo.IntentMatchSlots))
	}
	if byEmbedding && t.intents != nil && t.cfg.Spec.Rewards.Intent.Embedder.Worker != nil {
		names = append(names, "embedding-worker")
	} else if byEmbedding && t.intents != nil {
		names = append(names, "embedding-service")
	} else if byEmbedding {
		names = append(names, string(espo.IntentMatchEmbedding))
	}
	return strings.Join(names, "+")
}

// embedderName says what embeds the intents, for the log: the service's endpoint, or
// the workers' encoder folder.
func embedderName(e *trainingv1alpha1.EmbedderSpec) string {
	if e.Worker != nil {
		return "worker encoder " + e.Worker.Model
	}
	return e.Endpoint
}

// intentEmbedder returns the Embedder of the intent rewards: the embedding service's
// Cache, or nil (a nil interface, not a nil *Cache) for espo's default.
func (t *Trainer) intentEmbedder() espo.Embedder {
	if t.intents == nil {
		return nil
	}
	return t.intents
}

// prefetchIntents embeds ahead of a scoring pass every text of ts the cache lacks;
// without an embedding service it does nothing. A failing service fails the pass: it
// never falls back to the built-in embedder.
func (t *Trainer) prefetchIntents(ctx context.Context, ts *embedding.Texts) error {
	if t.intents == nil {
		return nil
	}
	if err := t.intents.Prefetch(ctx, ts); err != nil {
		return configInvalid(fmt.Errorf("%s: %w", embedderField, err))
	}
	return nil
}

// releaseIntents drops the predicted intents of the pass just scored, so that the
// cache holds the requirements and at most one batch's predictions.
func (t *Trainer) releaseIntents() {
	if t.intents != nil {
		t.intents.Release()
	}
}

// prefetchBatchIntents embeds what scoring the groups' candidates (Rewarder.Score in
// advantages) embeds; without an embedding service it does nothing.
func (t *Trainer) prefetchBatchIntents(ctx context.Context, gs []*group) error {
	if t.intents == nil {
		return nil
	}
	return t.prefetchIntents(ctx, batchIntentTexts(t.res.Rewards, gs))
}

// prefetchEvalIntents embeds what judging answers[e][j], the answer to step j of
// eps[e], embeds; without an embedding service it does nothing.
func (t *Trainer) prefetchEvalIntents(ctx context.Context, eps []dataset.Episode, answers [][]string) error {
	if t.intents == nil {
		return nil
	}
	return t.prefetchIntents(ctx, evalIntentTexts(t.res.Rewards, eps, answers))
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

// batchIntentTexts returns the texts that scoring every candidate of the groups
// embeds: candidate g of step j is g.samples[j*G+g]; steps that rc judges by slots
// embed nothing.
func batchIntentTexts(rc espo.RewardConfig, gs []*group) *embedding.Texts {
	ts := &embedding.Texts{}
	for _, g := range gs {
		G := len(g.samples) / len(g.steps)
		for j, s := range g.steps {
			gt := g.ep.GroundTruth(&g.ep.Steps[s])
			if !byEmbedding(rc, &gt) {
				continue
			}
			for _, c := range g.samples[j*G : (j+1)*G] {
				ts.AddScored(&gt, c.Answer.Text)
			}
		}
	}
	return ts
}

// evalIntentTexts returns the texts that judging answers[e][j], the answer to step j
// of eps[e], embeds; steps that rc judges by slots embed nothing.
func evalIntentTexts(rc espo.RewardConfig, eps []dataset.Episode, answers [][]string) *embedding.Texts {
	ts := &embedding.Texts{}
	for e := range eps {
		ep := &eps[e]
		for j, answer := range answers[e] {
			if gt := ep.GroundTruth(&ep.Steps[j]); byEmbedding(rc, &gt) {
				ts.AddScored(&gt, answer)
			}
		}
	}
	return ts
}
