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
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// Problem is one thing wrong with a file: where (file, line, episode, field) and what.
type Problem struct {
	// File is the name of the file, as given in Options.Name.
	File string
	// Line is the 1-based line number; 0 for a problem of the whole file.
	Line int
	// Episode is the episode's id, when it could be read.
	Episode string
	// Field is the path of the field, such as steps[3].answer.box; empty for a
	// problem of the whole line.
	Field string
	// Message says what is wrong.
	Message string
}

// String returns the problem as FILE:LINE: episode ID: FIELD: MESSAGE, leaving out
// the parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteByte(':')
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:", p.Line)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if p.Episode != "" {
		fmt.Fprintf(&b, "episode %q: ", p.Episode)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is the error of a file with problems. It keeps the first problems (up to
// Options.MaxProblems) and counts them all.
type Problems struct {
	List  []Problem
	Total int
}

// Error lists the problems kept, one a line, and how many more there were.
func (p *Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dataset: %d problem(s)", p.Total)
	for _, q := range p.List {
		b.WriteString("\n  ")
		b.WriteString(q.String())
	}
	if more := p.Total - len(p.List); more > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", more)
	}
	return b.String()
}

// Defaults of Options.
const (
	DefaultMaxLineBytes = 16 << 20
	DefaultMaxProblems  = 100
)

// Options configures the reading of one file.
type Options struct {
	// Name is the file's name in problems.
	Name string
	// MaxLineBytes is the longest line accepted (DefaultMaxLineBytes when 0); a
	// longer line is a problem, and is skipped without being held in memory.
	MaxLineBytes int
	// MaxProblems is how many problems the returned *Problems keeps
	// (DefaultMaxProblems when 0); all are counted.
	MaxProblems int
	// OnProblem, when set, is called with every problem as it is found.
	OnProblem func(Problem)
}

// Stream reads r with the default Options; see Options.Stream.
func Stream(r io.Reader, fn func(Episode) error) error { return Options{}.Stream(r, fn) }

// Stream reads JSONL episodes from r line by line and calls fn with each valid
// episode, in file order. Blank lines are skipped. Memory is bounded by the longest
// line and the set of episode ids seen (to refuse duplicates), not by the file.
//
// An episode with any problem is never passed to fn: each of its problems is
// reported (OnProblem) and reading goes on, so one pass finds every problem of the
// file. At the end Stream returns a *Problems if there was any. An error from fn
// stops the reading and is returned as it is; so is an error reading r.
func (o Options) Stream(r io.Reader, fn func(Episode) error) error {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxProblems <= 0 {
		o.MaxProblems = DefaultMaxProblems
	}
	lr := lineReader{r: bufio.NewReaderSize(r, 64<<10), max: o.MaxLineBytes}
	probs := &Problems{}
	seen := make(map[string]int) // episode id -> line
	for {
		line, tooLong, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("dataset: %s: reading line %d: %w", o.Name, lr.line, err)
		}
		bad := false
		report := func(id, field, msg string) {
			bad = true
			p := Problem{File: o.Name, Line: lr.line, Episode: id, Field: field, Message: msg}
			probs.Total++
			if len(probs.List) < o.MaxProblems {
				probs.List = append(probs.List, p)
			}
			if o.OnProblem != nil {
				o.OnProblem(p)
			}
		}
		if tooLong {
			report("", "", fmt.Sprintf("line longer than %d bytes", o.MaxLineBytes))
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		ep, ok := decodeEpisode(line, report)
		if !ok {
			continue
		}
		validate(&ep, func(field, msg string) { report(ep.ID, field, msg) })
		if first, dup := seen[ep.ID]; dup && ep.ID != "" {
			report(ep.ID, "id", fmt.Sprintf("duplicate episode id, first used on line %d", first))
		} else if !dup {
			seen[ep.ID] = lr.line
		}
		if bad {
			continue
		}
		if err := fn(ep); err != nil {
			return err
		}
	}
	if probs.Total > 0 {
		return probs
	}
	return nil
}

// decodeEpisode decodes one line: the JSON, the format version, the shape and the
// values. ok is false when it reported a problem and ep is not to be used.
func decodeEpisode(line []byte, report func(id, field, msg string)) (ep Episode, ok bool) {
	if !json.Valid(line) {
		var syn *json.SyntaxError
		if err := json.Unmarshal(line, new(any)); errors.As(err, &syn) {
			report("", "", fmt.Sprintf("bad JSON at byte %d: %v", syn.Offset, syn))
		} else {
			report("", "", fmt.Sprintf("bad JSON: %v", err))
		}
		return ep, false
	}
	if kind := jsonKind(line); kind != "an object" {
		report("", "", "an episode must be a JSON object, got "+kind)
		return ep, false
	}
	var id, format []byte
	members(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			id = val
		case "format":
			format = val
		}
	})
	var sid, sformat string
	if json.Unmarshal(id, &sid) != nil {
		sid = ""
	}
	switch {
	case format == nil:
		report(sid, "format", fmt.Sprintf("missing format version, want %q", FormatVersion))
		return ep, false
	case json.Unmarshal(format, &sformat) != nil || sformat != FormatVersion:
		report(sid, "format", fmt.Sprintf("unsupported format version %s, want %q", format, FormatVersion))
		return ep, false
	}
	bad := false
	c := shapeChecker{report: func(field, msg string) {
		bad = true
		report(sid, field, msg)
	}}
	c.check(line, reflect.TypeFor[Episode]())
	if bad {
		return ep, false
	}
	if err := json.Unmarshal(line, &ep); err != nil {
		report(sid, "", "bad value: "+err.Error())
		return ep, false
	}
	return ep, true
}

// Load reads every episode of r with the default Options. With any problem it
// returns no episodes and the *Problems: a data set is used whole or not at all.
func Load(r io.Reader) ([]Episode, error) { return Options{}.Load(r) }

// Load reads every episode of r; see the package function Load.
func (o Options) Load(r io.Reader) ([]Episode, error) {
	return collect(func(fn func(Episode) error) error { return o.Stream(r, fn) })
}

// collect gathers the episodes a stream yields, or none if it fails.
func collect(stream func(func(Episode) error) error) ([]Episode, error) {
	var eps []Episode
	err := stream(func(ep Episode) error {
		eps = append(eps, ep)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return eps, nil
}

// StreamFile streams the file at path with the default Options, naming it by its
// path in problems.
func StreamFile(path string, fn func(Episode) error) error { return Options{}.StreamFile(path, fn) }

// StreamFile streams the file at path; Name defaults to the path.
func (o Options) StreamFile(path string, fn func(Episode) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if o.Name == "" {
		o.Name = path
	}
	return o.Stream(f, fn)
}

// LoadFile loads the file at path; see Load.
func LoadFile(path string) ([]Episode, error) {
	return collect(func(fn func(Episode) error) error { return StreamFile(path, fn) })
}

// lineReader reads lines of at most max bytes, reusing one buffer; a longer line is
// consumed and flagged, never held whole.
type lineReader struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	line int
}

// next returns the next line without its newline. At the end of the input it
// returns io.EOF (a last line without a newline is returned first).
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+1 { // +1: the newline
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return nil, false, err
		case errors.Is(err, io.EOF) && len(l.buf) == 0 && !tooLong && len(chunk) == 0:
			return nil, false, io.EOF
		}
		l.line++
		return bytes.TrimSuffix(l.buf, []byte("\n")), tooLong, nil
	}
}
