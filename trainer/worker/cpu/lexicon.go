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

import "strings"

// lexicon is the policy's built-in vocabulary for composing intent texts, besides
// the words of the prompt: about two hundred common English words (function
// words, pronouns, common verbs of requests, and a few generic nouns of
// shopping and booking), the stand-in for a language model's vocabulary. It is
// generic: none of the words was taken from the dataset generator's requirement
// templates, which use many words outside it; those the policy cannot produce.
var lexicon = strings.Fields(`
i me my we our you your he she they them it its this that these those
a an the am is are was were be been being have has had do does did
will would can could should may might must shall
and or but not no so if then than as of in on at by for with from to into
about over under near around between without up down out off
only also just very too more most less least all any some each every other another
few many much both one two three first next last new old
please help find look looking search show get give take make keep go going come see watch eat
stay visit fly travel book buy order pay spend want need like love prefer choose pick plan suggest
thing things place option options something anything
good great nice best better cheap close nearby free
really maybe soon tonight today tomorrow week weekend night day days time trip
price budget person people family friends home work city area`)

// inLexicon holds the words of lexicon.
var inLexicon = func() map[string]bool {
	m := make(map[string]bool, len(lexicon))
	for _, w := range lexicon {
		m[w] = true
	}
	return m
}()
