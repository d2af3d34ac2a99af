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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// brokenCorpus maps each file of testdata/broken to the field and the message of
// the one problem it must be refused with (the duplicate id is on line 2; the index
// swap gives two problems, the first named here).
var brokenCorpus = []struct {
	file, field, message string
}{
	{"bad-json", "", "bad JSON at byte 200"},
	{"not-an-object", "", "an episode must be a JSON object, got an array"},
	{"null-episode", "", "an episode must be a JSON object, got null"},
	{"trailing-data", "", "invalid character '{' after top-level value"},
	{"missing-format", "format", "missing format version"},
	{"unsupported-version", "format", `unsupported format version "espo.smartspot/v0"`},
	{"missing-field", "steps[0].answer.input_text", "missing required field"},
	{"unknown-field", "steps[1].answer.confidence", "unknown field"},
	{"wrong-kind", "steps[1].index", "want a number, got a string"},
	{"fractional-index", "steps[1].index", "want a whole number, got 1.5"},
	{"point-length", "steps[0].answer.point", "want 2 numbers, got 3"},
	{"empty-id", "id", "empty episode id"},
	{"bad-channel", "channel", "is not a lower-case word"},
	{"empty-instruction", "instruction", "empty instruction"},
	{"bad-viewport", "viewport", "want two positive pixel sizes"},
	{"no-steps", "steps", "an episode needs steps"},
	{"index-out-of-order", "steps[1].index", "index 2, want 1"},
	{"unknown-stage", "steps[2].stage", `unknown stage "browse"`},
	{"stage-order", "steps[4].stage", "pool step after a recommend step"},
	{"two-pool-steps", "steps", "2 pool steps"},
	{"no-gui-step", "steps", "no gui step"},
	{"no-recommend-step", "steps", "no recommend step"},
	{"recommend-without-candidate", "steps[4].candidate", "a recommend step needs a candidate item"},
	{"candidate-on-gui-step", "steps[2].candidate", "only recommend steps have a candidate item"},
	{"candidate-without-name", "steps[5].candidate", "a candidate item needs an id and a name"},
	{"box-out-of-range", "steps[0].screen.elements[1].box", "out of range"},
	{"box-inverted", "steps[0].screen.elements[1].box", "is empty or inverted"},
	{"duplicate-element-id", "steps[1].screen.elements[1].id", `element id "e0" already used`},
	{"empty-role", "steps[1].screen.elements[1].role", "empty element role"},
	{"click-without-target", "steps[0].answer.target", "a click needs the id of its target element"},
	{"target-not-on-screen", "steps[0].answer.target", `target "e7" is not an element of the screen`},
	{"click-without-box", "steps[0].answer.box", "a click needs its target element's box"},
	{"box-mismatch", "steps[0].answer.box", "differs from the target element's box"},
	{"point-outside-box", "steps[0].answer.point", "lies outside the target box"},
	{"point-on-non-pointing", "steps[1].answer.point", "only a click points"},
	{"box-on-non-pointing", "steps[1].answer.box", "only a click has a target box"},
	{"unknown-action", "steps[2].answer.action", `unknown action "swipe"`},
	{"action-wrong-stage", "steps[5].answer.action", `action "click" is not allowed on a recommend step`},
	{"bad-decision", "steps[4].answer.input_text", `decision "Maybe", want Yes or No`},
	{"pool-text-mismatch", "steps[3].answer.input_text", "must be the episode's requirement"},
	{"bad-scroll-direction", "steps[1].answer.input_text", `scroll direction "sideways"`},
	{"type-without-text", "steps[1].answer.input_text", "a type action needs the typed text"},
	{"click-with-text", "steps[0].answer.input_text", `input_text "hello" on a click action`},
	{"duplicate-episode-id", "id", "duplicate episode id, first used on line 1"},
}

func TestBrokenCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "broken", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(brokenCorpus) || len(files) < 15 {
		t.Fatalf("%d broken files, %d cases: every file needs a case", len(files), len(brokenCorpus))
	}
	messages := map[string]string{}
	for _, tc := range brokenCorpus {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "broken", tc.file+".jsonl")
			var got []Problem
			err := Options{OnProblem: func(p Problem) { got = append(got, p) }}.StreamFile(path, nopEpisode)
			var ps *Problems
			if !errors.As(err, &ps) || len(got) == 0 || ps.Total != len(got) {
				t.Fatalf("got error %v and problems %v, want problems", err, got)
			}
			p := got[0]
			if p.File != path || p.Line < 1 || p.Field != tc.field || !strings.Contains(p.Message, tc.message) {
				t.Errorf("got %s\nwant %s: %s: ...%s...", p, path, tc.field, tc.message)
			}
			if len(got) > 1 && tc.file != "index-out-of-order" {
				t.Errorf("%d problems, want 1: %v", len(got), got)
			}
			if other, dup := messages[p.Message]; dup {
				t.Errorf("same message as %s: %q", other, p.Message)
			}
			messages[p.Message] = tc.file
		})
	}
}

func nopEpisode(Episode) error { return nil }

func readValid(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "valid.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// A file with one bad episode loads nothing: never a partial data set, and never a
// partial episode.
func TestLoadAllOrNothing(t *testing.T) {
	good := readValid(t)
	bad := bytes.Replace(good, []byte(`"id":"ep-1"`), []byte(`"id":"ep-2"`), 1)
	bad = bytes.Replace(bad, []byte(`"input_text":"Yes"`), []byte(`"input_text":"yes"`), 1)
	in := string(good) + "\n\n" + string(bad) + "\r\n"
	eps, err := Options{Name: "mixed.jsonl"}.Load(strings.NewReader(in))
	var ps *Problems
	if eps != nil || !errors.As(err, &ps) {
		t.Fatalf("got %d episodes and %v, want none and problems", len(eps), err)
	}
	want := `mixed.jsonl:3: episode "ep-2": steps[4].answer.input_text: decision "yes", want Yes or No`
	if ps.Total != 1 || ps.List[0].String() != want {
		t.Errorf("got %v\nwant %s", ps.List, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not list the problem", err)
	}
	// Stream passes the valid episodes and withholds the bad one.
	var ids []string
	err = Stream(strings.NewReader(in), func(ep Episode) error { ids = append(ids, ep.ID); return nil })
	if len(ids) != 1 || ids[0] != "ep-1" || !errors.As(err, &ps) {
		t.Errorf("streamed %v with %v, want [ep-1] and the problem", ids, err)
	}
}

func TestStreamStopsOnCallbackError(t *testing.T) {
	good := readValid(t)
	in := bytes.Join([][]byte{good, bytes.Replace(good, []byte(`"ep-1"`), []byte(`"ep-2"`), 1)}, []byte("\n"))
	stop := errors.New("stop")
	n := 0
	err := Stream(bytes.NewReader(in), func(Episode) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("got %v after %d episodes, want stop after 1", err, n)
	}
}

func TestLongLine(t *testing.T) {
	good := readValid(t)
	long := `{"format":"` + strings.Repeat("x", 5000) + `"}`
	in := long + "\n" + string(good) + "\n" + long // the last line has no newline
	var ids []string
	err := Options{Name: "f", MaxLineBytes: 4096}.Stream(strings.NewReader(in), func(ep Episode) error {
		ids = append(ids, ep.ID)
		return nil
	})
	var ps *Problems
	if !errors.As(err, &ps) || ps.Total != 2 || ps.List[0].String() != "f:1: line longer than 4096 bytes" || ps.List[1].Line != 3 {
		t.Fatalf("got %v", err)
	}
	if len(ids) != 1 {
		t.Errorf("got episodes %v, want the one on line 2", ids)
	}
}

func TestProblemsAreCapped(t *testing.T) {
	in := strings.Repeat("nope\n", 250)
	seen := 0
	err := Options{MaxProblems: 10, OnProblem: func(Problem) { seen++ }}.Stream(strings.NewReader(in), nopEpisode)
	var ps *Problems
	if !errors.As(err, &ps) || ps.Total != 250 || len(ps.List) != 10 || seen != 250 {
		t.Fatalf("got %d kept of %d, %d seen", len(ps.List), ps.Total, seen)
	}
	if !strings.HasSuffix(err.Error(), "... and 240 more") {
		t.Errorf("error ends %q", err.Error()[len(err.Error())-30:])
	}
}

// manyEpisodes is a reader of n copies of a small episode with ids ep-0, ep-1, ...
// made as they are read, so the test holds no file.
type manyEpisodes struct {
	head, tail []byte // the line before and after the id
	n, i       int
	buf        []byte
}

func (m *manyEpisodes) Read(p []byte) (int, error) {
	for len(m.buf) == 0 {
		if m.i == m.n {
			return 0, io.EOF
		}
		m.buf = fmt.Appendf(m.buf[:0], "%s%d%s\n", m.head, m.i, m.tail)
		m.i++
	}
	k := copy(p, m.buf)
	m.buf = m.buf[k:]
	return k, nil
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestStreamBoundedMemory streams 25,000 episodes (about 60 MB) and checks that the
// heap grows by less than a quarter of the input: it holds one line at a time and
// the ids seen (a loader that kept the episodes would grow by more than the input).
func TestStreamBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 25,000 episodes")
	}
	const n = 25_000
	head, tail, _ := bytes.Cut(readValid(t), []byte(`ep-1`))
	r := &manyEpisodes{head: append(head, "ep-"...), tail: tail, n: n}
	runtime.GC()
	base := heapInUse()
	var peak uint64
	count, size := 0, 0
	err := Stream(r, func(ep Episode) error {
		count++
		if count == 1 {
			size = len(head) + len(tail)
		}
		if count%5000 == 0 {
			peak = max(peak, heapInUse())
		}
		return nil
	})
	if err != nil || count != n {
		t.Fatalf("streamed %d episodes with %v", count, err)
	}
	input := uint64(size) * n
	grew := peak - min(peak, base)
	t.Logf("input %d MB, heap grew by at most %d MB", input>>20, grew>>20)
	if grew > input/4 {
		t.Errorf("heap grew by %d MB streaming %d MB: not bounded", grew>>20, input>>20)
	}
}

func BenchmarkStream(b *testing.B) {
	var buf bytes.Buffer
	if err := Write(&buf, GenerateOptions{Episodes: 60, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if err := Stream(bytes.NewReader(buf.Bytes()), nopEpisode); err != nil {
			b.Fatal(err)
		}
	}
}
