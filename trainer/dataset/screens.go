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
	"strings"
)

// Screens are laid out on a grid of thousandths of the screen (a portrait phone,
// Viewport pixels), from the top down; boxes never overlap. Coordinates stay
// integers until they become a Box, so a point drawn inside a box is inside it
// exactly.

// Viewport is the screen size, in pixels, of generated episodes.
var Viewport = [2]int{1080, 2400}

const (
	marginX  = 40
	screenW  = 1000
	bottomY  = 990
	rowGap   = 12
	chipH    = 56
	cardH    = 100
	optionH  = 72
	topBarH  = 70
	charW    = 16 // width of one character of a chip
	chipPadW = 40
)

// ibox is a box in thousandths.
type ibox [4]int

func (b ibox) box() Box {
	return Box{float64(b[0]) / 1000, float64(b[1]) / 1000, float64(b[2]) / 1000, float64(b[3]) / 1000}
}

// screenBuilder lays out one screen.
type screenBuilder struct {
	page  string
	elems []Element
	y     int // the top of the next row
}

func newScreen(page string) *screenBuilder { return &screenBuilder{page: page, y: 20} }

// add places an element and returns its id.
func (s *screenBuilder) add(role, text string, b ibox, attrs map[string]string) string {
	id := "e" + strconv.Itoa(len(s.elems))
	s.elems = append(s.elems, Element{ID: id, Role: role, Text: text, Box: b.box(), Attrs: attrs})
	return id
}

// fits reports whether a row of height h still fits above the bottom.
func (s *screenBuilder) fits(h int) bool { return s.y+h <= bottomY }

// row returns the top and bottom of a new row of height h and moves below it.
func (s *screenBuilder) row(h int) (int, int) {
	y1 := s.y
	s.y += h + rowGap
	return y1, y1 + h
}

// full adds an element spanning the width in a new row.
func (s *screenBuilder) full(role, text string, h int, attrs map[string]string) string {
	y1, y2 := s.row(h)
	return s.add(role, text, ibox{marginX, y1, screenW - marginX, y2}, attrs)
}

// topBar adds a back button and a title, or a back button, a wide field and a button.
func (s *screenBuilder) topBar(title string) {
	y1, y2 := s.row(topBarH)
	s.add("button", "Back", ibox{marginX, y1, 120, y2}, nil)
	s.add("text", title, ibox{140, y1, screenW - marginX, y2}, nil)
}

// chips lays out chips in rows, wrapping at the right margin; each chip is
// (text, attrs). It returns the ids in order.
func (s *screenBuilder) chips(texts []string, attrs []map[string]string) []string {
	ids := make([]string, len(texts))
	x := marginX
	y1, y2 := s.row(chipH)
	for i, t := range texts {
		w := chipPadW + charW*len(t)
		if x+w > screenW-marginX {
			x = marginX
			y1, y2 = s.row(chipH)
		}
		ids[i] = s.add("chip", t, ibox{x, y1, x + w, y2}, attrs[i])
		x += w + rowGap
	}
	return ids
}

// cards adds item cards until the screen is full; it returns the items shown.
// A card carries the item's id and attributes as element attributes; a summary
// card (hard data) writes the values into its text instead (see cardSummary) and
// carries only the id.
func (s *screenBuilder) cards(items []Item, c *channelSpec, summaries bool) []Item {
	for i, it := range items {
		if !s.fits(cardH) {
			return items[:i]
		}
		attrs := map[string]string{"item": it.ID}
		if summaries {
			s.full("card", cardSummary(c, &it), cardH, attrs)
			continue
		}
		for k, v := range it.Attrs {
			attrs[k] = v
		}
		s.full("card", it.Name, cardH, attrs)
	}
	return items
}

// cardSummary is the text of a summary card: the name and the item's value of
// every attribute of the channel, in the channel's order, separated by " · ".
func cardSummary(c *channelSpec, it *Item) string {
	var b strings.Builder
	b.WriteString(it.Name)
	for _, d := range c.dims {
		b.WriteString(" · ")
		b.WriteString(it.Attrs[d.key])
	}
	return b.String()
}

func (s *screenBuilder) screen() Screen { return Screen{Page: s.page, Elements: s.elems} }

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
	s := newScreen("home")
	y1, y2 := s.row(topBarH)
	s.add("text", c.app, ibox{marginX, y1, 600, y2}, nil)
	s.add("button", "Profile", ibox{880, y1, screenW - marginX, y2}, nil)
	s.full("search_box", "Search "+c.noun+"s", 70, nil)
	y1, y2 = s.row(90)
	w := (screenW - 2*marginX - 3*rowGap) / 4
	for i, cat := range c.categories {
		x := marginX + i*(w+rowGap)
		s.add("button", cat, ibox{x, y1, x + w, y2}, nil)
	}
	s.full("image", "Promotion banner", 140, nil)
	s.full("text", "Recommended for you", 40, nil)
	s.cards(featured, c, summaries)
	return s.screen()
}

// searchScreen is the search page with the query typed so far and suggestions.
func searchScreen(c *channelSpec, typed string, suggestions []string) Screen {
	s := newScreen("search")
	y1, y2 := s.row(topBarH)
	s.add("button", "Back", ibox{marginX, y1, 120, y2}, nil)
	text := typed
	if text == "" {
		text = "Search " + c.noun + "s"
	}
	s.add("search_box", text, ibox{140, y1, 780, y2}, map[string]string{"focused": "true"})
	s.add("button", "Search", ibox{800, y1, screenW - marginX, y2}, nil)
	s.full("text", "Popular searches", 40, nil)
	attrs := make([]map[string]string, len(suggestions))
	s.chips(suggestions, attrs)
	return s.screen()
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
// dimension, the option-page openers and the item cards.
func resultsScreen(c *channelSpec, st *resultsState) Screen {
	s := newScreen("results")
	y1, y2 := s.row(topBarH)
	s.add("button", "Back", ibox{marginX, y1, 120, y2}, nil)
	s.add("search_box", st.query, ibox{140, y1, screenW - marginX, y2}, nil)
	var texts []string
	var attrs []map[string]string
	for _, d := range c.dims {
		if d.reveal != byFilter {
			continue
		}
		for _, v := range d.values {
			sel := "false"
			if st.selected[d.key] == v {
				sel = "true"
			}
			texts = append(texts, v)
			attrs = append(attrs, map[string]string{"group": d.key, "selected": sel})
		}
	}
	s.chips(texts, attrs)
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
	ids := s.chips(texts, attrs)
	for _, id := range ids {
		s.elems[idIndex(id)].Role = "button"
	}
	s.cards(st.items, c, st.summaries)
	return s.screen()
}

func idIndex(id string) int {
	n, _ := strconv.Atoi(id[1:])
	return n
}

// optionsScreen is a page listing the values of one dimension (or sort orders).
func optionsScreen(title string, values []string, current string) Screen {
	s := newScreen("options")
	s.topBar(title)
	for _, v := range values {
		sel := "false"
		if v == current {
			sel = "true"
		}
		s.full("option", v, optionH, map[string]string{"selected": sel})
	}
	return s.screen()
}

// poolScreen is the result list scrolled down to the item pool: the header with
// the query and the filters is out of view, so what the user asked for is known
// only from the earlier steps.
func poolScreen(c *channelSpec, items []Item, summaries bool) Screen {
	s := newScreen("pool")
	s.topBar(strconv.Itoa(len(items)) + " results")
	s.cards(items, c, summaries)
	return s.screen()
}

// detailScreen is an item's page: its name, its attributes and actions.
func detailScreen(c *channelSpec, it *Item) Screen {
	return detailPage(c, it, func(key, v string) string { return key + ": " + v }, "Save")
}

// detailPage lays out an item's page: its name, a photo, one line per attribute
// (the channel's, then reviews) written by line(key, value), and the Save button
// (labelled save) beside Book.
func detailPage(c *channelSpec, it *Item, line func(key, v string) string, save string) Screen {
	s := newScreen("detail")
	s.topBar(it.Name)
	s.full("image", it.Name+" photo", 200, nil)
	for _, d := range c.dims {
		s.full("text", line(d.key, it.Attrs[d.key]), 50, map[string]string{"attr": d.key})
	}
	s.full("text", line("reviews", it.Attrs["reviews"]), 50, map[string]string{"attr": "reviews"})
	y1, y2 := s.row(80)
	s.add("button", save, ibox{marginX, y1, 480, y2}, nil)
	s.add("button", "Book", ibox{520, y1, screenW - marginX, y2}, nil)
	return s.screen()
}
