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

package checkpoint

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// saveOne saves one checkpoint of step 7 in dir under binding b and returns its folder.
func saveOne(t *testing.T, dir string, b Binding) string {
	t.Helper()
	s, err := NewStore(dir, 0, b, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	path, err := s.Save(7, state{Epoch: 2, Batch: 3}, writeState("w"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// withParts is b with some parts' digests added or replaced.
func withParts(b Binding, parts map[string]string) Binding {
	b.Parts = maps.Clone(b.Parts)
	if b.Parts == nil {
		b.Parts = map[string]string{}
	}
	maps.Copy(b.Parts, parts)
	return b
}

func TestLatestResumesACheckpointOfTheSameBinding(t *testing.T) {
	dir := t.TempDir()
	path := saveOne(t, dir, run1)
	same := run1
	same.Run = "ns/renamed" // a name is for people; the UID and the parts bind
	s, _ := NewStore(dir, 0, same, logr.Discard())
	c, err := s.Latest()
	if err != nil || c == nil || c.Dir != path {
		t.Fatalf("Latest() = %+v, %v; want %s", c, err, path)
	}
	if c.Binding == nil || c.Binding.UID != run1.UID || !maps.Equal(c.Binding.Parts, run1.Parts) {
		t.Errorf("the manifest's binding = %+v, want %+v", c.Binding, run1)
	}
}

func TestLatestRefusesACheckpointOfAnotherRunOrSpec(t *testing.T) {
	cases := map[string]struct {
		want     Binding
		otherRun bool
		parts    []string
		says     []string
	}{
		"another job, the same spec": {
			want:     Binding{Run: "ns/demo", UID: "uid-2", Parts: run1.Parts},
			otherRun: true,
			says:     []string{"another run wrote it (job ns/demo uid uid-1; this is job ns/demo uid uid-2)"},
		},
		"the same job, another algorithm": {
			want:  withParts(run1, map[string]string{"algorithm": "a2"}),
			parts: []string{"algorithm"},
			says:  []string{"the spec differs in algorithm"},
		},
		"another job with other datasets and algorithm": {
			want:     withParts(Binding{Run: "ns/demo", UID: "uid-2"}, map[string]string{"algorithm": "a2", "datasets": "d2"}),
			otherRun: true,
			parts:    []string{"algorithm", "datasets"},
			says:     []string{"another run wrote it", "the spec differs in algorithm and datasets"},
		},
		"a part this run digests that the checkpoint lacks": {
			want:  withParts(run1, map[string]string{"model": "m1"}),
			parts: []string{"model"},
			says:  []string{"the spec differs in model"},
		},
		"a run outside Kubernetes": {
			want:     Binding{Parts: run1.Parts},
			otherRun: true,
			says:     []string{"this is a run outside Kubernetes"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := saveOne(t, dir, run1)
			s, _ := NewStore(dir, 0, tc.want, logr.Discard())
			c, err := s.Latest()
			var mismatch *MismatchError
			if c != nil || !errors.As(err, &mismatch) {
				t.Fatalf("Latest() = %+v, %v; want a *MismatchError", c, err)
			}
			if mismatch.Dir != path || mismatch.OtherRun != tc.otherRun || strings.Join(mismatch.Parts, ",") != strings.Join(tc.parts, ",") {
				t.Errorf("mismatch = dir %s, other run %t, parts %v; want %s, %t, %v", mismatch.Dir, mismatch.OtherRun, mismatch.Parts, path, tc.otherRun, tc.parts)
			}
			msg := err.Error()
			for _, want := range append([]string{"checkpoint " + path + " belongs to another run"}, tc.says...) {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

// A checkpoint of manifest version 1 (no binding) still verifies, for
// spec.model.initialCheckpoint, but a store refuses to resume it.
func TestAVersion1CheckpointVerifiesButIsNotResumed(t *testing.T) {
	dir := t.TempDir()
	path := saveOne(t, dir, run1)
	manifest := filepath.Join(path, manifestName)
	var m map[string]any
	raw, _ := os.ReadFile(manifest)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "binding")
	m["version"] = 1
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(manifest, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	if c, err := Verify(path); err != nil || c.Binding != nil {
		t.Fatalf("Verify(version 1) = %+v, %v; want it verified, without a binding", c, err)
	}
	s, _ := NewStore(dir, 0, run1, logr.Discard())
	c, err := s.Latest()
	var mismatch *MismatchError
	if c != nil || !errors.As(err, &mismatch) || mismatch.Written != nil {
		t.Fatalf("Latest() = %+v, %v; want a *MismatchError without a written binding", c, err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "records no run") {
		t.Errorf("message %q does not name the checkpoint and what it lacks", msg)
	}
}

// A corrupt newest checkpoint is skipped as before; the intact one under it is then
// judged by its binding like any other.
func TestACorruptCheckpointIsSkippedBeforeTheBindingIsJudged(t *testing.T) {
	dir := t.TempDir()
	saveOne(t, dir, run1)
	s, _ := NewStore(dir, 0, run1, logr.Discard())
	newest, err := s.Save(9, state{}, writeState("newer"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(newest, "worker.state"), []byte("tampered"), 0o644)
	other, _ := NewStore(dir, 0, withParts(run1, map[string]string{"datasets": "d2"}), logr.Discard())
	if _, err := other.Latest(); err == nil || !strings.Contains(err.Error(), "step-000000000007") {
		t.Errorf("Latest() error = %v, want the step-7 checkpoint refused", err)
	}
}

func TestDigestIsTheSameForTheSameValuesOnly(t *testing.T) {
	sum := func(vs ...any) string {
		d := NewDigest()
		for _, v := range vs {
			d.Add(v)
		}
		s, err := d.Sum()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	type spec struct {
		Epochs int
		Tags   map[string]string
	}
	a := sum(spec{Epochs: 6, Tags: map[string]string{"x": "1", "y": "2"}}, "data")
	if b := sum(spec{Epochs: 6, Tags: map[string]string{"y": "2", "x": "1"}}, "data"); b != a {
		t.Errorf("equal values digest differently: %s vs %s", a, b)
	}
	if b := sum(spec{Epochs: 2, Tags: map[string]string{"x": "1", "y": "2"}}, "data"); b == a {
		t.Error("epochs 6 and 2 digest the same")
	}
	if b := sum(spec{Epochs: 6, Tags: map[string]string{"x": "1", "y": "2"}}, "other data"); b == a {
		t.Error("other data digests the same")
	}
	if _, err := NewDigest().Add(func() {}).Sum(); err == nil {
		t.Error("a value that does not encode gave a digest")
	}
}
