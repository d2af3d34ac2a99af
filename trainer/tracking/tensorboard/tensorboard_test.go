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

package tensorboard

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// t0 is the tests' clock: every writer starts at it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var run = tracking.Run{JobUID: "uid-1", Namespace: "ns", JobName: "demo", Name: "demo"}

// newWriter returns a writer of dir whose clock reads t0 and whose file names hold
// host "trainer-0" and pid 7.
func newWriter(dir string, opts ...Option) *Writer {
	return New(dir, append([]Option{WithClock(func() time.Time { return t0 }), WithHostname("trainer-0"), WithPID(7)}, opts...)...)
}

// stepPoints returns the points of steps from to to (inclusive) of each key, a step's
// points at one time, t0 plus the step in seconds; key k's value at step s is
// value(k, s).
func stepPoints(from, to int64, keys ...string) []tracking.Point {
	var ps []tracking.Point
	for s := from; s <= to; s++ {
		for _, k := range keys {
			ps = append(ps, tracking.Point{Key: k, Value: value(k, s), Step: s, Time: stepTime(s)})
		}
	}
	return ps
}

func value(key string, step int64) float64 { return float64(len(key))/10 + float64(step)*0.25 }

func stepTime(step int64) time.Time { return t0.Add(time.Duration(step) * 1500 * time.Millisecond) }

// wantScalars is what Read returns of stepPoints(from, to, keys...).
func wantScalars(from, to int64, keys ...string) map[string][]Scalar {
	want := map[string][]Scalar{}
	for s := from; s <= to; s++ {
		for _, k := range keys {
			want[k] = append(want[k], Scalar{Step: s, Value: float32(value(k, s)), WallTime: wallTime(stepTime(s))})
		}
	}
	return want
}

// cycle opens w, logs points and closes w, failing the test on an error; it returns
// what Open said.
func cycle(t *testing.T, w *Writer, params map[string]string, points []tracking.Point) tracking.Opened {
	t.Helper()
	ctx := context.Background()
	opened, err := w.Open(ctx, run)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := w.LogParams(ctx, params); err != nil {
		t.Fatalf("LogParams: %v", err)
	}
	if err := w.Log(ctx, points); err != nil {
		t.Fatalf("Log: %v", err)
	}
	if err := w.Close(ctx, ""); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return opened
}

// resend is what the trainer sends of points after Open said opened: those after
// each key's last step.
func resend(opened tracking.Opened, points []tracking.Point) []tracking.Point {
	return slices.DeleteFunc(slices.Clone(points), func(p tracking.Point) bool {
		last, ok := opened.LastSteps[p.Key]
		return ok && p.Step <= last
	})
}

func read(t *testing.T, dir string) Contents {
	t.Helper()
	c, err := Read(dir)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return c
}

func TestLoggedPointsAndParamsReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tensorboard")
	params := map[string]string{"lr": "0.001", "model": "qwen|2.5", "note": "two\nlines"}
	opened := cycle(t, newWriter(dir), params, stepPoints(1, 3, "train/loss", "train/lr"))
	if opened.RunID != "" || len(opened.LastSteps) != 0 {
		t.Errorf("Open of a new folder = %+v, want no run id and no last steps", opened)
	}
	c := read(t, dir)
	if d := cmp.Diff(wantScalars(1, 3, "train/loss", "train/lr"), c.Scalars); d != "" {
		t.Errorf("scalars (-want +got):\n%s", d)
	}
	if !maps.Equal(c.Params, params) {
		t.Errorf("params = %v, want %v", c.Params, params)
	}
	wantFiles := []string{filepath.Join(dir, "events.out.tfevents.1772366400.trainer-0.7.0")}
	if !slices.Equal(c.Files, wantFiles) {
		t.Errorf("files = %v, want %v", c.Files, wantFiles)
	}
}

func TestPointsOfAStepShareAnEvent(t *testing.T) {
	dir := t.TempDir()
	cycle(t, newWriter(dir), nil, stepPoints(1, 3, "a", "b", "c"))
	var events []event
	if _, err := scan(dir, func(ev event) { events = append(events, ev) }); err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 { // the file version and one per step
		t.Fatalf("%d events, want 4", len(events))
	}
	for i, ev := range events[1:] {
		if ev.step != int64(i+1) || len(ev.scalars) != 3 {
			t.Errorf("event %d: step %d with %d scalars, want step %d with 3", i+1, ev.step, len(ev.scalars), i+1)
		}
	}
}

func TestReopenAddsAFileAndSaysWhereEachTagStops(t *testing.T) {
	dir := t.TempDir()
	first := stepPoints(1, 5, "train/loss", "train/lr")
	cycle(t, newWriter(dir), nil, first)

	// The run resumes from its checkpoint of step 3 and logs steps 4 to 8 again, with
	// a tag it did not log before.
	w := newWriter(dir)
	again := append(stepPoints(4, 8, "train/loss", "train/lr"), stepPoints(8, 8, "eval/accuracy")...)
	opened, err := w.Open(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"train/loss": 5, "train/lr": 5}; !maps.Equal(opened.LastSteps, want) {
		t.Errorf("LastSteps = %v, want %v", opened.LastSteps, want)
	}
	if err := w.Log(context.Background(), resend(opened, again)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(context.Background(), "Succeeded"); err != nil {
		t.Fatal(err)
	}

	c := read(t, dir)
	want := wantScalars(1, 8, "train/loss", "train/lr")
	want["eval/accuracy"] = wantScalars(8, 8, "eval/accuracy")["eval/accuracy"]
	if d := cmp.Diff(want, c.Scalars); d != "" {
		t.Errorf("scalars (-want +got):\n%s", d)
	}
	// Both writers' clocks read the same second: the second file's name takes the
	// next, so that it sorts after the first.
	wantFiles := []string{
		filepath.Join(dir, "events.out.tfevents.1772366400.trainer-0.7.0"),
		filepath.Join(dir, "events.out.tfevents.1772366401.trainer-0.7.0"),
	}
	if !slices.Equal(c.Files, wantFiles) {
		t.Errorf("files = %v, want %v", c.Files, wantFiles)
	}
}

func TestNewFileSortsAfterTheFolderLastFile(t *testing.T) {
	w := newWriter(t.TempDir())
	cases := []struct{ last, want string }{
		{"", "events.out.tfevents.1772366400.trainer-0.7.0"},
		{"events.out.tfevents.1772366399.trainer-9.1.3", "events.out.tfevents.1772366400.trainer-0.7.0"},
		// another host of the same second, whose name sorts after ours
		{"events.out.tfevents.1772366400.trainer-1.7.0", "events.out.tfevents.1772366401.trainer-0.7.0"},
		// a host whose clock is ahead
		{"events.out.tfevents.1772369999.other.1.0", "events.out.tfevents.1772370000.trainer-0.7.0"},
		// a name of another form, whose order is unknown
		{"x.tfevents", "events.out.tfevents.1772366400.trainer-0.7.0"},
	}
	for _, c := range cases {
		if got := eventFileName(w.fileSeconds(t0, c.last), w.hostname, w.pid, 0); got != c.want {
			t.Errorf("after %q: %s, want %s", c.last, got, c.want)
		}
	}
}

func TestReopenAfterATornWriteIgnoresTheTornRecord(t *testing.T) {
	dir := t.TempDir()
	cycle(t, newWriter(dir), nil, stepPoints(1, 2, "loss"))
	// The pod died writing step 3: half of its record reached the file.
	file := read(t, dir).Files[0]
	torn := appendRecord(nil, appendSummaryEvent(nil, 0, 3, appendScalarValue(nil, "loss", 1)))
	appendTo(t, file, torn[:len(torn)/2])

	opened := cycle(t, newWriter(dir), nil, nil)
	if want := map[string]int64{"loss": 2}; !maps.Equal(opened.LastSteps, want) {
		t.Errorf("LastSteps = %v, want %v", opened.LastSteps, want)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesACorruptEventFile(t *testing.T) {
	dir := t.TempDir()
	cycle(t, newWriter(dir), nil, stepPoints(1, 3, "loss"))
	file := read(t, dir).Files[0]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	secondAt := len(appendRecord(nil, appendFileVersionEvent(nil, wallTime(t0))))
	b[secondAt+headerSize+3] ^= 1 // in the data of step 1's record, which two follow
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = newWriter(dir).Open(context.Background(), run)
	var corrupt *CorruptError
	if !tracking.IsPermanent(err) || !errors.As(err, &corrupt) || corrupt.File != file || corrupt.Offset != int64(secondAt) {
		t.Fatalf("Open = %v, want a permanent error naming %s at offset %d", err, file, secondAt)
	}
	if !strings.Contains(err.Error(), file) || !strings.HasPrefix(err.Error(), "spec.tracking.tensorboard: ") {
		t.Errorf("error %q does not name the field and the file", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files after a refused Open, want the one there was", len(entries))
	}
}

func TestUnwritableFolderIsAPermanentError(t *testing.T) {
	cases := map[string]func(t *testing.T) string{
		"a file where the folder should be": func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "tensorboard")
			writeFile(t, path)
			return path
		},
		"a file where a parent folder should be": func(t *testing.T) string {
			parent := filepath.Join(t.TempDir(), "checkpoints")
			writeFile(t, parent)
			return filepath.Join(parent, "tensorboard")
		},
	}
	for name, setUp := range cases {
		t.Run(name, func(t *testing.T) {
			dir := setUp(t)
			_, err := newWriter(dir).Open(context.Background(), run)
			var p *tracking.PermanentError
			if !errors.As(err, &p) || p.Field != "spec.tracking.tensorboard" || !strings.Contains(err.Error(), dir) {
				t.Errorf("Open = %v, want a permanent error of spec.tracking.tensorboard naming %s", err, dir)
			}
		})
	}
}

func TestFolderErrorsThatNoRetryFixesArePermanent(t *testing.T) {
	w := New("/claim/tensorboard")
	for errno, permanent := range map[syscall.Errno]bool{
		syscall.EACCES: true, syscall.EPERM: true, syscall.EROFS: true, syscall.ENOTDIR: true,
		syscall.EIO: false, syscall.ENOSPC: false, syscall.ESTALE: false,
	} {
		err := w.folderError("creating", &fs.PathError{Op: "mkdir", Path: "/claim/tensorboard", Err: errno})
		if tracking.IsPermanent(err) != permanent {
			t.Errorf("%v: %v, want permanent %v", errno, err, permanent)
		}
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// faultyFile is an event file whose next write, sync or truncate fails as told.
type faultyFile struct {
	logFile
	// failWrite makes a write write half its bytes and fail.
	failWrite, failSync, failTruncate bool
}

var errInjected = errors.New("injected failure")

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if f.failWrite {
		n, _ := f.logFile.WriteAt(b[:len(b)/2], off)
		return n, errInjected
	}
	return f.logFile.WriteAt(b, off)
}

func (f *faultyFile) Sync() error {
	if f.failSync {
		return errInjected
	}
	return f.logFile.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if f.failTruncate {
		return errInjected
	}
	return f.logFile.Truncate(size)
}

func TestFailedLogLeavesNothingAndItsResendIsWrittenOnce(t *testing.T) {
	cases := map[string]faultyFile{
		"the write fails": {failWrite: true},
		"the sync fails":  {failSync: true},
		"the write fails, then the truncate fails":    {failWrite: true, failTruncate: true},
		"the sync fails, then the truncate fails too": {failSync: true, failTruncate: true},
	}
	for name, fault := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			w := newWriter(dir)
			ctx := context.Background()
			if _, err := w.Open(ctx, run); err != nil {
				t.Fatal(err)
			}
			if err := w.Log(ctx, stepPoints(1, 1, "loss", "lr")); err != nil {
				t.Fatal(err)
			}
			f := &faultyFile{logFile: w.f, failWrite: fault.failWrite, failSync: fault.failSync, failTruncate: fault.failTruncate}
			w.f = f
			if err := w.Log(ctx, stepPoints(2, 3, "loss", "lr")); !errors.Is(err, errInjected) {
				t.Fatalf("Log = %v, want the injected failure", err)
			}
			if !fault.failTruncate {
				if got := read(t, dir).Scalars; !cmp.Equal(got, wantScalars(1, 1, "loss", "lr")) {
					t.Errorf("after the failed Log, the file holds %v, want step 1 only", got)
				}
			}
			*f = faultyFile{logFile: f.logFile}
			if err := w.Log(ctx, stepPoints(2, 3, "loss", "lr")); err != nil {
				t.Fatalf("Log again: %v", err)
			}
			if err := w.Close(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(wantScalars(1, 3, "loss", "lr"), read(t, dir).Scalars); d != "" {
				t.Errorf("scalars (-want +got):\n%s", d)
			}
		})
	}
}

func TestCloseRestoresTheEndThatAFailedTruncateLeft(t *testing.T) {
	dir := t.TempDir()
	w := newWriter(dir)
	ctx := context.Background()
	if _, err := w.Open(ctx, run); err != nil {
		t.Fatal(err)
	}
	f := &faultyFile{logFile: w.f, failWrite: true, failTruncate: true}
	w.f = f
	if err := w.Log(ctx, stepPoints(1, 1, "loss")); err == nil {
		t.Fatal("Log succeeded, want the injected failure")
	}
	f.failTruncate = false
	if err := w.Close(ctx, ""); err != nil {
		t.Fatal(err)
	}
	c := read(t, dir)
	info, err := os.Stat(c.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(appendRecord(nil, appendFileVersionEvent(nil, wallTime(t0))))); info.Size() != want || len(c.Scalars) != 0 {
		t.Errorf("after Close the file has %d bytes and scalars %v, want %d bytes, no scalars", info.Size(), c.Scalars, want)
	}
}

func TestParamsAreWrittenOnceUntilTheyChange(t *testing.T) {
	dir := t.TempDir()
	params := map[string]string{"lr": "0.001", "seed": "7"}
	cycle(t, newWriter(dir), params, nil)

	w := newWriter(dir)
	ctx := context.Background()
	if _, err := w.Open(ctx, run); err != nil {
		t.Fatal(err)
	}
	sizeBefore := size(t, w.path)
	if err := w.LogParams(ctx, params); err != nil {
		t.Fatal(err)
	}
	if err := w.LogParams(ctx, map[string]string{"seed": "7"}); err != nil {
		t.Fatal(err)
	}
	if got := size(t, w.path); got != sizeBefore {
		t.Errorf("logging the same params again wrote %d bytes", got-sizeBefore)
	}
	if err := w.LogParams(ctx, map[string]string{"export": "s3://bucket/model"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, ""); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"lr": "0.001", "seed": "7", "export": "s3://bucket/model"}
	if got := read(t, dir).Params; !maps.Equal(got, want) {
		t.Errorf("params = %v, want %v", got, want)
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func TestWriterThatIsNotOpenRefusesToWrite(t *testing.T) {
	w := newWriter(t.TempDir())
	ctx := context.Background()
	if err := w.Log(ctx, stepPoints(1, 1, "loss")); err == nil {
		t.Error("Log before Open succeeded")
	}
	cycle(t, w, nil, nil)
	if err := w.LogParams(ctx, map[string]string{"a": "b"}); err == nil {
		t.Error("LogParams after Close succeeded")
	}
	if err := w.Close(ctx, ""); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestPointWithoutATimeGetsTheClocks(t *testing.T) {
	dir := t.TempDir()
	cycle(t, newWriter(dir), nil, []tracking.Point{{Key: "loss", Value: 1.5, Step: 4}})
	want := map[string][]Scalar{"loss": {{Step: 4, Value: 1.5, WallTime: wallTime(t0)}}}
	if d := cmp.Diff(want, read(t, dir).Scalars); d != "" {
		t.Errorf("scalars (-want +got):\n%s", d)
	}
}

func TestNameIsTheSpecField(t *testing.T) {
	if got := New(t.TempDir()).Name(); got != "spec.tracking.tensorboard" {
		t.Errorf("Name() = %q", got)
	}
}
