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

package espo

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalisePoint returns p in normalised screen coordinates [0,1]x[0,1]. A point
// whose two coordinates both lie in [0,1] is taken as already normalised; any other
// point is taken as pixels and divided by the screen's width and height. ok is
// false when the point is in pixels and the screen size is not known (zero), or the
// point lies off the screen: such a point can hit no box. (A pixel point inside the
// top-left 1x1 pixel reads as normalised; on a real screen that is never a target.)
func NormalisePoint(p, screen [2]float64) (q [2]float64, ok bool) {
	if inUnit(p[0]) && inUnit(p[1]) {
		return p, true
	}
	if screen[0] <= 0 || screen[1] <= 0 {
		return p, false
	}
	q = [2]float64{p[0] / screen[0], p[1] / screen[1]}
	return q, inUnit(q[0]) && inUnit(q[1])
}

func inUnit(x float64) bool { return x >= 0 && x <= 1 }

// PointInBox reports whether the normalised point p lies in the box
// {x1, y1, x2, y2}, edges included: x1 <= x <= x2 and y1 <= y <= y2.
func PointInBox(p [2]float64, box [4]float64) bool {
	return p[0] >= box[0] && p[0] <= box[2] && p[1] >= box[1] && p[1] <= box[3]
}

// maxFastTokens is how many distinct tokens per text TokenF1 handles without
// allocating.
const maxFastTokens = 64

// TokenF1 returns the token-set F1 of a predicted and a true value, the SeeClick and
// GUI-R1 rule: each text is lower-cased and split at white space into a set of
// tokens P and T, and
//
//	precision = |P ∩ T| / |P|,  recall = |P ∩ T| / |T|,
//	F1        = 2 * precision * recall / (precision + recall),   0 when P ∩ T is empty.
//
// Where GUI-R1 gives 0 for two empty texts, TokenF1 gives 1: two equal values match.
// It allocates nothing for texts of up to 64 distinct tokens.
func TokenF1(pred, truth string) float64 {
	var pa, ta [maxFastTokens]string
	p := tokenSet(pa[:0], pred)
	t := tokenSet(ta[:0], truth)
	if len(p) == 0 && len(t) == 0 {
		return 1
	}
	common := 0
	for _, x := range p {
		if containsFold(t, x) {
			common++
		}
	}
	if common == 0 {
		return 0
	}
	precision := float64(common) / float64(len(p))
	recall := float64(common) / float64(len(t))
	return 2 * precision * recall / (precision + recall)
}

// tokenSet appends the distinct white-space separated tokens of s to dst, comparing
// them without regard to case.
func tokenSet(dst []string, s string) []string {
	for s != "" {
		i := strings.IndexFunc(s, unicode.IsSpace)
		var tok string
		if i < 0 {
			tok, s = s, ""
		} else {
			tok = s[:i]
			_, n := utf8.DecodeRuneInString(s[i:])
			s = s[i+n:]
		}
		if tok != "" && !containsFold(dst, tok) {
			dst = append(dst, tok)
		}
	}
	return dst
}

func containsFold(set []string, x string) bool {
	for _, y := range set {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}
