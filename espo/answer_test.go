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
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Action
	}{
		{"click pixels", `<think>tap search</think><answer>[{'action': 'click', 'point': [540, 1200], 'input_text': 'no input text'}]</answer>`,
			Action{Type: "click", Point: [2]float64{540, 1200}, Text: "no input text"}},
		{"normalised, double quotes", `<think></think><answer>[{"action": "click", "point": [0.25, 0.5], "input_text": "no input text"}]</answer>`,
			Action{Type: "click", Point: [2]float64{0.25, 0.5}, Text: "no input text"}},
		{"white space everywhere", "  \n<think>\nx\n</think>\n\n<answer>\n [ {\n 'action' : ' type ' ,\n 'point' : [ -100 , -100 ] ,\n 'input_text' : ' New York hotel '\n } ]\n</answer>\n ",
			Action{Type: "type", Point: [2]float64{-100, -100}, Text: "New York hotel"}},
		{"keys in any order, trailing commas, tuple", `<think>t</think><answer>[{'input_text': 'Yes', 'point': (-100, -100,), 'action': 'recommendation',},]</answer>`,
			Action{Type: "recommendation", Point: [2]float64{-100, -100}, Text: "Yes"}},
		{"mixed quotes and escapes", `<think>t</think><answer>[{'action': "pool_found", 'point': [-1e2, -100.0], 'input_text': 'a user\'s \"cheap\" hotel\\'}]</answer>`,
			Action{Type: "pool_found", Point: [2]float64{-100, -100}, Text: `a user's "cheap" hotel\`}},
		{"other quote inside", `<think>t</think><answer>[{'action': 'type', 'point': [-100, -100], 'input_text': "Macy's"}]</answer>`,
			Action{Type: "type", Point: [2]float64{-100, -100}, Text: "Macy's"}},
		{"Python escapes", `<think>t</think><answer>[{'action': 'type', 'point': [-100, -100], 'input_text': 'caf\u00e9 \x41\U0001F600 \101\r\n\t\a\b\f\v \q \xZZ'}]</answer>`,
			Action{Type: "type", Point: [2]float64{-100, -100}, Text: "café A😀 A\r\n\t\a\b\f\v \\q \\xZZ"}},
		{"a backslash before a line break drops both", "<think>t</think><answer>[{'action': 'type', 'point': [-100, -100], 'input_text': 'new \\\nyork'}]</answer>",
			Action{Type: "type", Point: [2]float64{-100, -100}, Text: "new york"}},
		{"Unicode spaces between the blocks", "<think>t</think>\u00a0\u3000\u2003\x1c<answer>[{'action': 'exit', 'point': [-100, -100], 'input_text': 'no input text'}]</answer>",
			Action{Type: "exit", Point: [2]float64{-100, -100}, Text: "no input text"}},
		{"think holds tags", `<think>I could answer <answer>x</answer> but</think><answer>[{'action': 'exit', 'point': [-100, -100], 'input_text': 'no input text'}]</answer>`,
			Action{Type: "exit", Point: [2]float64{-100, -100}, Text: "no input text"}},
	} {
		got, err := ParseAnswer(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseAnswer = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseAnswerErrors(t *testing.T) {
	const ok = `'action': 'click', 'point': [1, 2], 'input_text': 'x'`
	wrap := func(body string) string { return "<think>t</think><answer>" + body + "</answer>" }
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrNoThink},
		{"[{" + ok + "}]", ErrNoThink},
		{"<think>t<answer>[{" + ok + "}]</answer>", ErrNoThink},
		{"<think>t</think>[{" + ok + "}]", ErrNoAnswer},
		{"<think>t</think><answer>[{" + ok + "}]", ErrNoAnswer},
		{"<think>t</think>x<answer>[{" + ok + "}]</answer>", ErrNoAnswer},
		{wrap("[{"+ok+"}]") + " and more", ErrOutside},
		{wrap("[{" + ok + "}] x"), ErrOutside},
		{wrap("{" + ok + "}"), ErrNotList},
		{wrap("[]"), ErrActionCount},
		{wrap("[{" + ok + "}, {" + ok + "}]"), ErrActionCount},
		{wrap("[{" + ok + "} {" + ok + "}]"), ErrActionCount},
		{wrap("[{" + ok + "}"), ErrComma},
		{wrap("['click']"), ErrNotDict},
		{wrap("[{action: 'click'}]"), ErrKey},
		{wrap("[{'x': 1}]"), ErrUnknownKey},
		{wrap("[{'': 1}]"), ErrUnknownKey},
		{wrap("[{" + ok + ", 'action': 'type'}]"), ErrDuplicateKey},
		{wrap("[{'action' 'click'}]"), ErrColon},
		{wrap("[{'action': 'click' 'point': [1, 2]}]"), ErrComma},
		{wrap("[{'action': click}]"), ErrString},
		{wrap("[{'action': 1}]"), ErrString},
		{wrap("[{'action': 'click}]"), ErrUnterminated},
		{wrap(`[{'action': 'click\'}]`), ErrUnterminated},
		{wrap("[{'point': [1]}]"), ErrPoint},
		{wrap("[{'point': [1, 2, 3]}]"), ErrPoint},
		{wrap("[{'point': 'x'}]"), ErrPoint},
		{wrap("[{'point': [nan, 1]}]"), ErrPoint},
		{wrap("[{'point': [1e999, 1]}]"), ErrPoint},
		{wrap("[{'point': [1-2, 1]}]"), ErrPoint},
		{wrap("[{'point': [-, 1]}]"), ErrPoint},
		{wrap("[{'point': [1, 2)}]"), ErrPoint},
		{wrap("[{'point': [1, 2], 'input_text': 'x'}]"), ErrMissingAction},
		{wrap("[{'action': 'click', 'input_text': 'x'}]"), ErrMissingPoint},
		{wrap("[{'action': 'click', 'point': [1, 2]}]"), ErrMissingText},
		{wrap("[{'action': '  ', 'point': [1, 2], 'input_text': 'x'}]"), ErrEmptyAction},
	} {
		got, err := ParseAnswer(tc.in)
		if !errors.Is(err, tc.want) || got != (Action{}) {
			t.Errorf("ParseAnswer(%q) = %+v, %v; want %v", tc.in, got, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "espo: answer: ") {
			t.Errorf("error %q lacks its prefix", err)
		}
	}
}

func TestFormatAnswerRoundTrip(t *testing.T) {
	for _, a := range []Action{
		{Type: ActionClick, Point: [2]float64{540, 1200}, Text: NoText},
		{Type: ActionType, Point: NoPoint, Text: `it's a "quote" \ and` + "\n\ttab"},
		{Type: ActionScroll, Point: [2]float64{0.123456789, 1e-7}, Text: "down"},
		{Type: ActionRecommendation, Point: [2]float64{-1e21, 3}, Text: "No"},
	} {
		s := FormatAnswer("why", a)
		got, err := ParseAnswer(s)
		if err != nil || got != a {
			t.Errorf("ParseAnswer(FormatAnswer(%+v)) = %+v, %v (answer %s)", a, got, err, s)
		}
	}
	const want = `<think>t</think><answer>[{'action': 'click', 'point': [540, 0.5], 'input_text': 'no input text'}]</answer>`
	if got := FormatAnswer("t", Action{Type: "click", Point: [2]float64{540, 0.5}, Text: NoText}); got != want {
		t.Errorf("FormatAnswer = %s, want %s", got, want)
	}
}

func TestParseAnswerAllocs(t *testing.T) {
	s := `<think>x</think><answer>[{'action': 'type', 'point': [-100, -100], 'input_text': 'New York'}]</answer>`
	bad := `<think>x</think><answer>[{'action': 'type', 'point': [-100, -100]}]</answer>`
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseAnswer(s); _, _ = ParseAnswer(bad) }); n != 0 {
		t.Errorf("ParseAnswer allocates %v times, want 0", n)
	}
}

// FuzzParseAnswer checks that ParseAnswer never panics, that an answer it accepts
// is well formed, and that formatting the action reads back the same action.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`<think>tap search</think><answer>[{'action': 'click', 'point': [540, 1200], 'input_text': 'no input text'}]</answer>`,
		`<think></think><answer>[{"action": "type", "point": [-100, -100], "input_text": "hotel in New York"}]</answer>`,
		`<think>t</think><answer>[{'input_text': 'Yes', 'point': (-100, -100,), 'action': 'recommendation',},]</answer>`,
		`<think>t</think><answer>[{'action': 'pool_found', 'point': [-1e2, -100.0], 'input_text': 'a user\'s \"cheap\" hotel\\'}]</answer>`,
		`<think>t</think><answer>[{'action': 'scroll', 'point': [0.5, 0.5], 'input_text': 'down'}]</answer>`,
		`<think>t</think><answer>[{'action': 'click', 'point': [1, 2)}]</answer>`,
		`<think>t</think><answer>[{'action': 'click}]</answer>`,
		`<think>t</think><answer>[]</answer>`,
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnswer(s)
		if err != nil {
			if a != (Action{}) || !strings.HasPrefix(err.Error(), "espo: answer: ") {
				t.Fatalf("ParseAnswer(%q) = %+v, %v", s, a, err)
			}
			return
		}
		if a.Type == "" || math.IsNaN(a.Point[0]) || math.IsInf(a.Point[0], 0) || math.IsNaN(a.Point[1]) || math.IsInf(a.Point[1], 0) {
			t.Fatalf("ParseAnswer(%q) = %+v, not well formed", s, a)
		}
		if a.Type != strings.TrimSpace(a.Type) || a.Text != strings.TrimSpace(a.Text) {
			t.Fatalf("ParseAnswer(%q) = %+v, not trimmed", s, a)
		}
		b, err := ParseAnswer(FormatAnswer("", a))
		if err != nil || b != a {
			t.Fatalf("round trip of %+v gives %+v, %v", a, b, err)
		}
	})
}
