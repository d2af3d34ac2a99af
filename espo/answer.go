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
	"strconv"
	"strings"
	"unicode"
)

// Action types of the GUI-R1 answer format. The GUI stage uses the first five
// (a scroll carries its direction, up, down, left or right, as its text); the
// item-pool stage answers ActionPoolFound with the inferred need as text, and the
// decision stage answers ActionRecommendation with text "Yes" or "No".
const (
	ActionClick          = "click"
	ActionType           = "type"
	ActionScroll         = "scroll"
	ActionExit           = "exit"
	ActionComplete       = "complete"
	ActionPoolFound      = "pool_found"
	ActionRecommendation = "recommendation"
)

// NoText is the input_text of an action that carries no text, and NoPoint the point
// of an action that does not point, as the GUI-R1 format writes them.
const NoText = "no input text"

// NoPoint is the point of an action that does not point.
var NoPoint = [2]float64{-100, -100}

// Action is one parsed answer: its type, its point (pixels or normalised to [0,1],
// as the model wrote it; NoPoint when it does not point) and its input text (NoText
// when it has none). Type and Text are trimmed of surrounding white space.
type Action struct {
	Type  string
	Point [2]float64
	Text  string
}

// The errors ParseAnswer returns. Each says what is wrong with the answer; they are
// values, compared with errors.Is, and returning one allocates nothing.
var (
	ErrNoThink       = errors.New("espo: answer: missing <think>...</think> block at the start")
	ErrNoAnswer      = errors.New("espo: answer: missing <answer>...</answer> block after </think>")
	ErrOutside       = errors.New("espo: answer: text outside the <think> and <answer> blocks")
	ErrNotList       = errors.New("espo: answer: want a list with one action, [{...}]")
	ErrActionCount   = errors.New("espo: answer: the list must hold exactly one action")
	ErrNotDict       = errors.New("espo: answer: an action must be a dict, {...}")
	ErrKey           = errors.New("espo: answer: want a quoted key 'action', 'point' or 'input_text'")
	ErrUnknownKey    = errors.New("espo: answer: unknown key; the keys are 'action', 'point' and 'input_text'")
	ErrDuplicateKey  = errors.New("espo: answer: a key appears twice")
	ErrColon         = errors.New("espo: answer: want ':' after a key")
	ErrComma         = errors.New("espo: answer: want ',' or a closing bracket")
	ErrString        = errors.New("espo: answer: 'action' and 'input_text' must be quoted strings")
	ErrUnterminated  = errors.New("espo: answer: unterminated string")
	ErrPoint         = errors.New("espo: answer: 'point' must be [x, y] with two finite numbers")
	ErrMissingAction = errors.New("espo: answer: missing 'action'")
	ErrMissingPoint  = errors.New("espo: answer: missing 'point'")
	ErrMissingText   = errors.New("espo: answer: missing 'input_text'")
	ErrEmptyAction   = errors.New("espo: answer: 'action' is empty")
)

// ParseAnswer parses an answer in the GUI-R1 format
//
//	<think>...</think><answer>[{'action': 'click', 'point': [x, y], 'input_text': 'no input text'}]</answer>
//
// White space may surround the blocks and every token inside the answer; strings may
// be in single or double quotes, with backslash escapes; the keys may come in any
// order, a trailing comma is allowed and the point may also be a tuple (x, y). All
// three keys are required and no other key is allowed. A malformed answer gives the
// zero Action and one of the Err* values above; ParseAnswer never panics. It
// allocates only for a string that holds a backslash escape.
func ParseAnswer(s string) (Action, error) {
	body, err := answerBody(s)
	if err != nil {
		return Action{}, err
	}
	p := parser{s: body}
	a, err := p.list()
	if err != nil {
		return Action{}, err
	}
	return a, nil
}

// answerBody returns the text between <answer> and </answer>, checking the blocks.
func answerBody(s string) (string, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "<think>")
	if !ok {
		return "", ErrNoThink
	}
	_, rest, ok = strings.Cut(rest, "</think>")
	if !ok {
		return "", ErrNoThink
	}
	rest, ok = strings.CutPrefix(strings.TrimLeftFunc(rest, isPythonSpace), "<answer>")
	if !ok {
		return "", ErrNoAnswer
	}
	body, rest, ok := strings.Cut(rest, "</answer>")
	if !ok {
		return "", ErrNoAnswer
	}
	if rest != "" {
		return "", ErrOutside
	}
	return body, nil
}

const spaces = " \t\n\r\v\f"

// isPythonSpace reports whether r is white space to Python's str.isspace, which a
// GUI-R1 pattern's \s matches on str: Go's unicode.IsSpace and the separators
// U+001C..U+001F.
func isPythonSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// parser reads the Python literal inside the answer block.
type parser struct {
	s   string
	pos int
}

func (p *parser) skip() {
	for p.pos < len(p.s) && strings.IndexByte(spaces, p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (p *parser) peek() byte {
	p.skip()
	if p.pos == len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

// list parses [ action ] with an optional trailing comma and nothing after it.
func (p *parser) list() (Action, error) {
	if p.peek() != '[' {
		return Action{}, ErrNotList
	}
	p.pos++
	if p.peek() == ']' {
		return Action{}, ErrActionCount
	}
	a, err := p.dict()
	if err != nil {
		return Action{}, err
	}
	if p.peek() == ',' {
		p.pos++
	}
	switch p.peek() {
	case ']':
		p.pos++
	case '{':
		return Action{}, ErrActionCount
	default:
		return Action{}, ErrComma
	}
	if p.peek() != 0 {
		return Action{}, ErrOutside
	}
	return a, nil
}

// dict parses one action, {'action': ..., 'point': ..., 'input_text': ...}.
func (p *parser) dict() (Action, error) {
	if p.peek() != '{' {
		return Action{}, ErrNotDict
	}
	p.pos++
	var a Action
	var seen [3]bool
	for p.peek() != '}' {
		key, err := p.str(ErrKey)
		if err != nil {
			return Action{}, err
		}
		var k int
		switch key {
		case "action":
			k = 0
		case "point":
			k = 1
		case "input_text":
			k = 2
		default:
			return Action{}, ErrUnknownKey
		}
		if seen[k] {
			return Action{}, ErrDuplicateKey
		}
		seen[k] = true
		if p.peek() != ':' {
			return Action{}, ErrColon
		}
		p.pos++
		switch k {
		case 0:
			a.Type, err = p.str(ErrString)
		case 1:
			a.Point, err = p.point()
		default:
			a.Text, err = p.str(ErrString)
		}
		if err != nil {
			return Action{}, err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
		default:
			return Action{}, ErrComma
		}
	}
	p.pos++
	switch {
	case !seen[0]:
		return Action{}, ErrMissingAction
	case !seen[1]:
		return Action{}, ErrMissingPoint
	case !seen[2]:
		return Action{}, ErrMissingText
	case a.Type == "":
		return Action{}, ErrEmptyAction
	}
	return a, nil
}

// str parses a quoted string and trims white space inside the quotes; notString is
// the error when the next token is not a string.
func (p *parser) str(notString error) (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", notString
	}
	p.pos++
	start := p.pos
	escaped := false
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case '\\':
			escaped = true
			p.pos += 2
			continue
		case q:
			v := p.s[start:p.pos]
			p.pos++
			if escaped {
				v = unescape(v)
			}
			return strings.TrimSpace(v), nil
		}
		p.pos++
	}
	return "", ErrUnterminated
}

// unescape resolves the backslash escapes of a Python string literal as Python
// decodes them: \\ \' \" \a \b \f \n \r \t \v, a backslash before a line break
// (which drops both), octal \ooo (one to three digits), \xhh, \uhhhh and
// \Uhhhhhhhh. An unknown or malformed escape keeps its backslash, as Python does
// with an unknown one (where it refuses a malformed \x or \u, the answer keeps the
// text as written).
func unescape(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v) {
			b.WriteByte(c)
			continue
		}
		if n := writeEscape(&b, v[i+1:]); n > 0 {
			i += n
			continue
		}
		b.WriteByte('\\')
	}
	return b.String()
}

// simpleEscapes maps the letter of a one-character escape to its byte.
var simpleEscapes = map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// writeEscape writes the character of the escape whose text (after the backslash)
// starts rest, and returns how many bytes of rest it used; 0 for no valid escape.
func writeEscape(b *strings.Builder, rest string) int {
	c := rest[0]
	if x, ok := simpleEscapes[c]; ok {
		b.WriteByte(x)
		return 1
	}
	switch c {
	case '\n':
		return 1
	case 'x':
		return writeCode(b, rest, 2, 16)
	case 'u':
		return writeCode(b, rest, 4, 16)
	case 'U':
		return writeCode(b, rest, 8, 16)
	}
	if c >= '0' && c <= '7' {
		n := 1
		for n < 3 && n < len(rest) && rest[n] >= '0' && rest[n] <= '7' {
			n++
		}
		code, _ := strconv.ParseUint(rest[:n], 8, 32)
		b.WriteRune(rune(code))
		return n
	}
	return 0
}

// writeCode writes the code point of exactly digits hex digits after rest[0] and
// returns 1+digits, or 0 when they are missing or the code point is not valid.
func writeCode(b *strings.Builder, rest string, digits, base int) int {
	if len(rest) < 1+digits {
		return 0
	}
	code, err := strconv.ParseUint(rest[1:1+digits], base, 32)
	if err != nil || code > unicode.MaxRune {
		return 0
	}
	b.WriteRune(rune(code))
	return 1 + digits
}

// point parses [x, y] or (x, y).
func (p *parser) point() ([2]float64, error) {
	var pt [2]float64
	closing := byte(']')
	switch p.peek() {
	case '[':
	case '(':
		closing = ')'
	default:
		return pt, ErrPoint
	}
	p.pos++
	for i := range pt {
		if i == 1 {
			if p.peek() != ',' {
				return pt, ErrPoint
			}
			p.pos++
		}
		v, ok := p.number()
		if !ok {
			return pt, ErrPoint
		}
		pt[i] = v
	}
	if p.peek() == ',' {
		p.pos++
	}
	if p.peek() != closing {
		return pt, ErrPoint
	}
	p.pos++
	return pt, nil
}

// number parses a finite decimal number.
func (p *parser) number() (float64, bool) {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.pos]) >= 0 {
		p.pos++
	}
	tok := p.s[start:p.pos]
	if tok == "" || !strings.ContainsAny(tok, "0123456789") {
		return 0, false
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// AppendAnswer appends the answer for a in the GUI-R1 format, with the given
// thought, to dst and returns the extended slice; ParseAnswer reads it back as a
// (up to white space at the ends of its strings). Strings are written in single
// quotes with backslash escapes and numbers in the shortest form that reads back
// exactly. It is what a supervised (SFT) target looks like.
func AppendAnswer(dst []byte, think string, a Action) []byte {
	dst = append(dst, "<think>"...)
	dst = append(dst, think...)
	dst = append(dst, "</think><answer>[{'action': "...)
	dst = appendQuoted(dst, a.Type)
	dst = append(dst, ", 'point': ["...)
	dst = strconv.AppendFloat(dst, a.Point[0], 'g', -1, 64)
	dst = append(dst, ", "...)
	dst = strconv.AppendFloat(dst, a.Point[1], 'g', -1, 64)
	dst = append(dst, "], 'input_text': "...)
	dst = appendQuoted(dst, a.Text)
	return append(dst, "}]</answer>"...)
}

// FormatAnswer returns AppendAnswer(nil, think, a) as a string.
func FormatAnswer(think string, a Action) string {
	return string(AppendAnswer(nil, think, a))
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\'')
}
