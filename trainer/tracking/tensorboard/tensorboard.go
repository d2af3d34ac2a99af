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

// Package tensorboard is the tracking.Sink of spec.tracking.tensorboard: it writes a
// run's metrics as TensorBoard event files into a log folder, which TensorBoard (or
// anything that reads tfevents files) shows as one run.
//
// An event file is a TFRecord file: a sequence of records, with nothing between them
// and nothing after the last, each laid out as
//
//	offset  size  content
//	0       8     n, the length of the data, uint64 little-endian
//	8       4     maskedCRC(bytes 0 to 8), uint32 little-endian
//	12      n     the data
//	12+n    4     maskedCRC(data), uint32 little-endian
//
// where maskedCRC(b) is the CRC-32C (Castagnoli) of b, rotated right by 15 bits, plus
// 0xa282ead8 (modulo 2^32). Each record's data is a serialized tensorflow.Event
// protobuf (wall_time = 1, a double of seconds since the Unix epoch; step = 2;
// file_version = 3; summary = 5). The first event of a file holds file_version
// "brain.Event:2"; each next one the Summary of one step's scalars, each a Value of
// tag = 1 and simple_value = 2 (a float32: values are rounded to float32), as
// PyTorch's and tensorboardX's SummaryWriter.add_scalar write them. The run's
// parameters are a text summary of tag "params": a tensor of strings of two columns,
// name and value, one row per parameter, which TensorBoard's Text dashboard shows as a
// table.
//
// Each Open starts a new file, named events.out.tfevents.<seconds>.<hostname>.<pid>.<n>
// so that it sorts after the folder's older files: a resumed run adds a file and never
// rewrites one. Open reads the folder's files to say at which step each tag stops;
// Log appends whole records and syncs them to stable storage, so a pod that dies
// leaves at most a torn last record, which both this package and TensorBoard ignore.
package tensorboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/espo-dev/espo-operator/trainer/tracking"
)

// field is the spec field that configures the sink.
const field = "spec.tracking.tensorboard"

// paramsTag is the tag of the text summary that holds the run's parameters.
const paramsTag = "params"

// fileNamePrefix starts the name of every event file this package writes; TensorBoard
// reads any file whose name contains "tfevents".
const fileNamePrefix = "events.out.tfevents."

// Writer writes one run's event files into a log folder. It implements tracking.Sink;
// like every Sink, its methods are called from one goroutine at a time.
type Writer struct {
	dir      string
	now      func() time.Time
	hostname string
	pid      int
	sync     bool

	// f is the open event file, nil when the writer is not open; path is its path.
	f    logFile
	path string
	// end is the size of f after the last write that succeeded.
	end int64
	// torn is set when a failed write may have left bytes past end.
	torn bool
	// step is the largest step of the run so far, where LogParams writes its table.
	step int64
	// params is the run's parameter table as last written to the folder.
	params map[string]string

	// buffers reused by Log
	records, event, summary []byte
}

// logFile is the part of *os.File that Writer uses.
type logFile interface {
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Close() error
}

var _ tracking.Sink = (*Writer)(nil)

// Option sets an optional property of a Writer.
type Option func(*Writer)

// WithClock makes the writer read the time from now (the time in the names of event
// files, and the wall time of the events it writes without a point's time); the
// default is time.Now.
func WithClock(now func() time.Time) Option { return func(w *Writer) { w.now = now } }

// WithHostname sets the host name in the names of event files; the default is
// os.Hostname (the pod's name).
func WithHostname(name string) Option { return func(w *Writer) { w.hostname = name } }

// WithPID sets the process id in the names of event files; the default is os.Getpid.
func WithPID(pid int) Option { return func(w *Writer) { w.pid = pid } }

// WithoutSync makes Log return once the records are written to the operating system,
// without waiting for them to reach stable storage: a crash of the node (not of the
// process) may then lose the latest points. For tests and benchmarks.
func WithoutSync() Option { return func(w *Writer) { w.sync = false } }

// New returns a writer of event files into dir, which Open creates.
func New(dir string, opts ...Option) *Writer {
	w := &Writer{dir: dir, now: time.Now, pid: os.Getpid(), sync: true}
	w.hostname, _ = os.Hostname()
	for _, o := range opts {
		o(w)
	}
	w.hostname = strings.ReplaceAll(w.hostname, "/", "_")
	if w.hostname == "" {
		w.hostname = "localhost"
	}
	return w
}

// Dir is the writer's log folder.
func (w *Writer) Dir() string { return w.dir }

// Name is "spec.tracking.tensorboard".
func (w *Writer) Name() string { return field }

// Open creates the log folder if needed, reads its event files and starts a new one.
// Opened.LastSteps holds each scalar tag's largest step in the folder; Opened.RunID
// is "" (a TensorBoard run is its folder). A folder that cannot be created or written
// (permission denied, a read-only file system, a file in the way) or that holds a
// corrupt event file (a *CorruptError) is a tracking.PermanentError.
func (w *Writer) Open(ctx context.Context, _ tracking.Run) (tracking.Opened, error) {
	if err := ctx.Err(); err != nil {
		return tracking.Opened{}, err
	}
	if w.f != nil {
		return tracking.Opened{}, fmt.Errorf("tensorboard: %s is open already", w.path)
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return tracking.Opened{}, w.folderError("creating", err)
	}
	h, err := readHistory(w.dir)
	if err != nil {
		return tracking.Opened{}, w.folderError("reading", err)
	}
	if err := w.startFile(h.lastFile); err != nil {
		return tracking.Opened{}, err
	}
	w.step, w.params = h.step, h.params
	return tracking.Opened{LastSteps: h.lastSteps}, nil
}

// history is what Open learns of the run from its log folder.
type history struct {
	// lastSteps holds each scalar tag's largest step.
	lastSteps map[string]int64
	// step is the largest step of any event.
	step int64
	// params is the last parameter table; nil when none.
	params map[string]string
	// lastFile is the name of the last event file, "" when none.
	lastFile string
}

// readHistory reads the event files of dir.
func readHistory(dir string) (history, error) {
	h := history{lastSteps: map[string]int64{}}
	files, err := scan(dir, func(ev event) {
		h.step = max(h.step, ev.step)
		for _, s := range ev.scalars {
			if last, ok := h.lastSteps[s.tag]; !ok || ev.step > last {
				h.lastSteps[s.tag] = ev.step
			}
		}
		if p := paramsOf(ev); p != nil {
			h.params = p
		}
	})
	if len(files) > 0 {
		h.lastFile = filepath.Base(files[len(files)-1])
	}
	return h, err
}

// folderError wraps err, met doing what to the log folder: a tracking.PermanentError
// when no retry fixes it.
func (w *Writer) folderError(what string, err error) error {
	err = fmt.Errorf("%s the log folder %s: %w", what, w.dir, err)
	if isPermanent(err) {
		return tracking.Permanent(field, err)
	}
	return fmt.Errorf("tensorboard: %w", err)
}

// isPermanent reports whether err, met creating, reading or writing the log folder, is
// one that no retry fixes: permission denied, a read-only file system, a file where a
// folder should be, or a corrupt event file.
func isPermanent(err error) bool {
	var corrupt *CorruptError
	return errors.As(err, &corrupt) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOTDIR)
}

// startFile creates the run's next event file, named to sort after last (the name of
// the folder's last event file), and writes its first event.
func (w *Writer) startFile(last string) error {
	now := w.now()
	if err := w.createFile(w.fileSeconds(now, last)); err != nil {
		return w.folderError("starting an event file in", err)
	}
	err := w.write(appendRecord(nil, appendFileVersionEvent(nil, wallTime(now))))
	if err == nil && w.sync {
		if err = syncDir(w.dir); err != nil {
			err = fmt.Errorf("tensorboard: syncing the log folder %s: %w", w.dir, err)
		}
	}
	if err != nil {
		w.f.Close()
		os.Remove(w.path)
		w.f = nil
	}
	return err
}

// createFile creates the event file of the first free name with seconds and makes it
// the writer's.
func (w *Writer) createFile(seconds int64) error {
	for n := 0; ; n++ {
		path := filepath.Join(w.dir, eventFileName(seconds, w.hostname, w.pid, n))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		w.f, w.path, w.end, w.torn = f, path, 0, false
		return nil
	}
}

// eventFileName is the name of an event file, as TensorFlow and PyTorch name theirs:
// events.out.tfevents.<seconds, 10 digits>.<hostname>.<pid>.<n>.
func eventFileName(seconds int64, hostname string, pid, n int) string {
	return fmt.Sprintf("%s%010d.%s.%d.%d", fileNamePrefix, seconds, hostname, pid, n)
}

// fileSeconds returns the seconds in the name of an event file started at now: now's,
// or, when that name would not sort after last (the folder's last event file, written
// by another host or under a clock ahead of this one), one more than last's.
// TensorBoard reads a folder's event files in name order and shows each tag's values
// in the order it reads them, which must be the order they were written.
func (w *Writer) fileSeconds(now time.Time, last string) int64 {
	seconds := now.Unix()
	if eventFileName(seconds, w.hostname, w.pid, 0) > last {
		return seconds
	}
	rest, ok := strings.CutPrefix(last, fileNamePrefix)
	digits, _, _ := strings.Cut(rest, ".")
	lastSeconds, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil {
		return seconds // a name not of this form: its order is unknown
	}
	return max(seconds, lastSeconds+1)
}

// LogParams records params, with those already recorded, as the run's parameter
// table: a text summary (tag "params") of the parameters in name order, at the run's
// largest step so far. Parameters that change nothing write nothing, so that a resumed
// run logging the same parameters adds no table.
func (w *Writer) LogParams(ctx context.Context, params map[string]string) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	table := maps.Clone(w.params)
	if table == nil {
		table = map[string]string{}
	}
	maps.Copy(table, params)
	if maps.Equal(table, w.params) || len(table) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(table))
	cells := make([]string, 0, 2*len(names))
	for _, name := range names {
		cells = append(cells, name, table[name])
	}
	summary := appendTextValue(nil, paramsTag, len(names), cells)
	ev := appendSummaryEvent(nil, wallTime(w.now()), w.step, summary)
	if err := w.write(appendRecord(nil, ev)); err != nil {
		return err
	}
	w.params = table
	return nil
}

// Log appends points to the event file, all or none, and syncs the file (unless
// WithoutSync). Consecutive points of the same step and time are one event. A point
// without a time gets the clock's.
func (w *Writer) Log(ctx context.Context, points []tracking.Point) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	w.records = w.records[:0]
	for i := 0; i < len(points); {
		j := i + 1
		for j < len(points) && points[j].Step == points[i].Step && points[j].Time.Equal(points[i].Time) {
			j++
		}
		w.records = w.appendScalarRecord(w.records, points[i:j])
		i = j
	}
	if len(w.records) == 0 {
		return nil
	}
	if err := w.write(w.records); err != nil {
		return err
	}
	for _, p := range points {
		w.step = max(w.step, p.Step)
	}
	return nil
}

// appendScalarRecord appends to b the record of one event holding points, which share
// a step and a time.
func (w *Writer) appendScalarRecord(b []byte, points []tracking.Point) []byte {
	w.summary = w.summary[:0]
	for _, p := range points {
		w.summary = appendScalarValue(w.summary, p.Key, p.Value)
	}
	t := points[0].Time
	if t.IsZero() {
		t = w.now()
	}
	w.event = appendSummaryEvent(w.event[:0], wallTime(t), points[0].Step, w.summary)
	return appendRecord(b, w.event)
}

// wallTime is t as an Event's wall_time: seconds since the Unix epoch.
func wallTime(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

// usable returns why the writer cannot write now, or nil.
func (w *Writer) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.f == nil {
		return fmt.Errorf("tensorboard: the writer of %s is not open", w.dir)
	}
	return nil
}

// write appends records (whole TFRecords) to the event file and syncs it, all or
// none: when either fails it truncates the file back to its previous end (or, when
// that fails too, leaves it to the next write or to Close), so that sending the same
// records again writes them once.
func (w *Writer) write(records []byte) error {
	if err := w.restoreEnd(); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(records, w.end); err != nil {
		return w.undo(fmt.Errorf("tensorboard: writing %s: %w", w.path, err))
	}
	if w.sync {
		if err := w.f.Sync(); err != nil {
			return w.undo(fmt.Errorf("tensorboard: syncing %s: %w", w.path, err))
		}
	}
	w.end += int64(len(records))
	return nil
}

// undo returns err, the error of a write, after truncating the file back to its end
// before the write.
func (w *Writer) undo(err error) error {
	w.torn = true
	return errors.Join(err, w.restoreEnd())
}

// restoreEnd truncates the event file to its end after the last write that succeeded,
// when a failed write may have left bytes past it.
func (w *Writer) restoreEnd() error {
	if !w.torn {
		return nil
	}
	if err := w.f.Truncate(w.end); err != nil {
		return fmt.Errorf("tensorboard: truncating %s back to %d bytes: %w", w.path, w.end, err)
	}
	w.torn = false
	return nil
}

// Close syncs and closes the event file. TensorBoard has no run status: outcome is
// not recorded. Closing a writer that is not open does nothing; Open may open it again,
// with a new file.
func (w *Writer) Close(_ context.Context, _ string) error {
	if w.f == nil {
		return nil
	}
	err := w.restoreEnd()
	if w.sync {
		if e := w.f.Sync(); e != nil {
			err = errors.Join(err, fmt.Errorf("tensorboard: syncing %s: %w", w.path, e))
		}
	}
	if e := w.f.Close(); e != nil {
		err = errors.Join(err, fmt.Errorf("tensorboard: closing %s: %w", w.path, e))
	}
	w.f = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
