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
	"strconv"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// The app's screens are drawn with dataset.Layout, the layout of the recorded
// episodes.

// The pages of the app, the values of dataset.Screen.Page.
const (
	pageHome    = "home"
	pageProfile = "profile"
	pageSaved   = "saved"
	pageOrders  = "orders"
	pageSearch  = "search"
	pageResults = "results"
	pageOptions = "options"
	pageDetail  = "detail"
	pagePool    = "pool"
)

// The texts of the app's fixed buttons.
const (
	textBack    = dataset.TextBack
	textProfile = "Profile"
	textSaved   = "Saved items"
	textOrders  = "Past orders"
	textBrowse  = "Browse all"
	// textRecentlyViewed heads the item viewed last, textViewed marks a saved item
	// the agent opened.
	textRecentlyViewed = "Recently viewed"
	textViewed         = "viewed"
	textSearch         = dataset.TextSearch
	textPool           = "Choose from these results"
	textAny            = "Any"
)

// homeScreen is the start page: the app's name, Profile, the search box, Browse
// all, the item viewed last (as apps show what was recently viewed) and
// recommended items.
func homeScreen(a *dataset.App, featured, viewed []dataset.Item, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pageHome)
	y1, y2, _ := l.Row(dataset.RowH)
	l.Add("text", a.Name, dataset.MarginX, y1, 600, y2, nil)
	l.Add("button", textProfile, 800, y1, dataset.ScreenW-dataset.MarginX, y2, nil)
	l.Full("search_box", dataset.SearchPlaceholder(a.Noun), dataset.RowH, nil)
	l.Full("button", textBrowse, dataset.RowH, nil)
	recentlyViewed(l, a, viewed, summaries)
	l.Full("text", "Recommended for you", 40, nil)
	l.Cards(featured, a.Keys(), summaries, nil)
	return l.Screen()
}

// recentlyViewed adds the item viewed last under a "Recently viewed" heading, when
// there is one.
func recentlyViewed(l *dataset.Layout, a *dataset.App, viewed []dataset.Item, summaries bool) {
	if len(viewed) == 0 {
		return
	}
	l.Full("text", textRecentlyViewed, 40, nil)
	l.Cards(viewed[:1], a.Keys(), summaries, nil)
}

// profileScreen links to what the user did before (saved items and past orders)
// and shows the item viewed last.
func profileScreen(a *dataset.App, viewed []dataset.Item, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pageProfile)
	l.TopBar(textProfile)
	l.Full("button", textSaved, dataset.RowH, nil)
	l.Full("button", textOrders, dataset.RowH, nil)
	recentlyViewed(l, a, viewed, summaries)
	return l.Screen()
}

// savedScreen lists the items the user saved, those the agent has not opened yet
// first (as apps list what is new first), those it opened after them, marked
// viewed.
func savedScreen(a *dataset.App, saved []dataset.Item, viewed map[string]bool, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pageSaved)
	l.TopBar(textSaved)
	order := slices.Clone(saved)
	slices.SortStableFunc(order, func(x, y dataset.Item) int { return cmpBool(viewed[x.ID], viewed[y.ID]) })
	l.Cards(order, a.Keys(), summaries, func(i int) string {
		if viewed[order[i].ID] {
			return textViewed
		}
		return ""
	})
	return l.Screen()
}

// cmpBool orders false before true.
func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

// ordersScreen lists the user's past orders, each marked Kept or Returned.
func ordersScreen(a *dataset.App, orders []order, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pageOrders)
	l.TopBar(textOrders)
	l.Cards(ordersItems(orders), a.Keys(), summaries, func(i int) string {
		if orders[i].kept {
			return "Kept"
		}
		return "Returned"
	})
	return l.Screen()
}

// searchScreen is the search page with the text typed so far.
func searchScreen(a *dataset.App, typed string) dataset.Screen {
	l := dataset.NewLayout(pageSearch)
	l.SearchBar(typed, a.Noun)
	return l.Screen()
}

// resultsScreen is the results page: the query, a chip per value of every chip
// attribute, an opener per page attribute, the button that takes the results to
// the pool, and the cards from the scroll position on.
func resultsScreen(a *dataset.App, r *results, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pageResults)
	l.QueryBar(r.query)
	var texts, openers []string
	var attrs, openerAttrs []map[string]string
	for _, at := range a.Attributes {
		switch at.Reveal {
		case dataset.RevealChip:
			for _, v := range at.Values {
				texts = append(texts, v)
				attrs = append(attrs, map[string]string{"group": at.Key, "selected": strconv.FormatBool(r.filters[at.Key] == v)})
			}
		case dataset.RevealPage:
			t := at.Label
			if v := r.filters[at.Key]; v != "" {
				t += ": " + v
			}
			openers = append(openers, t)
			openerAttrs = append(openerAttrs, map[string]string{"opens": at.Key})
		}
	}
	l.Chips("chip", texts, attrs)
	l.Chips("button", openers, openerAttrs)
	items := r.shown()
	l.Full("button", textPool, dataset.RowH, map[string]string{"results": strconv.Itoa(len(items))})
	l.Cards(items[min(r.offset, len(items)):], a.Keys(), summaries, nil)
	return l.Screen()
}

// optionsScreen lists Any and the values of a page attribute, the current one
// selected.
func optionsScreen(at *dataset.Attribute, current string) dataset.Screen {
	l := dataset.NewLayout(pageOptions)
	l.TopBar(at.Label)
	for _, v := range append([]string{textAny}, at.Values...) {
		sel := v == current || v == textAny && current == ""
		l.Full("option", v, dataset.RowH, map[string]string{"selected": strconv.FormatBool(sel)})
	}
	return l.Screen()
}

// detailScreen is an item's page: its name, one line per attribute and reviews,
// and the Save (or Saved) and Book buttons.
func detailScreen(a *dataset.App, it *dataset.Item, saved bool) dataset.Screen {
	l := dataset.NewLayout(pageDetail)
	l.TopBar(it.Name)
	for _, at := range a.Attributes {
		l.Full("text", at.Key+": "+it.Attrs[at.Key], dataset.LineH, map[string]string{"attr": at.Key})
	}
	l.Full("text", "reviews: "+it.Attrs["reviews"], dataset.LineH, map[string]string{"attr": "reviews"})
	save := "Save"
	if saved {
		save = "Saved"
	}
	l.SaveAndBook(save)
	return l.Screen()
}

// poolScreen is the item pool: the candidates' cards under a count.
func poolScreen(a *dataset.App, cands []dataset.Item, summaries bool) dataset.Screen {
	l := dataset.NewLayout(pagePool)
	l.Full("text", strconv.Itoa(len(cands))+" results", dataset.RowH, nil)
	l.Cards(cands, a.Keys(), summaries, nil)
	return l.Screen()
}
