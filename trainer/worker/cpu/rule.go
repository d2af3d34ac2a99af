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

	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// EvidenceRule is the no-weights baseline of the comparison: the recommendation a
// fixed rule makes from the structured prompt of a recommend step (as
// worker.PromptFromStep builds it), with nothing learned. It reads the history's
// evidence as the feature policy does (typed texts; the value each filter chip,
// option page or opener chose last, a cleared chip choosing nothing) and answers
// dataset.Yes when
//
//   - every chosen value fits the candidate's attribute of the same key: equal
//     (ignoring case), or a larger number, taken as a fit (a minimum rating); a
//     key the candidate lacks (the sort order) does not count; and
//   - every typed text equals (ignoring case) some attribute value of the candidate;
//
// and dataset.No otherwise, also when the prompt has no candidate.
func EvidenceRule(p *workerpb.Prompt) string {
	item := p.GetItem()
	if item == nil {
		return dataset.No
	}
	attrs := item.GetAttributes()
	ev := readEvidence(p.GetHistory())
	for _, k := range ev.keys {
		want := ev.vals[k]
		if want == "" {
			continue
		}
		switch compare(attrs[k], want) {
		case statusOther, statusLess:
			return dataset.No
		}
	}
	for _, t := range ev.typed {
		if !hasValue(attrs, t) {
			return dataset.No
		}
	}
	return dataset.Yes
}

// hasValue reports whether some value of attrs equals t, ignoring case.
func hasValue(attrs map[string]string, t string) bool {
	for _, v := range attrs {
		if strings.EqualFold(v, t) {
			return true
		}
	}
	return false
}
