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
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// expert returns the action of the expert at the current step: a policy that
// knows the hidden user. On the GUI stage it first looks at the evidence (it
// opens a saved item), then goes back and searches for the preferred query
// value, sets every filter to the user's preference (and clears any other), and
// takes the results to the pool; on the pool step it states the requirement;
// on a recommend step it decides by the generator's fit rule. It depends only on
// the state, so it is right from any state a policy leaves it in.
func (st *state) expert() dataset.Answer {
	switch st.stage {
	case dataset.StagePool:
		return dataset.Answer{Action: espo.ActionPoolFound, Point: espo.NoPoint, InputText: st.user.requirement}
	case dataset.StageRecommend:
		return dataset.Answer{Action: espo.ActionRecommendation, Point: espo.NoPoint, InputText: st.want()}
	}
	switch {
	case !st.seen[pageDetail]:
		return st.towardsEvidence()
	case st.res == nil || st.res.query != st.query():
		return st.towardsSearch()
	}
	return st.towardsFilters()
}

// query is the value of the user's preference that the search looks for.
func (st *state) query() string { return st.user.prefs[st.user.app.Attributes[0].Key] }

// towardsEvidence goes to the profile's saved items and opens the first, so that
// its card, with the values the user chose, is in the history a prompt shows (and
// "Recently viewed" on the pages the expert passes again says it was done).
func (st *state) towardsEvidence() dataset.Answer {
	switch st.top().name {
	case pageHome:
		return st.clickOn("button", textProfile)
	case pageProfile:
		return st.clickOn("button", textSaved)
	case pageSaved:
		return st.clickRole("card")
	}
	return st.clickOn("button", textBack)
}

// towardsSearch searches for the query value: from the home or results page
// through the search page.
func (st *state) towardsSearch() dataset.Answer {
	switch st.top().name {
	case pageHome, pageResults:
		return st.clickRole("search_box")
	case pageSearch:
		if st.typed != st.query() {
			a := st.clickRole("search_box")
			return dataset.Answer{Action: espo.ActionType, Point: espo.NoPoint, InputText: st.query(), Target: a.Target}
		}
		return st.clickOn("button", textSearch)
	}
	return st.clickOn("button", textBack)
}

// towardsFilters sets each filter to the user's preference on the results page
// (choosing on an option page the expert opened), then takes the results to
// the pool.
func (st *state) towardsFilters() dataset.Answer {
	p := st.top()
	switch p.name {
	case pageOptions:
		want := st.user.prefs[p.attr.Key]
		if want == "" {
			want = textAny
		}
		return st.clickOn("option", want)
	case pageResults:
	default:
		return st.clickOn("button", textBack)
	}
	for _, at := range st.user.app.Attributes[1:] {
		have, want := st.res.filters[at.Key], st.user.prefs[at.Key]
		if have == want {
			continue
		}
		if at.Reveal == dataset.RevealPage {
			return st.clickAttr("opens", at.Key)
		}
		if want == "" {
			want = have // clicking the selected chip clears it
		}
		return st.clickOn("chip", want)
	}
	return st.clickOn("button", textPool)
}

// clickOn is a click on the middle of the first element of the current screen
// with the given role and text.
func (st *state) clickOn(role, text string) dataset.Answer {
	return st.clickWhere(func(e *dataset.Element) bool { return e.Role == role && e.Text == text })
}

// clickRole is a click on the first element with the given role.
func (st *state) clickRole(role string) dataset.Answer {
	return st.clickWhere(func(e *dataset.Element) bool { return e.Role == role })
}

// clickAttr is a click on the first element whose attribute k is v.
func (st *state) clickAttr(k, v string) dataset.Answer {
	return st.clickWhere(func(e *dataset.Element) bool { return e.Attrs[k] == v })
}

// clickWhere is a click on the middle of the first element of the current
// screen that ok accepts. The expert only asks for elements its state implies
// are there; it panics otherwise, a bug of the environment.
func (st *state) clickWhere(ok func(*dataset.Element) bool) dataset.Answer {
	sc := st.screen()
	for i := range sc.Elements {
		if e := &sc.Elements[i]; ok(e) {
			box := e.Box
			return dataset.Answer{Action: espo.ActionClick, Point: box.Center(), InputText: espo.NoText, Target: e.ID, Box: &box}
		}
	}
	panic("environment: expert: no element to click on the " + sc.Page + " page")
}
