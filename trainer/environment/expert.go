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
	"slices"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// expert returns the action of the expert at the current step: a policy that
// knows the hidden user. On the GUI stage it first looks at the evidence (it
// opens each saved item in turn, so that their cards, with the values the user
// chose, are in the history a prompt shows), then browses all items, clears any
// filter a policy left set, and takes the list to the pool; on the pool step it
// states the requirement; on a recommend step it decides by the generator's fit
// rule. The pool is thus the unfiltered list, about half fits: the decisions,
// not the filters, are where the evidence pays. It depends only on the state,
// so it is right from any state a policy leaves it in.
func (st *state) expert() dataset.Answer {
	switch st.stage {
	case dataset.StagePool:
		return dataset.Answer{Action: espo.ActionPoolFound, Point: espo.NoPoint, InputText: st.user.requirement}
	case dataset.StageRecommend:
		return dataset.Answer{Action: espo.ActionRecommendation, Point: espo.NoPoint, InputText: st.want()}
	}
	switch {
	case st.unviewedSaved() >= 0:
		return st.towardsEvidence()
	case st.res == nil || st.res.query != "":
		return st.towardsBrowse()
	}
	return st.towardsUnfiltered()
}

// unviewedSaved is the index of the first saved item the agent has not opened, or -1.
func (st *state) unviewedSaved() int {
	viewed := st.viewedIDs()
	return slices.IndexFunc(st.user.saved, func(it dataset.Item) bool { return !viewed[it.ID] })
}

// towardsEvidence goes to the profile's saved items and opens the first one not
// opened yet ("Recently viewed" on the pages the expert passes again, and the
// saved page's "viewed" marks, say how far it got).
func (st *state) towardsEvidence() dataset.Answer {
	switch st.top().name {
	case pageHome:
		return st.clickOn("button", textProfile)
	case pageProfile:
		return st.clickOn("button", textSaved)
	case pageSaved:
		return st.clickAttr("item", st.user.saved[st.unviewedSaved()].ID)
	}
	return st.clickOn("button", textBack)
}

// towardsBrowse lists every item: Browse all from the home page.
func (st *state) towardsBrowse() dataset.Answer {
	if st.top().name == pageHome {
		return st.clickOn("button", textBrowse)
	}
	return st.clickOn("button", textBack)
}

// towardsUnfiltered clears every filter on the results page (Any on an option
// page the expert opened), then takes the results to the pool.
func (st *state) towardsUnfiltered() dataset.Answer {
	p := st.top()
	switch p.name {
	case pageOptions:
		return st.clickOn("option", textAny)
	case pageResults:
	default:
		return st.towardsBrowse()
	}
	for _, at := range st.user.app.Attributes {
		have := st.res.filters[at.Key]
		switch {
		case have == "":
		case at.Reveal == dataset.RevealPage:
			return st.clickAttr("opens", at.Key)
		default:
			// clicking the selected chip clears it
			return st.clickWhere(func(e *dataset.Element) bool { return e.Role == "chip" && e.Text == have && e.Attrs["group"] == at.Key })
		}
	}
	return st.clickOn("button", textPool)
}

// clickOn is a click on the middle of the first element of the current screen
// with the given role and text.
func (st *state) clickOn(role, text string) dataset.Answer {
	return st.clickWhere(func(e *dataset.Element) bool { return e.Role == role && e.Text == text })
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
