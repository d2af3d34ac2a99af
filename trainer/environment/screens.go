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
	"strings"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// Screens are laid out as the generator lays them out: a portrait phone on a grid
// of thousandths, from the top down, boxes never overlapping.
const (
	marginX = 40
	screenW = 1000
	bottomY = 990
	rowGap  = 12
	rowH    = 70
	chipH   = 56
	cardH   = 100
	lineH   = 50
	charW   = 16
	chipPad = 40
)

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
	textBack    = "Back"
	textProfile = "Profile"
	textSaved   = "Saved items"
	textOrders  = "Past orders"
	textBrowse  = "Browse all"
	// textRecentlyViewed heads the item viewed last, textViewed marks a saved item
	// the agent opened.
	textRecentlyViewed = "Recently viewed"
	textViewed         = "viewed"
	textSearch         = "Search"
	textPool           = "Choose from these results"
	textAny            = "Any"
)

// layout lays out one screen.
type layout struct {
	page  string
	elems []dataset.Element
	y     int
}

func newLayout(page string) *layout { return &layout{page: page, y: 20} }

// add places an element in the box {x1, y1, x2, y2} (thousandths).
func (l *layout) add(role, text string, x1, y1, x2, y2 int, attrs map[string]string) {
	id := "e" + strconv.Itoa(len(l.elems))
	box := dataset.Box{float64(x1) / 1000, float64(y1) / 1000, float64(x2) / 1000, float64(y2) / 1000}
	l.elems = append(l.elems, dataset.Element{ID: id, Role: role, Text: text, Box: box, Attrs: attrs})
}

// row returns the top and bottom of a new row of height h, or ok false when it
// does not fit above the bottom.
func (l *layout) row(h int) (y1, y2 int, ok bool) {
	if l.y+h > bottomY {
		return 0, 0, false
	}
	y1 = l.y
	l.y += h + rowGap
	return y1, y1 + h, true
}

// full adds an element spanning the width in a new row; it reports whether it fit.
func (l *layout) full(role, text string, h int, attrs map[string]string) bool {
	y1, y2, ok := l.row(h)
	if ok {
		l.add(role, text, marginX, y1, screenW-marginX, y2, attrs)
	}
	return ok
}

// topBar adds a Back button and a title.
func (l *layout) topBar(title string) {
	y1, y2, _ := l.row(rowH)
	l.add("button", textBack, marginX, y1, 120, y2, nil)
	l.add("text", title, 140, y1, screenW-marginX, y2, nil)
}

// chips lays out chips of the given role in rows, wrapping at the right margin.
func (l *layout) chips(role string, texts []string, attrs []map[string]string) {
	if len(texts) == 0 {
		return
	}
	x := marginX
	y1, y2, _ := l.row(chipH)
	for i, t := range texts {
		w := chipPad + charW*len(t)
		if x+w > screenW-marginX {
			x = marginX
			y1, y2, _ = l.row(chipH)
		}
		l.add(role, t, x, y1, min(x+w, screenW-marginX), y2, attrs[i])
		x += w + rowGap
	}
}

// cards adds item cards until the screen is full and returns how many it shows.
// A plain card carries the item's attributes as element attributes; a summary
// card (hard difficulty) writes them into its text. extra, when set, adds a
// status to each card's text.
func (l *layout) cards(a *dataset.App, items []dataset.Item, summaries bool, extra func(i int) string) int {
	for i := range items {
		it := &items[i]
		attrs := map[string]string{"item": it.ID}
		text := it.Name
		if summaries {
			text = summary(a, it)
		} else {
			for k, v := range it.Attrs {
				attrs[k] = v
			}
		}
		if extra != nil {
			if x := extra(i); x != "" {
				text += " · " + x
			}
		}
		if !l.full("card", text, cardH, attrs) {
			return i
		}
	}
	return len(items)
}

// summary is the text of a summary card: the name and the item's values in the
// app's order, separated by " · ".
func summary(a *dataset.App, it *dataset.Item) string {
	parts := []string{it.Name}
	for _, at := range a.Attributes {
		parts = append(parts, it.Attrs[at.Key])
	}
	return strings.Join(parts, " · ")
}

func (l *layout) screen() dataset.Screen { return dataset.Screen{Page: l.page, Elements: l.elems} }

// homeScreen is the start page: the app's name, Profile, the search box, Browse
// all, the item viewed last (as apps show what was recently viewed) and
// recommended items.
func homeScreen(a *dataset.App, featured, viewed []dataset.Item, summaries bool) dataset.Screen {
	l := newLayout(pageHome)
	y1, y2, _ := l.row(rowH)
	l.add("text", a.Name, marginX, y1, 600, y2, nil)
	l.add("button", textProfile, 800, y1, screenW-marginX, y2, nil)
	l.full("search_box", "Search "+a.Noun+"s", rowH, nil)
	l.full("button", textBrowse, rowH, nil)
	l.recentlyViewed(a, viewed, summaries)
	l.full("text", "Recommended for you", 40, nil)
	l.cards(a, featured, summaries, nil)
	return l.screen()
}

// recentlyViewed adds the item viewed last under a "Recently viewed" heading, when
// there is one.
func (l *layout) recentlyViewed(a *dataset.App, viewed []dataset.Item, summaries bool) {
	if len(viewed) == 0 {
		return
	}
	l.full("text", textRecentlyViewed, 40, nil)
	l.cards(a, viewed[:1], summaries, nil)
}

// profileScreen links to what the user did before (saved items and past orders)
// and shows the item viewed last.
func profileScreen(a *dataset.App, viewed []dataset.Item, summaries bool) dataset.Screen {
	l := newLayout(pageProfile)
	l.topBar(textProfile)
	l.full("button", textSaved, rowH, nil)
	l.full("button", textOrders, rowH, nil)
	l.recentlyViewed(a, viewed, summaries)
	return l.screen()
}

// savedScreen lists the items the user saved, those the agent has not opened yet
// first (as apps list what is new first), those it opened after them, marked
// viewed.
func savedScreen(a *dataset.App, saved []dataset.Item, viewed map[string]bool, summaries bool) dataset.Screen {
	l := newLayout(pageSaved)
	l.topBar(textSaved)
	order := slices.Clone(saved)
	slices.SortStableFunc(order, func(x, y dataset.Item) int { return cmpBool(viewed[x.ID], viewed[y.ID]) })
	l.cards(a, order, summaries, func(i int) string {
		if viewed[order[i].ID] {
			return textViewed
		}
		return ""
	})
	return l.screen()
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
	l := newLayout(pageOrders)
	l.topBar(textOrders)
	l.cards(a, ordersItems(orders), summaries, func(i int) string {
		if orders[i].kept {
			return "Kept"
		}
		return "Returned"
	})
	return l.screen()
}

// searchScreen is the search page with the text typed so far.
func searchScreen(a *dataset.App, typed string) dataset.Screen {
	l := newLayout(pageSearch)
	y1, y2, _ := l.row(rowH)
	l.add("button", textBack, marginX, y1, 120, y2, nil)
	text := typed
	if text == "" {
		text = "Search " + a.Noun + "s"
	}
	l.add("search_box", text, 140, y1, 780, y2, map[string]string{"focused": "true"})
	l.add("button", textSearch, 800, y1, screenW-marginX, y2, nil)
	return l.screen()
}

// resultsScreen is the results page: the query, a chip per value of every chip
// attribute, an opener per page attribute, the button that takes the results to
// the pool, and the cards from the scroll position on.
func resultsScreen(a *dataset.App, r *results, summaries bool) dataset.Screen {
	l := newLayout(pageResults)
	y1, y2, _ := l.row(rowH)
	l.add("button", textBack, marginX, y1, 120, y2, nil)
	l.add("search_box", r.query, 140, y1, screenW-marginX, y2, nil)
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
	l.chips("chip", texts, attrs)
	l.chips("button", openers, openerAttrs)
	items := r.shown()
	l.full("button", textPool, rowH, map[string]string{"results": strconv.Itoa(len(items))})
	l.cards(a, items[min(r.offset, len(items)):], summaries, nil)
	return l.screen()
}

// optionsScreen lists Any and the values of a page attribute, the current one
// selected.
func optionsScreen(at *dataset.Attribute, current string) dataset.Screen {
	l := newLayout(pageOptions)
	l.topBar(at.Label)
	for _, v := range append([]string{textAny}, at.Values...) {
		sel := v == current || v == textAny && current == ""
		l.full("option", v, rowH, map[string]string{"selected": strconv.FormatBool(sel)})
	}
	return l.screen()
}

// detailScreen is an item's page: its name, one line per attribute and reviews,
// and the Save (or Saved) and Book buttons.
func detailScreen(a *dataset.App, it *dataset.Item, saved bool) dataset.Screen {
	l := newLayout(pageDetail)
	l.topBar(it.Name)
	for _, at := range a.Attributes {
		l.full("text", at.Key+": "+it.Attrs[at.Key], lineH, map[string]string{"attr": at.Key})
	}
	l.full("text", "reviews: "+it.Attrs["reviews"], lineH, map[string]string{"attr": "reviews"})
	y1, y2, _ := l.row(80)
	save := "Save"
	if saved {
		save = "Saved"
	}
	l.add("button", save, marginX, y1, 480, y2, nil)
	l.add("button", "Book", 520, y1, screenW-marginX, y2, nil)
	return l.screen()
}

// poolScreen is the item pool: the candidates' cards under a count.
func poolScreen(a *dataset.App, cands []dataset.Item, summaries bool) dataset.Screen {
	l := newLayout(pagePool)
	l.full("text", strconv.Itoa(len(cands))+" results", rowH, nil)
	l.cards(a, cands, summaries, nil)
	return l.screen()
}
