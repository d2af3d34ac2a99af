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
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
)

// fetcher embeds with vectorOf (or vec, when set) and records every call's texts.
type fetcher struct {
	calls [][]string
	vec   func(text string) []float64
	err   error
}

func (f *fetcher) Embed(_ context.Context, texts []string) ([][]float64, error) {
	f.calls = append(f.calls, slices.Clone(texts))
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float64, len(texts))
	for i, text := range texts {
		if f.vec != nil {
			out[i] = f.vec(text)
		} else {
			out[i] = vectorOf(text)
		}
	}
	return out, nil
}

// mustPanic runs fn and returns its panic message, failing the test when it does not
// panic.
func mustPanic(t *testing.T, fn func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("no panic")
		}
		msg = fmt.Sprint(r)
	}()
	fn()
	return ""
}

func TestPrefetchFetchesWhatTheCacheLacksInOneCall(t *testing.T) {
	f := &fetcher{}
	c := NewCache(f)
	ctx := context.Background()
	if err := c.Prefetch(ctx, &Texts{Pinned: []string{"req a", "req a", "req b"}, Transient: []string{"pred c", "req a", "  ", "", "pred c"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Prefetch(ctx, &Texts{Pinned: []string{"req b"}, Transient: []string{"pred c", "req a"}}); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if err := c.Prefetch(ctx, &Texts{Pinned: []string{"req a"}, Transient: []string{"pred c", "pred d"}}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"req a", "req b", "pred c"}, {"pred c", "pred d"}}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("fetched %q, want %q: distinct, not blank, not cached, pinned first", f.calls, want)
	}
}

func TestPrefetchPinsATextThatIsBothTrueAndPredicted(t *testing.T) {
	c := NewCache(&fetcher{})
	if err := c.Prefetch(context.Background(), &Texts{Pinned: []string{"b"}, Transient: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Prefetch(context.Background(), &Texts{Transient: []string{"x", "a"}, Pinned: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	c.Release()
	dst := make([]float64, c.Dim())
	c.Embed(dst, "b")
	c.Embed(dst, "x")
	mustPanic(t, func() { c.Embed(dst, "a") })
}

func TestEmbedServesCopiesAndZerosForBlankTexts(t *testing.T) {
	c := NewCache(&fetcher{})
	if c.Ready() {
		t.Fatal("ready before any fetch")
	}
	if msg := mustPanic(t, func() { c.Dim() }); !strings.Contains(msg, "Prefetch first") {
		t.Errorf("Dim before a fetch panics with %q", msg)
	}
	if err := c.Prefetch(context.Background(), &Texts{Pinned: []string{"hotel"}}); err != nil {
		t.Fatal(err)
	}
	if !c.Ready() || c.Dim() != 3 {
		t.Fatalf("ready %v, dim %d after a fetch of 3-vectors", c.Ready(), c.Dim())
	}
	dst := make([]float64, 3)
	c.Embed(dst, "hotel")
	if !reflect.DeepEqual(dst, vectorOf("hotel")) {
		t.Errorf("Embed(hotel) = %v, want %v", dst, vectorOf("hotel"))
	}
	dst[0] = 99
	c.Embed(dst, "hotel")
	if dst[0] != 5 {
		t.Errorf("Embed shares the cached vector with the caller")
	}
	c.Embed(dst, " \t\n")
	if !reflect.DeepEqual(dst, []float64{0, 0, 0}) {
		t.Errorf("Embed of a blank text = %v, want zeros", dst)
	}
	if msg := mustPanic(t, func() { c.Embed(make([]float64, 2), "hotel") }); !strings.Contains(msg, "length mismatch") {
		t.Errorf("a short dst panics with %q", msg)
	}
}

func TestReleaseDropsThePredictionsAndKeepsTheRequirements(t *testing.T) {
	c := NewCache(&fetcher{})
	if err := c.Prefetch(context.Background(), &Texts{Pinned: []string{"a requirement"}, Transient: []string{"a prediction"}}); err != nil {
		t.Fatal(err)
	}
	c.Release()
	dst := make([]float64, c.Dim())
	c.Embed(dst, "a requirement")
	msg := mustPanic(t, func() { c.Embed(dst, "a prediction") })
	if !strings.Contains(msg, `"a prediction" was not prefetched`) {
		t.Errorf("a miss panics with %q, want it to name the text", msg)
	}
	if len(c.transient) != 0 || len(c.pinned) != 1 {
		t.Errorf("after Release: %d transient, %d pinned texts; want 0 and 1", len(c.transient), len(c.pinned))
	}
}

func TestPrefetchFailureCachesNothing(t *testing.T) {
	f := &fetcher{err: errors.New("embedding service http://embeddings.ml.svc/v1/embeddings: HTTP 500")}
	c := NewCache(f)
	err := c.Prefetch(context.Background(), &Texts{Pinned: []string{"a"}})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || c.Ready() || len(c.pinned) != 0 {
		t.Errorf("Prefetch = %v, ready %v, %d cached; want the fetch error and nothing cached", err, c.Ready(), len(c.pinned))
	}

	f.err = nil
	if err := c.Prefetch(context.Background(), &Texts{Pinned: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	f.vec = func(string) []float64 { return []float64{1, 2} }
	err = c.Prefetch(context.Background(), &Texts{Transient: []string{"b"}})
	if err == nil || !strings.Contains(err.Error(), "dimension 2, want 3") || len(c.transient) != 0 {
		t.Errorf("a fetch of another dimension: %v, %d cached", err, len(c.transient))
	}
}

// recorder is an espo.Embedder that records every text it is asked to embed.
type recorder struct {
	espo.Embedder
	texts []string
}

func (r *recorder) Embed(dst []float64, text string) {
	r.texts = append(r.texts, text)
	r.Embedder.Embed(dst, text)
}

// TestTextsCoverEveryTextTheRewardsEmbed scores answers of every shape with an
// espo.Rewarder (Score, as training does, and ScoreAction, as the evaluation does)
// over a Cache prefetched with Texts.AddScored alone: every text the rewarder embeds
// must have been collected (a miss would also panic in the Cache).
func TestTextsCoverEveryTextTheRewardsEmbed(t *testing.T) {
	pool := espo.GroundTruth{Stage: espo.StagePool, Action: espo.Action{Type: espo.ActionPoolFound, Point: espo.NoPoint, Text: "a quiet hotel near the station under 200 dollars"},
		Intent: "a quiet hotel near the station under 200 dollars"}
	gui := espo.GroundTruth{Stage: espo.StageGUI, Action: espo.Action{Type: espo.ActionType, Point: espo.NoPoint, Text: "hotel"}}
	rec := espo.GroundTruth{Stage: espo.StageRecommend, Action: espo.Action{Type: espo.ActionRecommendation, Point: espo.NoPoint, Text: "Yes"}}
	answer := func(typ, text string) string {
		return espo.FormatAnswer("thinking", espo.Action{Type: typ, Point: espo.NoPoint, Text: text})
	}
	answers := []string{
		answer(espo.ActionPoolFound, "a hotel near the station"),
		answer(espo.ActionPoolFound, "  padded intent  "),
		answer(espo.ActionPoolFound, "it's \"quoted\"\nand escaped\t"),
		answer(espo.ActionPoolFound, ""),
		answer(espo.ActionPoolFound, espo.NoText),
		answer(espo.ActionClick, "a click that carries a text"),
		answer(espo.ActionRecommendation, "Yes"),
		`<think>t</think><answer>[{"action": "pool_found", "point": (-100, -100), "input_text": "double quotes, a tuple",}]</answer>`,
		"<think>no answer block</think>",
		`<think>t</think><answer>[{'action': 'pool_found'}]</answer>`,
		"",
	}
	for _, gt := range []espo.GroundTruth{pool, gui, rec} {
		ts := &Texts{}
		for _, a := range answers {
			ts.AddScored(&gt, a)
		}
		c := NewCache(&fetcher{})
		seed := &Texts{Pinned: []string{"seed, so the cache knows its dimension"}}
		if err := c.Prefetch(context.Background(), seed); err != nil {
			t.Fatal(err)
		}
		if err := c.Prefetch(context.Background(), ts); err != nil {
			t.Fatal(err)
		}
		collected := append(append([]string{}, ts.Pinned...), ts.Transient...)
		r := &recorder{Embedder: c}
		rw, err := espo.NewRewarder(espo.DefaultRewardConfig(), r)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range answers {
			rw.Score(&gt, a)
			if act, err := espo.ParseAnswer(a); err == nil {
				rw.ScoreAction(&gt, act)
			}
		}
		for _, text := range r.texts {
			if !slices.Contains(collected, text) {
				t.Errorf("stage %v: the rewarder embedded %q, which AddScored did not collect", gt.Stage, text)
			}
		}
		if gt.Stage == espo.StagePool && len(r.texts) == 0 {
			t.Error("the pool step embedded nothing: the test checks nothing")
		}
		if gt.Stage != espo.StagePool && len(collected) != 0 {
			t.Errorf("stage %v: collected %q, want nothing", gt.Stage, collected)
		}
	}
}
