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
	"strconv"
)

// The pages of a recorded episode, drawn with Layout (layout.go).

// optionH is the height of an option of a recorded options page.
const optionH = 72

// keys are the channel's attribute keys, in order: what a summary card lists.
func (c *channelSpec) keys() []string {
	keys := make([]string, len(c.dims))
	for i, d := range c.dims {
		keys[i] = d.key
	}
	return keys
}

// find returns the id of the first element with the given role and text.
func (s Screen) find(role, text string) string {
	for _, e := range s.Elements {
		if e.Role == role && e.Text == text {
			return e.ID
		}
	}
	panic("dataset: generator: no " + role + " " + strconv.Quote(text) + " on the " + s.Page + " screen")
}

// element returns the element with the given id.
func (s Screen) element(id string) *Element {
	for i := range s.Elements {
		if s.Elements[i].ID == id {
			return &s.Elements[i]
		}
	}
	panic("dataset: generator: no element " + id)
}

// homeScreen is the app's start page: a search box, shortcuts, a banner and
// recommended items (summary cards when summaries is set).
func homeScreen(c *channelSpec, featured []Item, summaries bool) Screen {
	l := NewLayout("home")
	y1, y2, _ := l.Row(RowH)
	l.Add("text", c.app, MarginX, y1, 600, y2, nil)
	l.Add("button", "Profile", 880, y1, ScreenW-MarginX, y2, nil)
	l.Full("search_box", SearchPlaceholder(c.noun), RowH, nil)
	y1, y2, _ = l.Row(90)
	w := (ScreenW - 2*MarginX - 3*rowGap) / 4
	for i, cat := range c.categories {
		x := MarginX + i*(w+rowGap)
		l.Add("button", cat, x, y1, x+w, y2, nil)
	}
	l.Full("image", "Promotion banner", 140, nil)
	l.Full("text", "Recommended for you", 40, nil)
	l.Cards(featured, c.keys(), summaries, nil)
	return l.Screen()
}

// searchScreen is the search page with the query typed so far and suggestions.
func searchScreen(c *channelSpec, typed string, suggestions []string) Screen {
	l := NewLayout("search")
	l.SearchBar(typed, c.noun)
	l.Full("text", "Popular searches", 40, nil)
	l.Chips("chip", suggestions, make([]map[string]string, len(suggestions)))
	return l.Screen()
}

// resultsState is what the results page shows: the query, the chips selected, the
// choices made on option pages, the sort order and the items in view.
type resultsState struct {
	query    string
	selected map[string]string // chip group -> selected value
	chosen   map[string]string // page dimension -> chosen value
	sort     string
	items    []Item
	// summaries: the cards are summary cards (hard data).
	summaries bool
}

// resultsScreen is the results page: the query, the filter chips of every filter
// dimension, the sort and option-page openers and the item cards.
func resultsScreen(c *channelSpec, st *resultsState) Screen {
	l := NewLayout("results")
	l.QueryBar(st.query)
	var texts []string
	var attrs []map[string]string
	for _, d := range c.dims {
		if d.reveal != byFilter {
			continue
		}
		for _, v := range d.values {
			texts = append(texts, v)
			attrs = append(attrs, map[string]string{"group": d.key, "selected": strconv.FormatBool(st.selected[d.key] == v)})
		}
	}
	l.Chips("chip", texts, attrs)
	texts, attrs = []string{"Sort: " + st.sort}, []map[string]string{{"opens": "sort"}}
	for _, d := range c.dims {
		if d.reveal == byPage {
			t := d.label
			if v := st.chosen[d.key]; v != "" {
				t += ": " + v
			}
			texts = append(texts, t)
			attrs = append(attrs, map[string]string{"opens": d.key})
		}
	}
	l.Chips("button", texts, attrs)
	l.Cards(st.items, c.keys(), st.summaries, nil)
	return l.Screen()
}

// optionsScreen is a page listing the values of one dimension (or sort orders).
func optionsScreen(title string, values []string, current string) Screen {
	l := NewLayout("options")
	l.TopBar(title)
	for _, v := range values {
		l.Full("option", v, optionH, map[string]string{"selected": strconv.FormatBool(v == current)})
	}
	return l.Screen()
}

// poolScreen is the result list scrolled down to the item pool: the header with
// the query and the filters is out of view, so what the user asked for is known
// only from the earlier steps.
func poolScreen(c *channelSpec, items []Item, summaries bool) Screen {
	l := NewLayout("pool")
	l.TopBar(strconv.Itoa(len(items)) + " results")
	l.Cards(items, c.keys(), summaries, nil)
	return l.Screen()
}

// detailScreen is an item's page: its name, its attributes and actions.
func detailScreen(c *channelSpec, it *Item) Screen {
	return detailPage(c, it, func(key, v string) string { return key + ": " + v }, "Save")
}

// detailPage lays out an item's page: its name, a photo, one line per attribute
// (the channel's, then reviews) written by line(key, value), and the Save button
// (labelled save) beside Book.
func detailPage(c *channelSpec, it *Item, line func(key, v string) string, save string) Screen {
	l := NewLayout("detail")
	l.TopBar(it.Name)
	l.Full("image", it.Name+" photo", 200, nil)
	for _, d := range c.dims {
		l.Full("text", line(d.key, it.Attrs[d.key]), LineH, map[string]string{"attr": d.key})
	}
	l.Full("text", line("reviews", it.Attrs["reviews"]), LineH, map[string]string{"attr": "reviews"})
	l.SaveAndBook(save)
	return l.Screen()
}
