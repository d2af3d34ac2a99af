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

package environment

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// TestRecordedAndSimulatedScreensAgree checks that the simulated app draws a state
// a recorded episode shows as the generator drew it: element for element (role,
// text, box and attributes), for every channel and both difficulties, on
//
//   - the search page (the recorded page's bar, for the text typed so far),
//   - the results page (the query bar and the filter chips, for the chips
//     selected),
//   - the item pool (the candidates' cards).
//
// The rest of those pages (the recorded search suggestions, sort button and
// pool title) and the other pages are the recorded app's or the simulated app's
// own.
func TestRecordedAndSimulatedScreensAgree(t *testing.T) {
	for _, difficulty := range []string{dataset.DifficultyStandard, dataset.DifficultyHard} {
		eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: 4 * len(dataset.Channels()), Seed: 5, Difficulty: difficulty})
		if err != nil {
			t.Fatal(err)
		}
		checked := map[string]int{}
		for _, ep := range eps {
			a, err := appOf(ep.Channel)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ep.Steps {
				rec := &ep.Steps[i].Screen
				recorded, simulated, ok := agreeingParts(a, rec, candidates(&ep), difficulty == dataset.DifficultyHard)
				if !ok {
					continue
				}
				checked[rec.Page]++
				if err := sameElements(recorded, simulated); err != nil {
					t.Fatalf("%s episode %s step %d, %s page: %v", difficulty, ep.ID, i, rec.Page, err)
				}
			}
		}
		for _, page := range []string{pageSearch, pageResults, pagePool} {
			if checked[page] == 0 {
				t.Errorf("%s: no recorded %s page compared", difficulty, page)
			}
		}
	}
}

// agreeingParts returns the elements of the recorded screen rec and of the
// simulated app's rendering of the same state that must agree, and ok false when
// rec's page has none. cands are the episode's candidates, in order.
func agreeingParts(a *dataset.App, rec *dataset.Screen, cands []dataset.Item, summaries bool) (recorded, simulated []dataset.Element, ok bool) {
	switch rec.Page {
	case pageSearch:
		sim := searchScreen(a, typedOn(a, rec))
		return rec.Elements[:min(len(sim.Elements), len(rec.Elements))], sim.Elements, true
	case pageResults:
		r := &results{channel: a.Channel, query: rec.Elements[1].Text, filters: selectedChips(rec)}
		return barAndChips(rec), barAndChips(ptr(resultsScreen(a, r, summaries))), true
	case pagePool:
		return cardsOf(rec), cardsOf(ptr(poolScreen(a, cands, summaries))), true
	}
	return nil, nil, false
}

func ptr(s dataset.Screen) *dataset.Screen { return &s }

// typedOn is the text typed into the search box of the recorded search page rec.
func typedOn(a *dataset.App, rec *dataset.Screen) string {
	for _, e := range rec.Elements {
		if e.Role == "search_box" && e.Text != dataset.SearchPlaceholder(a.Noun) {
			return e.Text
		}
	}
	return ""
}

// selectedChips are the filter chips selected on a results page (group: value).
func selectedChips(s *dataset.Screen) map[string]string {
	filters := map[string]string{}
	for _, e := range s.Elements {
		if e.Role == "chip" && e.Attrs["selected"] == "true" {
			filters[e.Attrs["group"]] = e.Text
		}
	}
	return filters
}

// barAndChips are a results page's query bar (its first two elements) and its
// filter chips.
func barAndChips(s *dataset.Screen) []dataset.Element {
	out := append([]dataset.Element(nil), s.Elements[:2]...)
	for _, e := range s.Elements[2:] {
		if e.Role == "chip" {
			out = append(out, e)
		}
	}
	return out
}

// cardsOf are the cards of a screen without their ids (which count the elements
// above them).
func cardsOf(s *dataset.Screen) []dataset.Element {
	var out []dataset.Element
	for _, e := range s.Elements {
		if e.Role == "card" {
			e.ID = ""
			out = append(out, e)
		}
	}
	return out
}

// candidates are the candidates of ep's recommend steps, in order.
func candidates(ep *dataset.Episode) []dataset.Item {
	var out []dataset.Item
	for _, s := range ep.Steps {
		if s.Candidate != nil {
			out = append(out, *s.Candidate)
		}
	}
	return out
}

// sameElements says where the recorded and the simulated elements differ first.
func sameElements(recorded, simulated []dataset.Element) error {
	if len(recorded) != len(simulated) {
		return fmt.Errorf("recorded %d elements, simulated %d", len(recorded), len(simulated))
	}
	for i := range recorded {
		if !reflect.DeepEqual(recorded[i], simulated[i]) {
			return fmt.Errorf("element %d: recorded %+v, simulated %+v", i, recorded[i], simulated[i])
		}
	}
	return nil
}
