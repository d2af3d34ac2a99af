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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Scalar is one value of a tag in an event file.
type Scalar struct {
	Step int64
	// Value is the simple_value, a float32 as TensorBoard stores it.
	Value float32
	// WallTime is the event's wall_time: seconds since the Unix epoch.
	WallTime float64
}

// Contents is what a log folder's event files hold, as Read finds them.
type Contents struct {
	// Files are the paths of the event files, in the order TensorBoard reads them
	// (by name).
	Files []string
	// Scalars holds each tag's values in the order of the files and of their records.
	Scalars map[string][]Scalar
	// Params is the last parameter table written (Writer.LogParams); nil when none.
	Params map[string]string
}

// Read reads the event files of dir: the files whose name contains "tfevents", as
// TensorBoard finds them, in name order. It tolerates a torn last record in each file
// (a writer that crashed mid-write) and ignores it; any other record that fails its
// checksum is a *CorruptError naming the file and the record's offset.
func Read(dir string) (Contents, error) {
	c := Contents{Scalars: map[string][]Scalar{}}
	files, err := scan(dir, func(ev event) {
		for _, s := range ev.scalars {
			c.Scalars[s.tag] = append(c.Scalars[s.tag], Scalar{Step: ev.step, Value: s.value, WallTime: ev.wallTime})
		}
		if p := paramsOf(ev); p != nil {
			c.Params = p
		}
	})
	c.Files = files
	return c, err
}

// isEventFile reports whether TensorBoard reads a file of this name as an event file.
func isEventFile(name string) bool { return strings.Contains(name, "tfevents") }

// scan calls add with each event of dir's event files, in the order TensorBoard reads
// them, and returns the files' paths.
func scan(dir string, add func(event)) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !isEventFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		files = append(files, path)
		if err := scanFile(path, add); err != nil {
			return files, err
		}
	}
	return files, nil
}

// scanFile calls add with each event of the event file at path, up to its end or to
// its torn last record.
func scanFile(path string, add func(event)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	rr := newRecordReader(path, f, info.Size())
	for {
		off := rr.off
		data, err := rr.next()
		switch {
		case err == io.EOF || errors.Is(err, errTorn):
			return nil
		case err != nil:
			return err
		}
		ev, err := decodeEvent(data)
		if err != nil {
			return &CorruptError{File: path, Offset: off, Reason: fmt.Sprintf("not an Event: %v", err)}
		}
		add(ev)
	}
}

// paramsOf returns the parameter table that ev holds, or nil when it holds none.
func paramsOf(ev event) map[string]string {
	for _, t := range ev.texts {
		if t.tag != paramsTag || len(t.shape) != 2 || t.shape[1] != 2 || int64(len(t.cells)) != 2*t.shape[0] {
			continue
		}
		params := make(map[string]string, t.shape[0])
		for i := 0; i < len(t.cells); i += 2 {
			params[t.cells[i]] = t.cells[i+1]
		}
		return params
	}
	return nil
}
