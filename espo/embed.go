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
	"strings"
	"unicode"
	"unicode/utf8"
)

// Embedder maps a text to a vector, for the intent similarity of the item-pool
// stage. Embed writes the embedding of text to dst, which has length Dim(); it must
// be deterministic. The default is HashEmbedder; an embedding service plugs in
// here, typically by embedding a batch of texts ahead of time and serving them from
// memory, since a reward cannot fail.
type Embedder interface {
	Dim() int
	Embed(dst []float64, text string)
}

// DefaultEmbeddingDim is the dimension of the default HashEmbedder.
const DefaultEmbeddingDim = 512

// Feature weights of HashEmbedder.
const (
	hashWordWeight   = 1.0
	hashBigramWeight = 0.5
	hashCharWeight   = 0.5
)

// HashEmbedder is the default Embedder: deterministic, dependency-free, with no
// model. A text is lower-cased and split into words, maximal runs of letters and
// digits (other characters separate words and are dropped); its features are
//
//	every word                                   weight 1
//	every pair of adjacent words                 weight 0.5
//	every character 3-gram of "#word#"           weight 0.5   (# marks the word's ends)
//
// and each feature is hashed (64-bit FNV-1a, then mixed) to one of Dim coordinates
// with a hashed sign of + or -, the "hashing trick". The sum is L2-normalised; a text
// with no word embeds to the zero vector. Shared words make two texts similar, word
// order and inflections change the result a little (character 3-grams match
// "hotel" with "hotels"), and synonyms are not seen: see the paraphrase table in the
// tests. In scripts written without spaces (Chinese, Japanese kana) every character
// is a word, so their features are characters and character pairs.
type HashEmbedder struct {
	dim int
}

// NewHashEmbedder returns a HashEmbedder of dimension dim; it panics if dim < 1.
func NewHashEmbedder(dim int) *HashEmbedder {
	if dim < 1 {
		panic("espo: embedding dimension must be positive")
	}
	return &HashEmbedder{dim: dim}
}

// Dim returns the dimension of the embedding.
func (h *HashEmbedder) Dim() int { return h.dim }

// Embed writes the embedding of text to dst; it panics if len(dst) != h.Dim(). It
// allocates nothing.
func (h *HashEmbedder) Embed(dst []float64, text string) {
	if len(dst) != h.dim {
		panic("espo: embedding length mismatch")
	}
	clear(dst)
	var prev uint64
	havePrev := false
	for rest := text; rest != ""; {
		var w string
		w, rest = nextWord(rest)
		if w == "" {
			break
		}
		word := uint64(fnvOffset)
		var c0, c1 rune = noRune, boundaryRune
		for _, r := range w {
			r = toLower(r)
			word = fnvRune(word, r)
			if c0 != noRune {
				h.add(dst, mix(charSeed^uint64(c0)<<42^uint64(c1)<<21^uint64(r)), hashCharWeight)
			}
			c0, c1 = c1, r
		}
		if c0 == noRune { // a one-character word: #c#
			c0 = boundaryRune
		}
		h.add(dst, mix(charSeed^uint64(c0)<<42^uint64(c1)<<21^boundaryRune), hashCharWeight)
		word = mix(word)
		h.add(dst, word, hashWordWeight)
		if havePrev {
			h.add(dst, mix(bigramSeed^(prev*fnvPrime)^word), hashBigramWeight)
		}
		prev, havePrev = word, true
	}
	var ss float64
	for _, v := range dst {
		ss += v * v
	}
	if ss > 0 {
		inv := 1 / math.Sqrt(ss)
		for i := range dst {
			dst[i] *= inv
		}
	}
}

// add adds weight times the hashed sign to the hashed coordinate of a feature.
func (h *HashEmbedder) add(dst []float64, f uint64, weight float64) {
	i := (f >> 32) * uint64(h.dim) >> 32
	if f&1 != 0 {
		weight = -weight
	}
	dst[i] += weight
}

const (
	fnvOffset    = 14695981039346656037
	fnvPrime     = 1099511628211
	charSeed     = 0x9e3779b97f4a7c15
	bigramSeed   = 0xbf58476d1ce4e5b9
	boundaryRune = 0x110000 // beyond the last rune, below 1<<21
	noRune       = -1
)

func fnvRune(h uint64, r rune) uint64 {
	for v := uint32(r); ; v >>= 8 {
		h = (h ^ uint64(v&0xff)) * fnvPrime
		if v < 0x100 {
			return h
		}
	}
}

// mix is the SplitMix64 finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// nextWord returns the first word of s and the text after it, or "" if s holds no
// word: a maximal run of letters and digits, or a single ideograph.
func nextWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, isWordRune)
	if i < 0 {
		return "", ""
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	end := i + n
	if !isIdeograph(r) {
		for end < len(s) {
			r, n = utf8.DecodeRuneInString(s[end:])
			if !isWordRune(r) || isIdeograph(r) {
				break
			}
			end += n
		}
	}
	return s[i:end], s[end:]
}

// isIdeograph reports whether r belongs to a script written without spaces, whose
// characters are words of their own.
func isIdeograph(r rune) bool {
	return r >= 0x3040 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

func toLower(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// Cosine returns the cosine similarity of a and b, a·b / (|a| |b|), or 0 when either
// is the zero vector. It panics if their lengths differ.
func Cosine(a, b []float64) float64 {
	if len(a) != len(b) {
		panic("espo: cosine length mismatch")
	}
	var ab, aa, bb float64
	for i, x := range a {
		y := b[i]
		ab += x * y
		aa += x * x
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}
