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

// Command gotestsummary reads "go test -json" on standard input, prints one line per
// package and the full output of every failed test, and ends with the line
// "N passed, N failed, N skipped". It exits 1 when any test or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of "go test -json" (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// summary accumulates the outcome of a test run.
type summary struct {
	passed, failed, skipped int
	badPackages             int
	output                  map[string]*strings.Builder // per package/test, until its outcome is known
}

func main() {
	s, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotestsummary:", err)
		os.Exit(2)
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	if s.failed > 0 || s.badPackages > 0 {
		os.Exit(1)
	}
}

// summarize consumes the event stream in r and writes package results and failure
// output to w.
func summarize(r io.Reader, w io.Writer) (*summary, error) {
	s := &summary{output: map[string]*strings.Builder{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, string(line)) // build errors and other plain text
			continue
		}
		s.record(e, w)
	}
	return s, sc.Err()
}

func (s *summary) record(e event, w io.Writer) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "output":
		b := s.output[key]
		if b == nil {
			b = &strings.Builder{}
			s.output[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		s.finish(e, key, w)
	}
}

func (s *summary) finish(e event, key string, w io.Writer) {
	out := s.output[key]
	delete(s.output, key)
	if e.Test == "" { // a package result
		switch e.Action {
		case "pass":
			fmt.Fprintf(w, "ok   %s %.1fs\n", e.Package, e.Elapsed)
		case "skip":
			fmt.Fprintf(w, "?    %s [no test files]\n", e.Package)
		case "fail":
			s.badPackages++
			if out != nil {
				fmt.Fprint(w, out.String())
			}
			fmt.Fprintf(w, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
		}
		return
	}
	switch e.Action {
	case "pass":
		s.passed++
	case "skip":
		s.skipped++
	case "fail":
		s.failed++
		if out != nil {
			fmt.Fprint(w, out.String())
		}
	}
}
