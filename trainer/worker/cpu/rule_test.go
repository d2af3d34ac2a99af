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
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

func TestEvidenceRule(t *testing.T) {
	click := func(role, text string, attrs map[string]string) *workerpb.Action {
		return &workerpb.Action{Type: espo.ActionClick, ElementRole: role, ElementText: text, ElementAttributes: attrs}
	}
	history := []*workerpb.Action{
		{Type: espo.ActionType, InputText: "Kyoto"},
		click("chip", "$20-40", map[string]string{"group": "price", "selected": "false"}),
		click("chip", "Late hours", map[string]string{"group": "feature", "selected": "false"}),
		click("chip", "Late hours", map[string]string{"group": "feature", "selected": "true"}), // cleared
		click("button", "Rating", map[string]string{"opens": "rating"}),
		click("option", "4.0+", nil),
		click("button", "Sort: Recommended", map[string]string{"opens": "sort"}),
		click("option", "Price", nil), // the candidate has no sort: ignored
		click("card", "Golden Dragon", map[string]string{"item": "x"}),
	}
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  string
	}{
		{"every choice", map[string]string{"city": "kyoto", "price": "$20-40", "rating": "4.0+", "feature": "Kids menu"}, "Yes"},
		{"a better rating", map[string]string{"city": "Kyoto", "price": "$20-40", "rating": "4.5+"}, "Yes"},
		{"a lower rating", map[string]string{"city": "Kyoto", "price": "$20-40", "rating": "3.5+"}, "No"},
		{"another price", map[string]string{"city": "Kyoto", "price": "$10-20", "rating": "4.0+"}, "No"},
		{"not the typed city", map[string]string{"city": "Tokyo", "price": "$20-40", "rating": "4.0+"}, "No"},
		{"no rating shown", map[string]string{"city": "Kyoto", "price": "$20-40"}, "Yes"},
	} {
		p := &workerpb.Prompt{History: history, Item: &workerpb.Item{Id: "c", Title: "C", Attributes: c.attrs}}
		if got := EvidenceRule(p); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got := EvidenceRule(&workerpb.Prompt{History: history}); got != "No" {
		t.Errorf("no candidate: %s, want No", got)
	}
}
