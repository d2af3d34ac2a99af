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

package cpu

import (
	"strings"
	"unicode"
)

// Features are hashed (the "hashing trick"): a feature is named by a 64-bit hash
// built from its parts with hs and hcat, and picks one row of the embedding table
// and a sign, so a collision of two features adds with a random sign rather than
// a systematic bias.

// feat is a hashed feature: row<<1 | sign, where sign 1 means -1.
type feat uint32

func (f feat) row() int { return int(f >> 1) }

// featOf maps a hash to a feature of a table with mask+1 rows (a power of two).
func featOf(h uint64, mask uint64) feat {
	h = mix(h)
	return feat((h>>32)&mask)<<1 | feat(h&1)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hs is the FNV-1a hash of s.
func hs(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// hcat combines hashes, in order: hcat(a, b) != hcat(b, a).
func hcat(parts ...uint64) uint64 {
	h := uint64(fnvOffset)
	for _, p := range parts {
		h = mix(h*fnvPrime ^ p)
	}
	return h
}

// mix is the SplitMix64 finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// words splits s into lower-case words, maximal runs of letters and digits, as
// espo's HashEmbedder reads a text: the intent vocabulary is made of such words.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// tokens splits s at white space and trims punctuation from both ends of each
// token, keeping what is inside ("sci-fi", "$20-40"): the units of a typed text,
// as TokenF1 compares them.
func tokens(s string) []string {
	var out []string
	for _, t := range strings.Fields(s) {
		t = strings.TrimFunc(t, func(r rune) bool { return strings.ContainsRune(`.,;:!?"'()[]{}`, r) })
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
