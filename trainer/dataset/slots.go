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

import (
	"maps"
	"slices"

	"github.com/espo-dev/espo-operator/espo"
)

// SlotVocab returns every value of each preference slot in the splits' episodes:
// for every slot k, the union of preferences[k] of every episode and Attrs[k] of
// every candidate item, so that the vocabulary holds every true value and the other
// values an intent may name (and be wrong with). A slot's values are in order of
// first appearance.
func SlotVocab(splits ...[]Episode) espo.SlotVocab {
	v := espo.SlotVocab{}
	seen := map[[2]string]bool{}
	add := func(slot, value string) {
		if value != "" && !seen[[2]string{slot, value}] {
			seen[[2]string{slot, value}] = true
			v[slot] = append(v[slot], value)
		}
	}
	for _, eps := range splits {
		for e := range eps {
			ep := &eps[e]
			for _, k := range slices.Sorted(maps.Keys(ep.Preferences)) {
				add(k, ep.Preferences[k])
			}
			for j := range ep.Steps {
				if c := ep.Steps[j].Candidate; c != nil {
					for _, k := range slices.Sorted(maps.Keys(c.Attrs)) {
						add(k, c.Attrs[k])
					}
				}
			}
		}
	}
	return v
}
