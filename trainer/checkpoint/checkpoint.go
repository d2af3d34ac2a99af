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

// Package checkpoint stores training checkpoints atomically and finds the newest valid
// one to resume from.
//
// A checkpoint is a folder <dir>/step-<step, 12 digits>/ holding the files that the
// caller writes (the worker's state) and MANIFEST.json, written last, which records the
// SHA-256 of every file, the trainer's own state (sampler position, counters) and the
// checkpoint's Binding: the run that wrote it and a digest of each part of the
// configuration that gives that state its meaning. The folder is built under a
// temporary name and renamed into place, so a crash leaves either a complete
// checkpoint or a temporary folder that is ignored and cleaned up. A checkpoint whose
// manifest is missing or whose files do not match it is skipped with a warning; one
// that is intact but bound to another run, or to none (manifest version 1), is refused
// with a *MismatchError, never skipped and never resumed.
package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// WorkerStateFile is the name, in a trainer's checkpoint, of its workers' full
// state: a file written by worker 0 (replicated workers share one state), or a
// folder of the shards of every worker of a sharded gang (see the PyTorch worker's
// espo_worker.state).
const WorkerStateFile = "worker.state"

const (
	manifestName = "MANIFEST.json"
	dirPrefix    = "step-"
	tmpPrefix    = ".tmp-"
	// manifestVersion is the version of the manifest format: 2 records the Binding;
	// Verify still reads version 1, whose checkpoints have none.
	manifestVersion = 2
)

// Manifest describes one checkpoint.
type Manifest struct {
	// Version is the manifest format version.
	Version int `json:"version"`
	// Step is the number of optimizer steps taken when the checkpoint was written.
	Step int64 `json:"step"`
	// Files maps each file in the checkpoint folder, by its slash-separated path
	// relative to the folder (a sharded worker state's files are in a folder of
	// their own), to its hex SHA-256.
	Files map[string]string `json:"files"`
	// State is the trainer's state, opaque to this package.
	State json.RawMessage `json:"state"`
	// Binding is what the checkpoint belongs to; nil in a version 1 manifest.
	Binding *Binding `json:"binding,omitempty"`
}

// Checkpoint is a complete, verified checkpoint.
type Checkpoint struct {
	// Dir is the checkpoint's folder.
	Dir string
	Manifest
}

// HoldsWorkerState reports whether the checkpoint holds its workers' state: the file
// WorkerStateFile, or files in the folder of that name.
func (c *Checkpoint) HoldsWorkerState() bool {
	for name := range c.Files {
		if name == WorkerStateFile || strings.HasPrefix(name, WorkerStateFile+"/") {
			return true
		}
	}
	return false
}

// Store keeps the checkpoints of one run in a folder.
type Store struct {
	dir     string
	keep    int
	binding Binding
	log     logr.Logger
	// protected is the step Protect keeps from pruning; -1 for none.
	protected int64
}

// NewStore returns a store in dir for the run of binding, which every checkpoint it
// saves records and every checkpoint it resumes must match; it keeps the newest keep
// checkpoints (keep < 1 keeps them all). It creates dir.
func NewStore(dir string, keep int, binding Binding, log logr.Logger) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: creating %s: %w", dir, err)
	}
	return &Store{dir: dir, keep: keep, binding: binding, log: log, protected: -1}, nil
}

// Protect keeps the checkpoint of step from pruning, beside the newest keep, until
// another step is protected: the best checkpoint of a run that exports it. A negative
// step protects none.
func (s *Store) Protect(step int64) { s.protected = max(step, -1) }

// At returns the intact checkpoint of step. It fails when there is none, when it is
// not intact, or (with a *MismatchError) when it belongs to another run.
func (s *Store) At(step int64) (*Checkpoint, error) {
	c, err := Verify(filepath.Join(s.dir, dirName(step)))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: step %d: %w", step, err)
	}
	if err := s.binding.admits(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Save writes a checkpoint for step: write fills a fresh folder with the checkpoint's
// files, then Save checksums them, writes the manifest with state, renames the folder
// into place and prunes old checkpoints. It returns the checkpoint's folder.
func (s *Store) Save(step int64, state any, write func(dir string) error) (string, error) {
	tmp, err := os.MkdirTemp(s.dir, tmpPrefix)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := write(tmp); err != nil {
		return "", fmt.Errorf("checkpoint: writing step %d: %w", step, err)
	}
	m, err := newManifest(tmp, step, state, s.binding)
	if err != nil {
		return "", err
	}
	if err := writeFileSync(filepath.Join(tmp, manifestName), m); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	final := filepath.Join(s.dir, dirName(step))
	if err := os.RemoveAll(final); err != nil { // a previous, possibly corrupt, save of this step
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	s.prune()
	return final, nil
}

// Latest returns the newest intact checkpoint, or nil when there is none; a
// checkpoint that is not intact (no manifest, a file that does not match it) is
// skipped with a warning. When the newest intact checkpoint belongs to another run
// (its binding differs from the store's, or it has none) Latest returns a
// *MismatchError: a folder that holds another run's checkpoints is refused, not
// resumed and not searched for an older one of this run.
func (s *Store) Latest() (*Checkpoint, error) {
	steps, err := s.steps()
	if err != nil {
		return nil, err
	}
	for i := len(steps) - 1; i >= 0; i-- {
		dir := filepath.Join(s.dir, dirName(steps[i]))
		c, err := Verify(dir)
		if err != nil {
			s.log.Info("skipping an invalid checkpoint", "dir", dir, "reason", err.Error())
			continue
		}
		if err := s.binding.admits(c); err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, nil
}

// Verify reads the checkpoint in dir and checks every file against its manifest. It
// does not look at the checkpoint's binding: a checkpoint of any run, or of none,
// verifies.
func Verify(dir string) (*Checkpoint, error) {
	raw, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, fmt.Errorf("no readable manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Version < 1 || m.Version > manifestVersion {
		return nil, fmt.Errorf("manifest version %d, want 1 to %d", m.Version, manifestVersion)
	}
	for name, want := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return nil, fmt.Errorf("manifest names %q, a path outside the checkpoint's folder", name)
		}
		got, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%s: checksum %s, manifest says %s", name, got, want)
		}
	}
	return &Checkpoint{Dir: dir, Manifest: m}, nil
}

// steps lists the steps of the checkpoint folders in ascending order and removes
// leftover temporary folders.
func (s *Store) steps() ([]int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var steps []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			_ = os.RemoveAll(filepath.Join(s.dir, name))
			continue
		}
		step, ok := parseDirName(name)
		if ok && e.IsDir() {
			steps = append(steps, step)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	return steps, nil
}

// prune removes all but the newest keep checkpoints and the protected one.
func (s *Store) prune() {
	if s.keep < 1 {
		return
	}
	steps, err := s.steps()
	if err != nil {
		s.log.Error(err, "listing checkpoints to prune")
		return
	}
	for i := 0; i < len(steps)-s.keep; i++ {
		if steps[i] == s.protected {
			continue
		}
		dir := filepath.Join(s.dir, dirName(steps[i]))
		if err := os.RemoveAll(dir); err != nil {
			s.log.Error(err, "removing an old checkpoint", "dir", dir)
		}
	}
}

func newManifest(dir string, step int64, state any, b Binding) ([]byte, error) {
	rawState, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encoding the trainer state: %w", err)
	}
	m := Manifest{Version: manifestVersion, Step: step, Files: map[string]string{}, State: rawState, Binding: &b}
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir():
			return syncDir(path)
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or folder; checkpoints hold files", path)
		}
		if err := syncFile(path); err != nil {
			return err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		m.Files[filepath.ToSlash(rel)] = sum
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return json.MarshalIndent(m, "", "  ")
}

func dirName(step int64) string { return fmt.Sprintf("%s%012d", dirPrefix, step) }

func parseDirName(name string) (int64, bool) {
	if !strings.HasPrefix(name, dirPrefix) {
		return 0, false
	}
	step, err := strconv.ParseInt(strings.TrimPrefix(name, dirPrefix), 10, 64)
	return step, err == nil && step >= 0
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checkpoint: reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func syncDir(dir string) error { return syncFile(dir) }
