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

package cpu

import (
	"strings"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// The features of the tokens architecture's MLP decisions that differ from the
// features architecture's: they read no attribute map and compare no strings.

// Intent-word tags of the roles of clicked elements.
var tIRole, tBiRole = hs("irole"), hs("birole")

// typedTexts returns the texts the history's type actions entered, in order.
func typedTexts(history []*workerpb.Action) []string {
	var out []string
	for _, a := range history {
		if a.GetType() != espo.ActionType {
			continue
		}
		if t, ok := typedText(a); ok {
			out = append(out, t)
		}
	}
	return out
}

// screenContext is contextFeatures without what the screen does not show (a
// focused field, the page an element opens) and without evidence: stage,
// channel, kind of page, the last action with its element's role and text,
// history length, scrolls, and the number of texts typed.
func screenContext(p *workerpb.Prompt, typed int) []uint64 {
	var last *workerpb.Action
	if h := p.GetHistory(); len(h) > 0 {
		last = h[len(h)-1]
	}
	scrolls := 0
	for _, a := range p.GetHistory() {
		if a.GetType() == espo.ActionScroll {
			scrolls++
		}
	}
	return []uint64{
		hcat(hs("stage"), uint64(p.GetStage())),
		hcat(hs("channel"), hs(p.GetChannel())),
		hcat(hs("page"), pageSignature(p.GetElements())),
		hcat(hs("last"), hs(last.GetType())),
		hcat(hs("lastrole"), hs(last.GetElementRole())),
		hcat(hs("lasttext"), hs(strings.ToLower(last.GetElementText()))),
		hcat(hs("hlen"), uint64(bucket(len(p.GetHistory())))),
		hcat(hs("scrolls"), uint64(min(scrolls, 3))),
		hcat(hs("typed"), uint64(min(typed, 4))),
	}
}

// addClickedRoles records, on each vocabulary word of action a's element text,
// the role of that element (a chip, an option, a button).
func (v *view) addClickedRoles(a *workerpb.Action) {
	r := hs(a.GetElementRole())
	for _, w := range words(a.GetElementText()) {
		vw := &v.vocab[v.vocabIndex[w]]
		vw.roles = appendUnique(vw.roles, r)
	}
}
