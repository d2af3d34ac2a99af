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

package cpu

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
)

// stateVersion is the version of the Save format. Version 2 is a gob-encoded
// savedState header without the vectors, then the four vectors (weights,
// reference, first and second moments), each paramCount float64 values,
// little-endian; version 1, which Load still reads, held the vectors in the gob
// value itself (six times slower to write: gob encodes a float64 at a time).
const stateVersion = 2

// savedState is the header of a saved state: the options and the step count. The
// vectors are set only in a version 1 state.
type savedState struct {
	Version          int
	Format           string
	Options          Options
	Steps            int64
	Params, Ref      []float64
	Moment1, Moment2 []float64
}

const stateFormat = "espo-cpu-policy"

// Save writes the full state (not the accumulated gradient) in the format of
// stateVersion.
func (p *Policy) Save(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := gob.NewEncoder(bw).Encode(savedState{Version: stateVersion, Format: stateFormat, Options: p.opt, Steps: p.steps}); err != nil {
		return err
	}
	for _, x := range [][]float64{p.params, p.ref, p.m, p.v} {
		if err := writeFloats(bw, x); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Load replaces the state with one Save wrote (version 1 or 2) and clears the
// gradient; on error the state is unchanged.
func (p *Policy) Load(r io.Reader) error {
	s, err := readState(bufio.NewReader(r))
	if err != nil {
		return fmt.Errorf("cpu policy state: %w", err)
	}
	if p.params != nil && s.Options.arch() != p.opt.arch() {
		return fmt.Errorf("cpu policy state: the checkpoint is of architecture %q and the policy is configured with arch=%q; "+
			"configure arch=%s to load it, or load a checkpoint trained with arch=%s", s.Options.arch(), p.opt.arch(), s.Options.arch(), p.opt.arch())
	}
	p.opt, p.rows, p.steps = s.Options, s.Options.rows(), s.Steps
	p.params, p.ref, p.m, p.v = s.Params, s.Ref, s.Moment1, s.Moment2
	p.grad = make([]float64, len(s.Params))
	return nil
}

// readState reads a state of version 1 or 2 whole, checking its header and the
// lengths of its vectors against its options.
func readState(r *bufio.Reader) (*savedState, error) {
	var s savedState
	if err := gob.NewDecoder(r).Decode(&s); err != nil {
		return nil, err
	}
	if s.Format != stateFormat || (s.Version != 1 && s.Version != stateVersion) {
		return nil, fmt.Errorf("format %q version %d, want %q version 1 or %d", s.Format, s.Version, stateFormat, stateVersion)
	}
	if err := s.Options.validate(); err != nil {
		return nil, err
	}
	n := s.Options.paramCount()
	if s.Version == stateVersion {
		for _, x := range []*[]float64{&s.Params, &s.Ref, &s.Moment1, &s.Moment2} {
			*x = make([]float64, n)
			if err := readFloats(r, *x); err != nil {
				return nil, fmt.Errorf("reading the vectors of %d parameters: %w", n, err)
			}
		}
		if _, err := r.ReadByte(); err != io.EOF {
			return nil, errors.New("data after the last vector")
		}
	}
	for _, x := range [][]float64{s.Params, s.Ref, s.Moment1, s.Moment2} {
		if len(x) != n {
			return nil, errors.New("vector lengths do not match the options")
		}
	}
	return &s, nil
}

// floatChunk is the number of values writeFloats and readFloats convert at a time.
const floatChunk = 4096

// writeFloats writes x to w, each value as its 8 bytes, little-endian, a chunk at a
// time. (encoding/binary's Write and Read of a whole []float64 took 3.5 times as
// long in BenchmarkSaveLoad and allocated the vector's bytes at once: 34 MB a Save.)
func writeFloats(w io.Writer, x []float64) error {
	var buf [8 * floatChunk]byte
	for len(x) > 0 {
		n := min(len(x), floatChunk)
		for i, v := range x[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
		}
		if _, err := w.Write(buf[:8*n]); err != nil {
			return err
		}
		x = x[n:]
	}
	return nil
}

// readFloats fills x with values writeFloats wrote.
func readFloats(r io.Reader, x []float64) error {
	var buf [8 * floatChunk]byte
	for len(x) > 0 {
		n := min(len(x), floatChunk)
		if _, err := io.ReadFull(r, buf[:8*n]); err != nil {
			return err
		}
		for i := range x[:n] {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		}
		x = x[n:]
	}
	return nil
}
