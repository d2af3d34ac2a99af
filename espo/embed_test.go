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

package espo

import (
	"math"
	"testing"
)

// TestHashEmbedderParaphrases documents how the default embedding sees paraphrases:
// the cosine of each pair, and whether it reaches the default tau = 0.75. Shared
// words carry the similarity; case, punctuation and word order barely matter;
// inflections match in part; synonyms do not match at all.
func TestHashEmbedderParaphrases(t *testing.T) {
	const intent = "a hotel in New York next week"
	for _, tc := range []struct {
		a, b string
		cos  float64
	}{
		{intent, intent, 1},
		{intent, "A Hotel in NEW YORK, next week!", 1},                   // case and punctuation
		{intent, "next week a hotel in New York", 0.983},                 // word order
		{intent, "hotels in New York next week", 0.827},                  // inflection, a word dropped
		{intent, "looking for a hotel in New York for next week", 0.768}, // words added
		{"a cheap hotel close to the airport", "a hotel close to the airport that is cheap", 0.873},
		{"vegetarian food delivered tonight", "vegetarian food for delivery tonight", 0.744},    // just below tau
		{intent, "a flight to New York next week", 0.678},                                       // another need, same words: below tau
		{"budget hotel near the airport", "an inexpensive place to stay by the airport", 0.310}, // synonyms
		{intent, "accommodation in NYC in seven days", 0.255},                                   // a true paraphrase, no shared words
		{intent, "cheap hotel near Times Square", 0.217},
		{"a comedy movie this weekend", "a funny film on Saturday", 0.078},
		{intent, "spicy noodles delivered tonight", 0.079},
		{"附近便宜的酒店", "附近的便宜酒店", 0.927}, // Chinese: characters are words
		{"附近便宜的酒店", "明天去北京的机票", 0.114},
		{"", "hotel", 0}, // no words: the zero vector
	} {
		h := NewHashEmbedder(DefaultEmbeddingDim)
		a, b := make([]float64, h.Dim()), make([]float64, h.Dim())
		h.Embed(a, tc.a)
		h.Embed(b, tc.b)
		if got := Cosine(a, b); math.Abs(got-tc.cos) > 5e-4 {
			t.Errorf("cos(%q, %q) = %.3f, want %.3f", tc.a, tc.b, got, tc.cos)
		}
	}
}

func TestHashEmbedder(t *testing.T) {
	h := NewHashEmbedder(64)
	a, b := make([]float64, 64), make([]float64, 64)
	for i := range b {
		b[i] = 7 // Embed overwrites
	}
	h.Embed(a, "Find me a hotel; 2 nights, São Paulo")
	h.Embed(b, "Find me a hotel; 2 nights, São Paulo")
	var ss float64
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("Embed is not deterministic at %d", i)
		}
		ss += a[i] * a[i]
	}
	if math.Abs(ss-1) > 1e-12 {
		t.Errorf("|embedding|^2 = %v, want 1", ss)
	}
	h.Embed(a, " ,.!? ")
	for _, v := range a {
		if v != 0 {
			t.Fatal("a text without words embeds to a non-zero vector")
		}
	}
	if n := testing.AllocsPerRun(100, func() { h.Embed(a, "Find me a hotel in São Paulo, 附近") }); n != 0 {
		t.Errorf("Embed allocates %v times", n)
	}
	if got := Cosine([]float64{1, 0}, []float64{1, 1}); math.Abs(got-math.Sqrt2/2) > 1e-15 {
		t.Errorf("Cosine = %v", got)
	}
	if got := Cosine([]float64{0, 0}, []float64{1, 1}); got != 0 {
		t.Errorf("Cosine with zero vector = %v", got)
	}
}
