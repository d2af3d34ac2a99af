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

package dataset

import "math/rand/v2"

// paraphraseStream is or-ed into the stream number of the PCG that rewords a
// requirement, so that a paraphrase is an independent draw of the wording.
const paraphraseStream = 1 << 62

// paraphraseTries bounds the draws of a paraphrase that differs from the requirement.
const paraphraseTries = 16

// Paraphrases returns, for each episode Generate(o) draws, in order, a paraphrase of
// its requirement: the same preferences stated again by the generator's own
// templates (the preferences in another order, other phrases, lead and closing)
// drawn from another random stream, so that it asks for the same things in other
// words. The draw is repeated until the text differs from the requirement, up to
// paraphraseTries times; a requirement whose templates allow no other wording is
// returned as it is.
func Paraphrases(o GenerateOptions) ([]string, error) {
	specs, err := o.specs()
	if err != nil {
		return nil, err
	}
	hard, err := o.hard()
	if err != nil {
		return nil, err
	}
	out := make([]string, o.Episodes)
	for i := range out {
		b := buildEpisode(specs[i%len(specs)], o.Seed, i, hard)
		out[i] = b.paraphrase(o.Seed, uint64(i), hard)
	}
	return out, nil
}

// paraphrase rewords b's requirement from the PCG of (seed, paraphraseStream|i).
func (b *builder) paraphrase(seed, i uint64, hard bool) string {
	b.rng = rand.New(rand.NewPCG(seed, paraphraseStream|i))
	for range paraphraseTries {
		var r string
		if hard { // hardRequirement orders the preferences itself, and leads with the query's
			r = b.hardRequirement()
		} else {
			b.rng.Shuffle(len(b.prefs), func(x, y int) { b.prefs[x], b.prefs[y] = b.prefs[y], b.prefs[x] })
			r = b.requirement()
		}
		if r != b.ep.Requirement {
			return r
		}
	}
	return b.ep.Requirement
}
