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
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Options are the model options of the CPU policy, ConfigureRequest.options:
//
//	hash_bits         log2 of the rows of the feature table (default 15: 32768 rows)
//	hidden            hidden units H (default 32)
//	max_intent_words  most words of an intent text (default 40)
//	init_scale        standard deviation of the initial table entries (default 0.05)
//	threads           goroutines for Generate, LogProbs and Backward (default: the
//	                  number the policy was made with); does not change any result
//	arch              what the policy reads (see the package doc): "features"
//	                  (default) or "tokens"
//	embed_bits        tokens only: log2 of the rows of the word-embedding table and
//	                  of each occurrence-context table (default 12: 4096 rows)
//	embed_dim         tokens only: the width d of a word embedding (default 64)
//
// With the defaults the policy has 2^15 * 32 + 2 * 32 = 1,048,640 parameters;
// with arch=tokens 2^12 * 64 + 3 * 2^12 + 2 = 274,434 more.
type Options struct {
	HashBits       int
	Hidden         int
	MaxIntentWords int
	InitScale      float64
	// Arch is ArchFeatures or ArchTokens; "" (a state saved before the option
	// existed) reads as ArchFeatures.
	Arch      string
	EmbedBits int
	EmbedDim  int
}

// The architectures of the policy (the option arch).
const (
	// ArchFeatures reads elements' and the candidate's attribute maps through
	// hand-built evidence features: an upper bound.
	ArchFeatures = "features"
	// ArchTokens reads only the words a screen shows and decides Yes or No with a
	// learned match of history words against the candidate's page.
	ArchTokens = "tokens"
)

// DefaultOptions returns the defaults above.
func DefaultOptions() Options {
	return Options{HashBits: 15, Hidden: 32, MaxIntentWords: 40, InitScale: 0.05, Arch: ArchFeatures, EmbedBits: 12, EmbedDim: 64}
}

func (o Options) rows() int { return 1 << o.HashBits }

// tokens reports whether the options select the tokens architecture.
func (o Options) tokens() bool { return o.Arch == ArchTokens }

// arch returns the architecture, ArchFeatures for "".
func (o Options) arch() string {
	if o.Arch == "" {
		return ArchFeatures
	}
	return o.Arch
}

// parseOptions reads the options of a ConfigureRequest over the defaults; threads
// is returned separately (0 when absent).
func parseOptions(m map[string]string) (Options, int, error) {
	o, threads := DefaultOptions(), 0
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := strings.TrimSpace(m[k])
		var err error
		switch k {
		case "hash_bits":
			o.HashBits, err = intIn(val, 4, 24)
		case "hidden":
			o.Hidden, err = intIn(val, 1, 1024)
		case "max_intent_words":
			o.MaxIntentWords, err = intIn(val, 1, 1000)
		case "threads":
			threads, err = intIn(val, 1, 1024)
		case "arch":
			o.Arch = val
			if val != ArchFeatures && val != ArchTokens {
				err = fmt.Errorf("want %q or %q", ArchFeatures, ArchTokens)
			}
		case "embed_bits":
			o.EmbedBits, err = intIn(val, 4, 20)
		case "embed_dim":
			o.EmbedDim, err = intIn(val, 1, 256)
		case "init_scale":
			o.InitScale, err = strconv.ParseFloat(val, 64)
			if err == nil && !(o.InitScale > 0 && o.InitScale < 10) {
				err = fmt.Errorf("want a number in (0, 10)")
			}
		default:
			return o, 0, fmt.Errorf("%w: unknown option %q; the CPU policy knows hash_bits, hidden, max_intent_words, init_scale, threads, arch, embed_bits and embed_dim", worker.ErrInvalid, k)
		}
		if err != nil {
			return o, 0, fmt.Errorf("%w: option %s=%q: %v", worker.ErrInvalid, k, val, err)
		}
	}
	return o, threads, nil
}

// intIn parses a whole number in [lo, hi].
func intIn(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && (n < lo || n > hi) {
		err = fmt.Errorf("want a whole number in [%d, %d]", lo, hi)
	}
	return n, err
}

func (o Options) validate() error {
	switch {
	case o.HashBits < 4 || o.HashBits > 24, o.Hidden < 1 || o.Hidden > 1024, o.MaxIntentWords < 1,
		!(o.InitScale > 0) || math.IsInf(o.InitScale, 0),
		o.arch() != ArchFeatures && o.arch() != ArchTokens,
		o.tokens() && (o.EmbedBits < 4 || o.EmbedBits > 20 || o.EmbedDim < 1 || o.EmbedDim > 256):
		return fmt.Errorf("bad options %+v", o)
	}
	return nil
}
