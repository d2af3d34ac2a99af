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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// EnvAllowedPaths names the environment variable with the folders a worker's Save
// and Load may touch, colon-separated, as the controller sets it in every worker
// container: the checkpoint mount, the initial-checkpoint mount and the output
// folder, those the job has.
const EnvAllowedPaths = trainingv1alpha1.WorkerPathsEnv

// ErrPathNotAllowed marks a Save or Load of a path outside the worker's allowed
// folders; the server answers it with PermissionDenied.
var ErrPathNotAllowed = errors.New("path not allowed")

// SplitFolders splits a colon-separated list of folders ($ESPO_WORKER_PATHS),
// dropping empty entries.
func SplitFolders(list string) []string {
	var dirs []string
	for d := range strings.SplitSeq(list, string(filepath.ListSeparator)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// folders are the folders Save and Load may touch, absolute and cleaned. Symbolic
// links are resolved when a path is checked, in the folders and in the path alike,
// so that a folder mounted behind a link still admits its files and a link inside a
// folder does not let a path out of it.
type folders []string

// newFolders returns dirs made absolute and cleaned, empty entries dropped.
func newFolders(dirs []string) folders {
	var f folders
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			f = append(f, abs)
		}
	}
	return f
}

func (f folders) String() string {
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, ", ")
}

// confine returns the path a Save or Load (op) of p uses: p made absolute and
// cleaned, with the symbolic links of its existing part resolved (the file's own
// too, so that a link inside a folder cannot lead out of it), or an error wrapping
// ErrPathNotAllowed unless that lies under an allowed folder.
func (f folders) confine(op, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", f.refuse(op, p, err.Error())
	}
	real, err := resolve(abs)
	if err != nil {
		return "", f.refuse(op, p, err.Error())
	}
	return f.admit(op, p, real)
}

// admit returns real, the resolved form of p, when it lies strictly under one of the
// folders (each resolved too).
func (f folders) admit(op, p, real string) (string, error) {
	if len(f) == 0 {
		return "", fmt.Errorf("%w: %s %s: this worker has no allowed folders; name the job's folders in $%s or with --allow-path",
			ErrPathNotAllowed, op, p, EnvAllowedPaths)
	}
	for _, d := range f {
		rd, err := resolve(d)
		if err == nil && under(real, rd) {
			return real, nil
		}
	}
	return "", f.refuse(op, p, "resolves to "+real)
}

// refuse is the error of a path outside the folders, with why.
func (f folders) refuse(op, p, why string) error {
	return fmt.Errorf("%w: %s %s: %s, not under an allowed folder (%s; set by $%s or --allow-path)",
		ErrPathNotAllowed, op, p, why, f, EnvAllowedPaths)
}

// under reports whether the clean absolute path p lies strictly under dir.
func under(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return p != dir
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolve returns the absolute clean path abs with the symbolic links of its longest
// existing part resolved and the rest appended as it is. A dangling link on the way
// is an error: what it will point to is not known yet.
func resolve(abs string) (string, error) {
	existing, rest := abs, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(existing); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to a missing file", existing)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return abs, nil
		}
		existing, rest = parent, filepath.Join(filepath.Base(existing), rest)
	}
}
