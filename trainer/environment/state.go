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
	"maps"
	"slices"
	"strings"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// scrollBy is how many cards a scroll moves the results.
const scrollBy = 2

// featured is how many items the home page recommends.
const featured = 4

// page is one page of the app's navigation stack.
type page struct {
	name string
	attr *dataset.Attribute // the attribute of an options page
	item *dataset.Item      // the item of a detail page
}

// results is the state of the results page: the query, the filters set
// (attribute: value, chips and option pages alike), the items the query matched
// (in catalog order) and the scroll position.
type results struct {
	channel string
	query   string
	filters map[string]string
	matched []dataset.Item
	offset  int
}

// shown returns the matched items that pass every filter, by the generator's
// fit rule: a filter on an ordered attribute keeps its value and better ones.
func (r *results) shown() []dataset.Item {
	var out []dataset.Item
	for i := range r.matched {
		if fitsAll(r.channel, r.filters, &r.matched[i]) {
			out = append(out, r.matched[i])
		}
	}
	return out
}

// state is one episode in progress.
type state struct {
	user      *user
	summaries bool
	pages     []page
	typed     string
	res       *results
	saved     map[string]bool // items the agent saved during the episode
	seen      map[string]bool // pages shown so far
	viewed    []dataset.Item  // items whose detail page the agent opened, the latest first
	stage     dataset.Stage
	pool      []dataset.Item
	next      int // the candidate of the current recommend step
	history   []dataset.Answer
	step      int
	done      bool
}

func newState(u *user, summaries bool) *state {
	st := &state{user: u, summaries: summaries, stage: dataset.StageGUI, saved: map[string]bool{}, seen: map[string]bool{}}
	st.push(page{name: pageHome})
	return st
}

func (st *state) top() *page { return &st.pages[len(st.pages)-1] }

// push opens a page and records that it was seen.
func (st *state) push(p page) {
	st.pages = append(st.pages, p)
	st.seen[p.name] = true
}

// view records that the agent opened it, as the app's "Recently viewed" does.
func (st *state) view(it dataset.Item) {
	st.viewed = slices.DeleteFunc(st.viewed, func(v dataset.Item) bool { return v.ID == it.ID })
	st.viewed = append([]dataset.Item{it}, st.viewed...)
}

// viewedIDs is the set of the items the agent opened.
func (st *state) viewedIDs() map[string]bool {
	ids := make(map[string]bool, len(st.viewed))
	for _, it := range st.viewed {
		ids[it.ID] = true
	}
	return ids
}

// back closes the current page; the home page stays.
func (st *state) back() {
	if len(st.pages) > 1 {
		st.pages = st.pages[:len(st.pages)-1]
	}
}

// candidate returns the candidate of the current recommend step, or nil.
func (st *state) candidate() *dataset.Item {
	if st.stage != dataset.StageRecommend || st.next >= len(st.pool) {
		return nil
	}
	return &st.pool[st.next]
}

// screen renders the current screen.
func (st *state) screen() dataset.Screen {
	a, u := st.user.app, st.user
	switch st.stage {
	case dataset.StagePool:
		return poolScreen(a, st.pool, st.summaries)
	case dataset.StageRecommend:
		if c := st.candidate(); c != nil {
			return detailScreen(a, c, false)
		}
	}
	p := st.top()
	switch p.name {
	case pageProfile:
		return profileScreen(a, st.viewed, st.summaries)
	case pageSaved:
		return savedScreen(a, u.saved, st.viewedIDs(), st.summaries)
	case pageOrders:
		return ordersScreen(a, u.orders, st.summaries)
	case pageSearch:
		return searchScreen(a, st.typed)
	case pageResults:
		return resultsScreen(a, st.res, st.summaries)
	case pageOptions:
		return optionsScreen(p.attr, st.res.filters[p.attr.Key])
	case pageDetail:
		return detailScreen(a, p.item, st.saved[p.item.ID])
	}
	return homeScreen(a, u.catalog[:featured], st.viewed, st.summaries)
}

// apply applies a parsed action to the current stage, judging it on the pool
// and recommend stages, and returns it as the history records it.
func (st *state) apply(act espo.Action, res *StepResult, vocab espo.SlotVocab) dataset.Answer {
	taken := dataset.Answer{Action: act.Type, Point: act.Point, InputText: act.Text}
	switch st.stage {
	case dataset.StagePool:
		st.statePool(act, res, vocab)
	case dataset.StageRecommend:
		st.decide(act, res)
	default:
		st.applyGUI(act, &taken)
	}
	return taken
}

// statePool judges the intent stated on the pool step (a pool_found or type
// answer; any other answer states nothing) and moves on to the first candidate,
// or ends the episode when the pool is empty.
func (st *state) statePool(act espo.Action, res *StepResult, vocab espo.SlotVocab) {
	res.Judged = true
	if act.Type == espo.ActionPoolFound || act.Type == espo.ActionType {
		res.Slots = espo.MatchSlots(act.Text, st.user.prefs, vocab)
		res.Right = res.Slots.Right
	}
	st.stage = dataset.StageRecommend
	if len(st.pool) == 0 {
		st.done = true
	}
}

// decide judges the decision on the current candidate against the hidden user
// and moves on to the next one, ending the episode after the last.
func (st *state) decide(act espo.Action, res *StepResult) {
	res.Judged = true
	res.Want = st.want()
	res.Right = act.Type == espo.ActionRecommendation && act.Text == res.Want
	st.next++
	if st.next >= len(st.pool) {
		st.done = true
	}
}

// want is the hidden user's decision on the current candidate.
func (st *state) want() string {
	if st.user.fits(st.candidate()) {
		return dataset.Yes
	}
	return dataset.No
}

// applyGUI applies a GUI action: a click on what it hits, text typed into the
// focused search box, a scroll of the results; exit and complete end the
// episode. Anything else changes nothing.
func (st *state) applyGUI(act espo.Action, taken *dataset.Answer) {
	switch act.Type {
	case espo.ActionClick:
		if e := st.hit(act.Point); e != nil {
			box := e.Box
			taken.Target, taken.Box = e.ID, &box
			st.click(e)
		}
	case espo.ActionType:
		if st.top().name == pageSearch {
			st.typed = strings.TrimSpace(act.Text)
		}
	case espo.ActionScroll:
		st.scroll(act.Text)
	case espo.ActionExit, espo.ActionComplete:
		st.done = true
	}
}

// hit returns the element of the current screen under point p (normalised or
// in pixels of dataset.Viewport), or nil.
func (st *state) hit(p [2]float64) *dataset.Element {
	vp := [2]float64{float64(dataset.Viewport[0]), float64(dataset.Viewport[1])}
	q, ok := espo.NormalisePoint(p, vp)
	if !ok {
		return nil
	}
	sc := st.screen()
	for i := range sc.Elements {
		if sc.Elements[i].Box.Contains(q) {
			e := sc.Elements[i]
			return &e
		}
	}
	return nil
}

// scroll moves the results by scrollBy cards down or up.
func (st *state) scroll(dir string) {
	if st.top().name != pageResults {
		return
	}
	n := len(st.res.shown())
	switch dir {
	case "down":
		st.res.offset = min(st.res.offset+scrollBy, max(n-1, 0))
	case "up":
		st.res.offset = max(st.res.offset-scrollBy, 0)
	}
}

// click acts on a click on element e of the current page.
func (st *state) click(e *dataset.Element) {
	if e.Text == textBack && e.Role == "button" {
		st.back()
		return
	}
	if id := e.Attrs["item"]; e.Role == "card" && id != "" {
		st.openItem(id)
		return
	}
	p := st.top()
	switch p.name {
	case pageHome:
		st.clickHome(e)
	case pageProfile:
		st.clickProfile(e)
	case pageSearch:
		if e.Role == "button" && e.Text == textSearch {
			st.search(st.typed)
		}
	case pageResults:
		st.clickResults(e)
	case pageOptions:
		st.choose(p.attr, e)
	case pageDetail:
		if e.Text == "Save" || e.Text == "Saved" {
			st.saved[p.item.ID] = !st.saved[p.item.ID]
		}
	}
}

func (st *state) clickHome(e *dataset.Element) {
	switch {
	case e.Role == "search_box":
		st.typed = ""
		st.push(page{name: pageSearch})
	case e.Text == textProfile:
		st.push(page{name: pageProfile})
	case e.Text == textBrowse:
		st.search("")
	}
}

func (st *state) clickProfile(e *dataset.Element) {
	switch e.Text {
	case textSaved:
		st.push(page{name: pageSaved})
	case textOrders:
		st.push(page{name: pageOrders})
	}
}

// clickResults toggles a chip, opens an option page, goes back to the search
// or takes the shown results to the pool.
func (st *state) clickResults(e *dataset.Element) {
	switch {
	case e.Role == "chip":
		k := e.Attrs["group"]
		if st.res.filters[k] == e.Text {
			delete(st.res.filters, k)
		} else {
			st.res.filters[k] = e.Text
		}
		st.res.offset = 0
	case e.Attrs["opens"] != "":
		st.push(page{name: pageOptions, attr: attrOf(st.user.app, e.Attrs["opens"])})
	case e.Role == "search_box":
		st.typed = st.res.query
		st.push(page{name: pageSearch})
	case e.Text == textPool:
		st.toPool()
	}
}

// choose sets (or, for Any, clears) the filter of an option page and goes back
// to the results.
func (st *state) choose(at *dataset.Attribute, e *dataset.Element) {
	if e.Role != "option" {
		return
	}
	if e.Text == textAny {
		delete(st.res.filters, at.Key)
	} else {
		st.res.filters[at.Key] = e.Text
	}
	st.res.offset = 0
	st.back()
}

// search shows the results of query: the catalog items that name it (in their
// name or a value; every item for an empty query), with the filters kept. The
// results page replaces the search page.
func (st *state) search(query string) {
	filters := map[string]string{}
	if st.res != nil {
		filters = st.res.filters
	}
	st.res = &results{channel: st.user.app.Channel, query: query, filters: filters}
	for _, it := range st.user.catalog {
		if matchesQuery(&it, query) {
			st.res.matched = append(st.res.matched, it)
		}
	}
	if st.top().name == pageSearch {
		st.back()
	}
	st.push(page{name: pageResults})
}

// matchesQuery reports whether an item is a result of query: the query is
// empty, or names the item's name or one of its values as whole words.
func matchesQuery(it *dataset.Item, query string) bool {
	if query == "" || dataset.ContainsValue(query, it.Name) {
		return true
	}
	for _, k := range slices.Sorted(maps.Keys(it.Attrs)) {
		if k != "reviews" && dataset.ContainsValue(query, it.Attrs[k]) {
			return true
		}
	}
	return false
}

// openItem opens the detail page of the item with the given id.
func (st *state) openItem(id string) {
	u := st.user
	for _, list := range [][]dataset.Item{u.catalog, u.saved, ordersItems(u.orders)} {
		if k := slices.IndexFunc(list, func(it dataset.Item) bool { return it.ID == id }); k >= 0 {
			it := list[k]
			st.push(page{name: pageDetail, item: &it})
			st.view(it)
			return
		}
	}
}

func ordersItems(orders []order) []dataset.Item {
	items := make([]dataset.Item, len(orders))
	for i := range orders {
		items[i] = orders[i].item
	}
	return items
}

// toPool ends the GUI stage: the first shown results, as many as the user's
// episode has candidates, are the pool.
func (st *state) toPool() {
	shown := st.res.shown()
	st.pool = shown[:min(len(shown), st.user.recommend)]
	st.stage = dataset.StagePool
}

// groundTruth is the reference as espo's rewards read it.
func (st *state) groundTruth(ref dataset.Answer) espo.GroundTruth {
	ep := dataset.Episode{Viewport: dataset.Viewport, Requirement: st.user.requirement, Preferences: st.user.prefs}
	return ep.GroundTruth(&dataset.Step{Stage: st.stage, Answer: ref})
}
