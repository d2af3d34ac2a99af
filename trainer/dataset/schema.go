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
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// The shape check walks a line's JSON against the Go types of the format before it
// is decoded, so that an unknown field, a missing field, a repeated field and a
// value of the wrong kind are each reported with their exact path
// (steps[3].answer.box) rather than as encoding/json's first error. A field whose
// json tag has omitempty is optional; every other field must be present (it may
// still be empty, like an element's text). The walk runs on JSON already known to be
// valid, scans bytes in place and allocates only to report.

// fieldInfo is one JSON field of a struct type.
type fieldInfo struct {
	name     string
	typ      reflect.Type
	optional bool
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

func fieldsOf(t reflect.Type) []fieldInfo {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]fieldInfo)
	}
	var fs []fieldInfo
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		fs = append(fs, fieldInfo{name: name, typ: t.Field(i).Type, optional: strings.Contains(opts, "omitempty")})
	}
	fieldCache.Store(t, fs)
	return fs
}

// pathPart is one step of a field path: a field name, or an index when name is "".
type pathPart struct {
	name  string
	index int
}

// shapeChecker reports the shape problems of one line.
type shapeChecker struct {
	report func(field, msg string)
	path   []pathPart
}

func (c *shapeChecker) fail(msg string) {
	var b strings.Builder
	for _, p := range c.path {
		switch {
		case p.name == "":
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
		case b.Len() > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(p.name)
		}
	}
	c.report(b.String(), msg)
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// wantKind is the JSON kind a Go type decodes from.
func wantKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "an array"
}

// check walks the valid JSON value raw against t.
func (c *shapeChecker) check(raw []byte, t reflect.Type) {
	if t.Kind() == reflect.Pointer {
		if raw[0] != 'n' {
			c.check(raw, t.Elem())
		}
		return
	}
	if kind, want := jsonKind(raw), wantKind(t); kind != want {
		c.fail("want " + want + ", got " + kind)
		return
	}
	switch t.Kind() {
	case reflect.Int:
		if _, err := strconv.Atoi(string(raw)); err != nil {
			c.fail("want a whole number, got " + string(raw))
		}
	case reflect.Struct:
		c.object(raw, t)
	case reflect.Map:
		members(raw, func(key, val []byte) {
			c.path = append(c.path, pathPart{name: string(key)})
			c.check(val, t.Elem())
			c.path = c.path[:len(c.path)-1]
		})
	case reflect.Slice, reflect.Array:
		n := 0
		elements(raw, func(val []byte) {
			if t.Kind() == reflect.Slice || n < t.Len() {
				c.path = append(c.path, pathPart{index: n})
				c.check(val, t.Elem())
				c.path = c.path[:len(c.path)-1]
			}
			n++
		})
		if t.Kind() == reflect.Array && n != t.Len() {
			c.fail("want " + strconv.Itoa(t.Len()) + " numbers, got " + strconv.Itoa(n))
		}
	}
}

// object checks the members of the JSON object raw against the struct type t.
func (c *shapeChecker) object(raw []byte, t reflect.Type) {
	fs := fieldsOf(t)
	var seen uint64
	members(raw, func(key, val []byte) {
		k := -1
		for i := range fs {
			if fs[i].name == string(key) {
				k = i
				break
			}
		}
		c.path = append(c.path, pathPart{name: string(key)})
		switch {
		case k < 0:
			c.fail("unknown field")
		case seen&(1<<k) != 0:
			c.fail("field given twice")
		default:
			seen |= 1 << k
			c.check(val, fs[k].typ)
		}
		c.path = c.path[:len(c.path)-1]
	})
	for i, f := range fs {
		if seen&(1<<i) == 0 && !f.optional {
			c.path = append(c.path, pathPart{name: f.name})
			c.fail("missing required field")
			c.path = c.path[:len(c.path)-1]
		}
	}
}

// The scanner below reads JSON already checked by json.Valid.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns the index just after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	return j
}

// stringEnd returns the index just after the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// members calls fn with each key (unquoted) and value of the object b.
func members(b []byte, fn func(key, val []byte)) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := stringEnd(b, i)
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(b[i:end], &s)
			key = []byte(s)
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		vend := valueEnd(b, i)
		fn(key, b[i:vend])
		i = skipSpace(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// elements calls fn with each element of the array b.
func elements(b []byte, fn func(val []byte)) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		end := valueEnd(b, i)
		fn(b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}
