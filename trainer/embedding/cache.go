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
	"fmt"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
)

// Fetcher embeds texts: it returns one vector per text, in their order. *Client is
// the Fetcher of an embedding service.
type Fetcher interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// Texts is what one scoring pass will embed, gathered before it: the true intents
// (Pinned: a finite set, the episodes' requirements, kept for the whole run) and the
// predicted ones (Transient: new with every batch, dropped after it). A text may come
// several times.
type Texts struct {
	Pinned, Transient []string
}

// AddIntent adds a true intent.
func (ts *Texts) AddIntent(intent string) { ts.Pinned = append(ts.Pinned, intent) }

// AddScored adds the texts that espo.Rewarder.Score(gt, answer) embeds, which are
// also those that ScoreAction embeds for the action the answer parses to (the
// evaluation metrics' way): on an item-pool step, when espo.ParseAnswer accepts the
// answer, the true intent gt.Intent and the parsed text, whatever the action type;
// nothing on other steps or for a malformed answer. It does not know the rewards'
// intent match: add only the steps they judge by embedding
// (espo.RewardConfig.IntentJudge); a slot-judged step embeds nothing.
func (ts *Texts) AddScored(gt *espo.GroundTruth, answer string) {
	if gt.Stage != espo.StagePool {
		return
	}
	a, err := espo.ParseAnswer(answer)
	if err != nil {
		return
	}
	ts.AddIntent(gt.Intent)
	ts.Transient = append(ts.Transient, a.Text)
}

// Cache is an espo.Embedder whose vectors come from a Fetcher, fetched before a
// scoring pass: Prefetch the Texts the pass will embed, score (espo calls Embed),
// then Release the pass's predicted intents. Embed cannot fetch, so a text that was
// not prefetched is a programming error and panics. A text of white space only is the
// zero vector (cosine 0 with anything) and is never fetched, since services may refuse
// empty inputs. Vectors are served exactly as fetched. A Cache must not be used by
// two goroutines at once.
type Cache struct {
	fetcher Fetcher
	// dim is the dimension of the vectors, 0 before the first fetch.
	dim int
	// pinned holds the true intents for the Cache's life, transient the predicted
	// intents until Release.
	pinned, transient map[string][]float64
}

// NewCache returns an empty Cache over f.
func NewCache(f Fetcher) *Cache {
	return &Cache{fetcher: f, pinned: map[string][]float64{}, transient: map[string][]float64{}}
}

// Prefetch fetches, with one call of the Fetcher, the vectors of the texts of ts
// that the Cache lacks; a text both pinned and transient is pinned. On an error (the
// fetch failed, or its vectors' dimension differs from the earlier ones') it caches
// nothing.
func (c *Cache) Prefetch(ctx context.Context, ts *Texts) error {
	missing, pin := c.missing(ts)
	if len(missing) == 0 {
		return nil
	}
	vecs, err := c.fetcher.Embed(ctx, missing)
	if err != nil {
		return err
	}
	if err := c.checkFetched(vecs, len(missing)); err != nil {
		return err
	}
	c.dim = len(vecs[0])
	for i, text := range missing {
		if pin[i] {
			c.pinned[text] = vecs[i]
		} else {
			c.transient[text] = vecs[i]
		}
	}
	return nil
}

// missing returns the distinct texts of ts that are neither cached nor blank, each
// with whether it is to be pinned, pinned ones first.
func (c *Cache) missing(ts *Texts) (texts []string, pin []bool) {
	index := map[string]int{}
	add := func(text string, pinned bool) {
		if isBlank(text) || c.pinned[text] != nil {
			return
		}
		if i, ok := index[text]; ok {
			pin[i] = pin[i] || pinned
			return
		}
		if !pinned && c.transient[text] != nil {
			return
		}
		index[text] = len(texts)
		texts, pin = append(texts, text), append(pin, pinned)
	}
	for _, text := range ts.Pinned {
		add(text, true)
	}
	for _, text := range ts.Transient {
		add(text, false)
	}
	return texts, pin
}

// checkFetched returns an error unless vecs are n vectors of the same non-zero
// dimension, that of the vectors fetched before.
func (c *Cache) checkFetched(vecs [][]float64, n int) error {
	if len(vecs) != n {
		return fmt.Errorf("embedding: %d vectors for %d texts", len(vecs), n)
	}
	want := c.dim
	if want == 0 {
		want = len(vecs[0])
	}
	for _, v := range vecs {
		if len(v) != want || want == 0 {
			return fmt.Errorf("embedding: a vector of dimension %d, want %d", len(v), want)
		}
	}
	return nil
}

// Release drops the predicted intents (the transient texts) of the pass just scored;
// the true intents stay.
func (c *Cache) Release() { clear(c.transient) }

// Ready reports whether the Cache knows the dimension of its vectors: whether a
// Prefetch fetched anything.
func (c *Cache) Ready() bool { return c.dim > 0 }

// Dim returns the dimension of the vectors. It panics before the first fetch (see
// Ready): an espo.Rewarder sizes its buffers with it when it is made.
func (c *Cache) Dim() int {
	if c.dim == 0 {
		panic("embedding: Cache.Dim before any vector was fetched; Prefetch first")
	}
	return c.dim
}

// Embed writes the prefetched vector of text to dst, or zeros for a blank text. It
// panics if len(dst) != Dim() or if text was not prefetched.
func (c *Cache) Embed(dst []float64, text string) {
	if len(dst) != c.Dim() {
		panic("embedding: embedding length mismatch")
	}
	if isBlank(text) {
		clear(dst)
		return
	}
	v := c.pinned[text]
	if v == nil {
		v = c.transient[text]
	}
	if v == nil {
		panic(fmt.Sprintf("embedding: %q was not prefetched; collect every text a scoring pass embeds (Texts.AddScored) and Prefetch them before it", shorten(text)))
	}
	copy(dst, v)
}

// isBlank reports whether text holds white space only.
func isBlank(text string) bool { return strings.TrimSpace(text) == "" }

// shorten returns text cut to 80 bytes, for a panic message.
func shorten(text string) string {
	if len(text) <= 80 {
		return text
	}
	return strings.ToValidUTF8(text[:80], "") + "..."
}
