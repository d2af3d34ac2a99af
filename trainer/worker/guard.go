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

package worker

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc/codes"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// guarded is a Policy with what every worker shares, in the policy's own types: the
// order of calls (nothing but Configure, Load and Describe before the policy is
// configured), locking (scoring calls run concurrently, calls that change the state
// run alone), the checks and defaults of the options, state files read and written
// only under the allowed folders, and written atomically, and states sent inline
// (Setup.State) bounded by MaxStateBytes and read by the same Policy.Load. The gRPC server and the
// in-process Local member both serve a policy through one.
type guarded struct {
	p Policy
	// allowed are the folders Save and Load may touch.
	allowed folders
	// mu is held shared by the calls that only read the state and exclusively by
	// those that change it.
	mu         sync.RWMutex
	configured bool
}

// newGuarded returns p guarded, its Save and Load confined to the allowed folders.
func newGuarded(p Policy, allowed []string) guarded {
	return guarded{p: p, allowed: newFolders(allowed)}
}

// read runs fn under the shared lock once the policy is configured.
func (g *guarded) read(fn func() error) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.configured {
		return ErrNotConfigured
	}
	return fn()
}

// write runs fn under the exclusive lock once the policy is configured.
func (g *guarded) write(fn func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.configured {
		return ErrNotConfigured
	}
	return fn()
}

// describe describes the policy; it answers before Configure too.
func (g *guarded) describe() Description {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.p.Describe()
}

// configure initialises the policy from s.Seed and s.Options, then loads the state
// s.LoadPath names or s.State holds, when either is set (checkSetup).
func (g *guarded) configure(s Setup) (Description, error) {
	if err := checkSetup(s); err != nil {
		return Description{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.configured = false
	if err := g.p.Configure(s.Seed, s.Options); err != nil {
		return Description{}, err
	}
	var err error
	switch {
	case s.LoadPath != "":
		err = g.loadLocked(s.LoadPath)
	case len(s.State) > 0:
		err = g.loadFrom(bytes.NewReader(s.State), fmt.Sprintf("the inline state (%d bytes)", len(s.State)))
	}
	if err != nil {
		return Description{}, err
	}
	g.configured = true
	return g.p.Describe(), nil
}

// checkSetup returns an error wrapping ErrInvalid when s sets both LoadPath and
// State, or a State over MaxStateBytes (checkStateSize).
func checkSetup(s Setup) error {
	if s.LoadPath != "" && len(s.State) > 0 {
		return fmt.Errorf("%w: configure: both load_path and state are set: send the state one way", ErrInvalid)
	}
	return checkStateSize(int64(len(s.State)))
}

// checkStateSize returns an error wrapping ErrInvalid, naming the size and the
// limit, when a state of n bytes is too large to send inline (MaxStateBytes).
func checkStateSize(n int64) error {
	if n > MaxStateBytes {
		return fmt.Errorf("%w: a state of %d bytes is larger than the %d bytes (worker.MaxStateBytes) a worker takes inline in Configure; "+
			"run the workers in the trainer's pod (spec.trainer.workersPerReplica) or use a smaller model", ErrInvalid, n, MaxStateBytes)
	}
	return nil
}

// generate checks the options (Samples 0 means 1, Temperature 0 means 1) and samples.
func (g *guarded) generate(prompts []*workerpb.Prompt, o SampleOptions) (out []*workerpb.Candidates, err error) {
	if o, err = o.withDefaults(); err != nil {
		return nil, err
	}
	err = g.read(func() (err error) {
		out, err = g.p.Generate(prompts, o)
		return err
	})
	return out, err
}

// logProbs scores the answers.
func (g *guarded) logProbs(items []*workerpb.Scored, o ScoreOptions) (out []*workerpb.TokenLogProbs, err error) {
	err = g.read(func() (err error) {
		out, err = g.p.LogProbs(items, o)
		return err
	})
	return out, err
}

// backward accumulates the gradient of the weighted answers.
func (g *guarded) backward(items []*workerpb.Weighted) (objective float64, tokens int64, err error) {
	err = g.write(func() (err error) {
		objective, tokens, err = g.p.Backward(items)
		return err
	})
	return objective, tokens, err
}

// gradient returns a copy of the accumulated gradient.
func (g *guarded) gradient() (out []float32, err error) {
	err = g.read(func() error {
		out = g.p.Gradient()
		return nil
	})
	return out, err
}

// step fills in the default coefficients, checks them and takes the step; it
// returns the gradient norm and the number of steps taken since.
func (g *guarded) step(o StepOptions) (gradNorm float64, steps int64, err error) {
	if o, err = o.withDefaults(); err != nil {
		return 0, 0, err
	}
	err = g.write(func() (err error) {
		gradNorm, err = g.p.Step(o)
		steps = g.p.Describe().Steps
		return err
	})
	return gradNorm, steps, err
}

// snapshotReference freezes the current weights as the reference.
func (g *guarded) snapshotReference() error { return g.write(g.p.SnapshotReference) }

// save writes the state to path atomically (writeAtomic) and returns its size. A
// path outside the allowed folders is an error wrapping ErrPathNotAllowed.
func (g *guarded) save(path string) (n int64, err error) {
	if path == "" {
		return 0, fmt.Errorf("%w: save: empty path", ErrInvalid)
	}
	real, err := g.allowed.confine("save", path)
	if err != nil {
		return 0, err
	}
	err = g.read(func() (err error) {
		n, err = writeAtomic(real, g.p.Save)
		return err
	})
	return n, err
}

// load restores a state written by save, which also configures a fresh policy, and
// returns the number of steps it had taken.
func (g *guarded) load(path string) (steps int64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.loadLocked(path); err != nil {
		return 0, err
	}
	g.configured = true
	return g.p.Describe().Steps, nil
}

// loadLocked reads the state at path into the policy; the caller holds mu. A path
// outside the allowed folders is an error wrapping ErrPathNotAllowed, a file that
// cannot be opened a codeError of NotFound, one the policy cannot read of DataLoss.
func (g *guarded) loadLocked(path string) error {
	if path == "" {
		return fmt.Errorf("%w: load: empty path", ErrInvalid)
	}
	real, err := g.allowed.confine("load", path)
	if err != nil {
		return err
	}
	f, err := os.Open(real)
	if err != nil {
		return &codeError{code: codes.NotFound, err: err}
	}
	defer f.Close()
	return g.loadFrom(f, path)
}

// loadFrom reads a state Save wrote from r, named name in errors, into the policy;
// the caller holds mu. One the policy cannot read is a codeError of DataLoss.
func (g *guarded) loadFrom(r io.Reader, name string) error {
	if err := g.p.Load(r); err != nil {
		return &codeError{code: codes.DataLoss, err: fmt.Errorf("load %s: %w", name, err)}
	}
	return nil
}

// codeError is an error of a state file, with the gRPC code the server answers for
// it.
type codeError struct {
	code codes.Code
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// withDefaults returns o with Samples and Temperature of 0 set to 1, or an error
// wrapping ErrInvalid when a value is negative.
func (o SampleOptions) withDefaults() (SampleOptions, error) {
	switch {
	case o.Samples < 0 || o.MaxTokens < 0:
		return o, fmt.Errorf("%w: generate: samples %d and max_tokens %d must not be negative", ErrInvalid, o.Samples, o.MaxTokens)
	case o.Temperature < 0:
		return o, fmt.Errorf("%w: generate: temperature %v must not be negative", ErrInvalid, o.Temperature)
	}
	if o.Samples == 0 {
		o.Samples = 1
	}
	if o.Temperature == 0 {
		o.Temperature = 1
	}
	return o, nil
}

// withDefaults returns o with Beta1, Beta2 and Epsilon of 0 set to their defaults,
// or an error wrapping ErrInvalid unless every value is finite, the betas in [0, 1)
// and the others >= 0.
func (o StepOptions) withDefaults() (StepOptions, error) {
	if o.Beta1 == 0 {
		o.Beta1 = DefaultBeta1
	}
	if o.Beta2 == 0 {
		o.Beta2 = DefaultBeta2
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultEpsilon
	}
	for _, v := range []float64{o.LearningRate, o.WeightDecay, o.Epsilon, o.MaxGradNorm} {
		if !(v >= 0 && v < 1e300) {
			return o, fmt.Errorf("%w: step: learning_rate, weight_decay, epsilon and max_grad_norm must be finite and >= 0", ErrInvalid)
		}
	}
	if !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1) {
		return o, fmt.Errorf("%w: step: beta1 %v and beta2 %v must lie in [0, 1)", ErrInvalid, o.Beta1, o.Beta2)
	}
	return o, nil
}

// writeAtomic writes a file with write, through a temporary file in the same folder,
// synced, then renamed over path, and returns its size.
func writeAtomic(path string, write func(w io.Writer) error) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	cw := &countingWriter{w: f}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
