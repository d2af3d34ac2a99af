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
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// stateVersion is the version of the Save format.
const stateVersion = 1

// savedState is what Save writes, gob-encoded: the options, the step count, and
// the weights, reference weights and AdamW moments, each one value per
// parameter.
type savedState struct {
	Version          int
	Format           string
	Options          Options
	Steps            int64
	Params, Ref      []float64
	Moment1, Moment2 []float64
}

const stateFormat = "espo-cpu-policy"

// Save writes the full state (not the accumulated gradient) as gob.
func (p *Policy) Save(w io.Writer) error {
	bw := bufio.NewWriter(w)
	err := gob.NewEncoder(bw).Encode(savedState{Version: stateVersion, Format: stateFormat, Options: p.opt,
		Steps: p.steps, Params: p.params, Ref: p.ref, Moment1: p.m, Moment2: p.v})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Load replaces the state with one Save wrote and clears the gradient; on error
// the state is unchanged.
func (p *Policy) Load(r io.Reader) error {
	var s savedState
	if err := gob.NewDecoder(bufio.NewReader(r)).Decode(&s); err != nil {
		return fmt.Errorf("cpu policy state: %w", err)
	}
	if s.Format != stateFormat || s.Version != stateVersion {
		return fmt.Errorf("cpu policy state: format %q version %d, want %q version %d", s.Format, s.Version, stateFormat, stateVersion)
	}
	if err := s.Options.validate(); err != nil {
		return fmt.Errorf("cpu policy state: %w", err)
	}
	if p.params != nil && s.Options.arch() != p.opt.arch() {
		return fmt.Errorf("cpu policy state: the checkpoint is of architecture %q and the policy is configured with arch=%q; "+
			"configure arch=%s to load it, or load a checkpoint trained with arch=%s", s.Options.arch(), p.opt.arch(), s.Options.arch(), p.opt.arch())
	}
	n := s.Options.paramCount()
	for _, x := range [][]float64{s.Params, s.Ref, s.Moment1, s.Moment2} {
		if len(x) != n {
			return errors.New("cpu policy state: vector lengths do not match the options")
		}
	}
	p.opt, p.rows, p.steps = s.Options, s.Options.rows(), s.Steps
	p.params, p.ref, p.m, p.v = s.Params, s.Ref, s.Moment1, s.Moment2
	p.grad = make([]float64, n)
	return nil
}
