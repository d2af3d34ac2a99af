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

// The screen layout, the one both the recorded episodes (this package's
// generator) and the simulated app (trainer/environment) draw their screens with.
//
// Screens are laid out on a grid of thousandths of the screen (a portrait phone,
// Viewport pixels), from the top down; boxes never overlap. Coordinates stay
// integers until they become a Box, so a point drawn inside a box is inside it
// exactly.

// Viewport is the screen size, in pixels, of generated episodes.
var Viewport = [2]int{1080, 2400}

// The grid, in thousandths of the screen.
const (
	// MarginX is the left edge of a row; ScreenW-MarginX is its right edge.
	MarginX = 40
	// ScreenW is the width of the screen.
	ScreenW = 1000
	// RowH is the height of a bar, a search box, a button or an option.
	RowH = 70
	// LineH is the height of a line of text, such as an item's attribute.
	LineH = 50

	topY     = 20  // the top of a screen's first row
	bottomY  = 990 // no row reaches below it
	rowGap   = 12  // between rows, and between chips of a row
	chipH    = 56
	cardH    = 100
	actionH  = 80 // the Save and Book row
	charW    = 16 // width of one character of a chip
	chipPadW = 40
)

// The texts of the buttons every layout draws the same way.
const (
	TextBack   = "Back"
	TextSearch = "Search"
)

// SearchPlaceholder is the text of an empty search box of an app whose items are
// called noun.
func SearchPlaceholder(noun string) string { return "Search " + noun + "s" }

// Layout lays out one screen, row by row from the top.
type Layout struct {
	page  string
	elems []Element
	y     int // the top of the next row
}

// NewLayout starts an empty screen of the given page.
func NewLayout(page string) *Layout { return &Layout{page: page, y: topY} }

// Add places an element in the box {x1, y1, x2, y2} (thousandths) and returns its
// id, "e" and its index on the screen.
func (l *Layout) Add(role, text string, x1, y1, x2, y2 int, attrs map[string]string) string {
	id := "e" + strconv.Itoa(len(l.elems))
	box := Box{float64(x1) / 1000, float64(y1) / 1000, float64(x2) / 1000, float64(y2) / 1000}
	l.elems = append(l.elems, Element{ID: id, Role: role, Text: text, Box: box, Attrs: attrs})
	return id
}

// Row returns the top and bottom of a new row of height h and moves below it; ok
// is false, and nothing moves, when the row does not fit above the bottom.
func (l *Layout) Row(h int) (y1, y2 int, ok bool) {
	if l.y+h > bottomY {
		return 0, 0, false
	}
	y1 = l.y
	l.y += h + rowGap
	return y1, y1 + h, true
}

// Full adds an element spanning the width in a new row of height h; it reports
// whether the row fit (nothing is added when it did not).
func (l *Layout) Full(role, text string, h int, attrs map[string]string) bool {
	y1, y2, ok := l.Row(h)
	if ok {
		l.Add(role, text, MarginX, y1, ScreenW-MarginX, y2, attrs)
	}
	return ok
}

// TopBar adds a row of a Back button and a title.
func (l *Layout) TopBar(title string) {
	y1, y2, _ := l.Row(RowH)
	l.Add("button", TextBack, MarginX, y1, 120, y2, nil)
	l.Add("text", title, 140, y1, ScreenW-MarginX, y2, nil)
}

// SearchBar adds the search page's bar: Back, the focused search box showing typed
// (SearchPlaceholder(noun) while typed is empty) and the Search button.
func (l *Layout) SearchBar(typed, noun string) {
	y1, y2, _ := l.Row(RowH)
	l.Add("button", TextBack, MarginX, y1, 120, y2, nil)
	if typed == "" {
		typed = SearchPlaceholder(noun)
	}
	l.Add("search_box", typed, 140, y1, 780, y2, map[string]string{"focused": "true"})
	l.Add("button", TextSearch, 800, y1, ScreenW-MarginX, y2, nil)
}

// QueryBar adds the results page's bar: Back and the search box holding query.
func (l *Layout) QueryBar(query string) {
	y1, y2, _ := l.Row(RowH)
	l.Add("button", TextBack, MarginX, y1, 120, y2, nil)
	l.Add("search_box", query, 140, y1, ScreenW-MarginX, y2, nil)
}

// Chips lays out elements of the given role as chips, text i with attrs[i], in
// rows that wrap at the right margin, and returns their ids in order. A chip is
// as wide as its text, cut at the right margin; no texts add no row.
func (l *Layout) Chips(role string, texts []string, attrs []map[string]string) []string {
	if len(texts) == 0 {
		return nil
	}
	ids := make([]string, len(texts))
	x := MarginX
	y1, y2, _ := l.Row(chipH)
	for i, t := range texts {
		w := chipPadW + charW*len(t)
		if x+w > ScreenW-MarginX {
			x = MarginX
			y1, y2, _ = l.Row(chipH)
		}
		ids[i] = l.Add(role, t, x, y1, min(x+w, ScreenW-MarginX), y2, attrs[i])
		x += w + rowGap
	}
	return ids
}

// Cards adds a card per item, in order, until the screen is full, and returns how
// many it added. A card carries the item's id as the attribute "item"; a plain
// card also carries the item's attributes and has the item's name as its text; a
// summary card (summaries set, hard data) has SummaryText(item, keys) as its text
// instead. extra, when not nil and not empty for card i, is appended to its text
// after " · ".
func (l *Layout) Cards(items []Item, keys []string, summaries bool, extra func(i int) string) int {
	for i := range items {
		if !l.Full("card", cardText(&items[i], keys, summaries, extra, i), cardH, cardAttrs(&items[i], summaries)) {
			return i
		}
	}
	return len(items)
}

// cardText is the text of card i of Cards.
func cardText(it *Item, keys []string, summaries bool, extra func(i int) string, i int) string {
	text := it.Name
	if summaries {
		text = SummaryText(it, keys)
	}
	if extra != nil {
		if x := extra(i); x != "" {
			text += " · " + x
		}
	}
	return text
}

// cardAttrs are the element attributes of it's card: its id, and its attributes
// on a plain card.
func cardAttrs(it *Item, summaries bool) map[string]string {
	attrs := map[string]string{"item": it.ID}
	if !summaries {
		for k, v := range it.Attrs {
			attrs[k] = v
		}
	}
	return attrs
}

// SummaryText is the text of a summary card: the item's name and its value of
// every attribute key, in order, separated by " · ".
func SummaryText(it *Item, keys []string) string {
	var b strings.Builder
	b.WriteString(it.Name)
	for _, k := range keys {
		b.WriteString(" · ")
		b.WriteString(it.Attrs[k])
	}
	return b.String()
}

// SaveAndBook adds the row of an item page's buttons: save (the Save button's
// label, such as "Save" or "Saved") and Book.
func (l *Layout) SaveAndBook(save string) {
	y1, y2, _ := l.Row(actionH)
	l.Add("button", save, MarginX, y1, 480, y2, nil)
	l.Add("button", "Book", 520, y1, ScreenW-MarginX, y2, nil)
}

// Screen returns the screen laid out so far.
func (l *Layout) Screen() Screen { return Screen{Page: l.page, Elements: l.elems} }
