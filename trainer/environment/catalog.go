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
	"fmt"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// How the app lets the user narrow the results by an attribute: the generator's
// own (dataset.Attribute.Reveal).
const (
	// byQuery: the attribute is searched for in the search box.
	byQuery = dataset.RevealQuery
	// byChip: a filter chip per value on the results page.
	byChip = dataset.RevealChip
	// byPage: an opener button on the results page opens a page of values.
	byPage = dataset.RevealPage
)

// attribute is one attribute of a channel's items.
type attribute struct {
	key    string
	how    string // byQuery, byChip or byPage
	label  string // the opener's text, for byPage
	values []string
}

// app is a channel's app: its name, its items' noun and attributes (in the
// order detail pages list them, the query first), and the item names in use.
type app struct {
	channel, name, noun string
	attrs               []attribute
	names               []string
}

// appOf returns the app of channel, the generator's (dataset.AppOf).
func appOf(channel string) (*app, error) {
	spec, err := dataset.AppOf(channel)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	a := &app{channel: spec.Channel, name: spec.Name, noun: spec.Noun, names: spec.ItemNames}
	for _, at := range spec.Attributes {
		a.attrs = append(a.attrs, attribute{key: at.Key, how: at.Reveal, label: at.Label, values: at.Values})
	}
	return a, nil
}

// attr returns the attribute with the given key, or nil.
func (a *app) attr(key string) *attribute {
	for i := range a.attrs {
		if a.attrs[i].key == key {
			return &a.attrs[i]
		}
	}
	return nil
}
