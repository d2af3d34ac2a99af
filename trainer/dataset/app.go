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
	"fmt"
	"slices"
	"strings"
)

// How an App lets the user narrow its items by an attribute (Attribute.Reveal).
const (
	// RevealQuery: the value is typed into the search box.
	RevealQuery = "query"
	// RevealChip: each value is a filter chip on the results page.
	RevealChip = "chip"
	// RevealPage: an opener button on the results page opens a page of the values.
	RevealPage = "page"
)

// App is a channel's app as the generator draws it: what a simulated app needs to
// show the same items, attributes, chips and option pages.
type App struct {
	Channel, Name, Noun string
	// Attributes are the items' attributes, the search query first, in the order
	// detail pages list them.
	Attributes []Attribute
	// ItemNames are every item name the app can show.
	ItemNames []string
}

// Attribute is one attribute of an app's items, and a possible preference.
type Attribute struct {
	Key string
	// Label is the opener's text, for RevealPage.
	Label string
	// Reveal is RevealQuery, RevealChip or RevealPage.
	Reveal string
	Values []string
	// AtLeast: the values are in increasing order and an item fits a preference
	// for v when its value is v or a later one; otherwise only v itself fits.
	AtLeast bool
}

// AppOf returns the app of channel, a copy the caller may keep.
func AppOf(channel string) (App, error) {
	c := channelByName(channel)
	if c == nil {
		return App{}, fmt.Errorf("dataset: unknown channel %q, want one of %s", channel, strings.Join(Channels(), ", "))
	}
	a := App{Channel: c.name, Name: c.app, Noun: c.noun}
	for _, d := range c.dims {
		a.Attributes = append(a.Attributes, Attribute{Key: d.key, Label: d.label, Reveal: d.reveal.String(),
			Values: slices.Clone(d.values), AtLeast: d.atLeast})
	}
	for _, x := range c.nameA {
		for _, y := range c.nameB {
			a.ItemNames = append(a.ItemNames, x+" "+y)
		}
	}
	return a, nil
}

// String is the reveal's name: RevealQuery, RevealChip or RevealPage.
func (r reveal) String() string {
	switch r {
	case byQuery:
		return RevealQuery
	case byFilter:
		return RevealChip
	}
	return RevealPage
}

// Keys are the keys of the app's attributes, in order: what a summary card lists.
func (a *App) Keys() []string {
	keys := make([]string, len(a.Attributes))
	for i, at := range a.Attributes {
		keys[i] = at.Key
	}
	return keys
}
