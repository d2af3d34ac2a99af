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
	"math"
	"strings"
	"testing"
)

func TestTokenF1(t *testing.T) {
	for _, tc := range []struct {
		pred, truth string
		want        float64
	}{
		{"New York hotel", "new york HOTEL", 1},
		{"hotel in New York", "New York", 2 * (2.0 / 4) * 1 / (2.0/4 + 1)}, // P = 2/4, R = 2/2: F1 = 2/3
		{"New York", "hotel in New York", 2.0 / 3},                         // symmetric
		{"down", "down", 1},
		{"up", "down", 0},
		{"a a a b", "a b", 1},                      // sets: {a, b} and {a, b}
		{"cheap hotel", "hotel near airport", 0.4}, // P = 1/2, R = 1/3: F1 = 2*(1/6)/(5/6) = 0.4
		{"", "", 1},                                // equal values match (GUI-R1 gives 0)
		{"", "x", 0},
		{"x", "", 0},
		{"  \t ", "\n", 1},
	} {
		if got := TokenF1(tc.pred, tc.truth); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("TokenF1(%q, %q) = %v, want %v", tc.pred, tc.truth, got, tc.want)
		}
	}
	long := strings.Repeat("w ", 50) + strings.Repeat("x y z ", 30)
	if got := TokenF1(long, "w x"); math.Abs(got-2*(2.0/4)*1/(2.0/4+1)) > 1e-12 {
		t.Errorf("TokenF1 over a long text = %v", got)
	}
	if n := testing.AllocsPerRun(100, func() { TokenF1("hotel in New York", "New York hotel") }); n != 0 {
		t.Errorf("TokenF1 allocates %v times", n)
	}
}

func TestNormalisePoint(t *testing.T) {
	screen := [2]float64{1080, 2400}
	for _, tc := range []struct {
		p, screen [2]float64
		want      [2]float64
		ok        bool
	}{
		{[2]float64{0.5, 0.25}, screen, [2]float64{0.5, 0.25}, true},
		{[2]float64{0.5, 0.25}, [2]float64{}, [2]float64{0.5, 0.25}, true},
		{[2]float64{540, 600}, screen, [2]float64{0.5, 0.25}, true},
		{[2]float64{540, 600}, [2]float64{}, [2]float64{540, 600}, false},
		{[2]float64{1, 1}, screen, [2]float64{1, 1}, true},
		{[2]float64{2000, 600}, screen, [2]float64{2000.0 / 1080, 0.25}, false},
		{NoPoint, screen, [2]float64{-100.0 / 1080, -100.0 / 2400}, false},
	} {
		got, ok := NormalisePoint(tc.p, tc.screen)
		if ok != tc.ok || got != tc.want {
			t.Errorf("NormalisePoint(%v, %v) = %v, %v; want %v, %v", tc.p, tc.screen, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPointInBox(t *testing.T) {
	box := [4]float64{0.1, 0.2, 0.3, 0.4}
	for _, tc := range []struct {
		p    [2]float64
		want bool
	}{
		{[2]float64{0.2, 0.3}, true},
		{[2]float64{0.1, 0.2}, true}, // edges count
		{[2]float64{0.3, 0.4}, true},
		{[2]float64{0.31, 0.3}, false},
		{[2]float64{0.2, 0.19}, false},
		{[2]float64{math.NaN(), 0.3}, false},
	} {
		if got := PointInBox(tc.p, box); got != tc.want {
			t.Errorf("PointInBox(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
