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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

type state struct {
	Epoch, Batch int
}

// run1 is the binding of the tests' run.
var run1 = Binding{Run: "ns/demo", UID: "uid-1", Parts: map[string]string{"algorithm": "a1", "datasets": "d1"}}

func writeState(content string) func(string) error {
	return func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "worker.state"), []byte(content), 0o644)
	}
}

func TestSaveThenLatestReturnsNewestWithState(t *testing.T) {
	s, err := NewStore(t.TempDir(), 0, run1, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(1); step <= 3; step++ {
		if _, err := s.Save(step, state{Epoch: 1, Batch: int(step)}, writeState("w")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Latest()
	if err != nil || c == nil {
		t.Fatalf("Latest() = %v, %v", c, err)
	}
	var got state
	if err := json.Unmarshal(c.State, &got); err != nil {
		t.Fatal(err)
	}
	if c.Step != 3 || got != (state{Epoch: 1, Batch: 3}) {
		t.Errorf("Latest() = step %d state %+v, want step 3 {1 3}", c.Step, got)
	}
	if c.Files["worker.state"] == "" {
		t.Errorf("manifest lacks worker.state: %v", c.Files)
	}
}

func TestLatestSkipsCorruptAndHalfWrittenCheckpoints(t *testing.T) {
	cases := map[string]func(dir string){
		"file changed after save": func(dir string) {
			os.WriteFile(filepath.Join(dir, "worker.state"), []byte("tampered"), 0o644)
		},
		"manifest missing (half written)": func(dir string) { os.Remove(filepath.Join(dir, manifestName)) },
		"manifest garbage":                func(dir string) { os.WriteFile(filepath.Join(dir, manifestName), []byte("{"), 0o644) },
		"file missing":                    func(dir string) { os.Remove(filepath.Join(dir, "worker.state")) },
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			var warnings []string
			log := funcr.New(func(_, args string) { warnings = append(warnings, args) }, funcr.Options{})
			s, _ := NewStore(t.TempDir(), 0, run1, log)
			if _, err := s.Save(10, state{Batch: 10}, writeState("good")); err != nil {
				t.Fatal(err)
			}
			newest, err := s.Save(20, state{Batch: 20}, writeState("newer"))
			if err != nil {
				t.Fatal(err)
			}
			corrupt(newest)
			c, err := s.Latest()
			if err != nil || c == nil || c.Step != 10 {
				t.Fatalf("Latest() = %+v, %v; want the step-10 checkpoint", c, err)
			}
			if len(warnings) != 1 {
				t.Errorf("want one warning for the skipped checkpoint, got %q", warnings)
			}
		})
	}
}

func TestLeftoverTemporaryFolderIsIgnoredAndRemoved(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewStore(dir, 0, run1, logr.Discard())
	if err := os.MkdirAll(filepath.Join(dir, tmpPrefix+"crashed", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := s.Latest()
	if err != nil || c != nil {
		t.Fatalf("Latest() = %v, %v; want none", c, err)
	}
	if _, err := os.Stat(filepath.Join(dir, tmpPrefix+"crashed")); !os.IsNotExist(err) {
		t.Errorf("temporary folder not removed: %v", err)
	}
}

func TestSaveKeepsTheNewestK(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewStore(dir, 2, run1, logr.Discard())
	for step := int64(1); step <= 5; step++ {
		if _, err := s.Save(step, state{}, writeState("w")); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{dirName(4), dirName(5)}
	if len(names) != 2 || names[0] != want[0] || names[1] != want[1] {
		t.Errorf("folders = %v, want %v", names, want)
	}
}

// TestProtectedCheckpointOutlivesPruning: the protected step survives pruning beside
// the newest keep until another step is protected, and At finds it intact; At fails
// for a pruned step and refuses another run's checkpoint.
func TestProtectedCheckpointOutlivesPruning(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewStore(dir, 2, run1, logr.Discard())
	save := func(from, to int64) {
		for step := from; step <= to; step++ {
			if _, err := s.Save(step, state{Batch: int(step)}, writeState(fmt.Sprint("w", step))); err != nil {
				t.Fatal(err)
			}
		}
	}
	save(1, 2)
	s.Protect(2)
	save(3, 6)
	if got, want := folders(t, dir), []string{dirName(2), dirName(5), dirName(6)}; !slices.Equal(got, want) {
		t.Errorf("with step 2 protected: folders %v, want %v", got, want)
	}
	c, err := s.At(2)
	if err != nil || c.Step != 2 {
		t.Fatalf("At(2) = %+v, %v", c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Dir, "worker.state")); string(b) != "w2" {
		t.Errorf("At(2)'s worker state %q, want w2", b)
	}
	s.Protect(6)
	save(7, 7)
	if got, want := folders(t, dir), []string{dirName(6), dirName(7)}; !slices.Equal(got, want) {
		t.Errorf("with step 6 protected instead: folders %v, want %v", got, want)
	}
	if _, err := s.At(2); err == nil {
		t.Error("At(2) found the pruned checkpoint")
	}
	other, _ := NewStore(dir, 2, Binding{Run: "ns/other", UID: "uid-2"}, logr.Discard())
	var mismatch *MismatchError
	if _, err := other.At(7); !errors.As(err, &mismatch) {
		t.Errorf("another run's At(7): %v, want a *MismatchError", err)
	}
}

func folders(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestSaveRefusesWhatIsNoFileOrFolder(t *testing.T) {
	s, _ := NewStore(t.TempDir(), 0, run1, logr.Discard())
	_, err := s.Save(1, state{}, func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "link")) })
	if err == nil {
		t.Fatal("Save accepted a symbolic link")
	}
	if c, _ := s.Latest(); c != nil {
		t.Errorf("a failed save left checkpoint %s", c.Dir)
	}
}

// writeShards writes a sharded worker state: a folder of files, as the PyTorch
// worker's sharded gang writes it.
func writeShards(dir string) error {
	state := filepath.Join(dir, WorkerStateFile)
	if err := os.Mkdir(state, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"meta.json", ".metadata", "__0_0.distcp", "__1_0.distcp"} {
		if err := os.WriteFile(filepath.Join(state, name), []byte(name), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func TestAShardedStateFolderIsBoundFileByFile(t *testing.T) {
	s, _ := NewStore(t.TempDir(), 0, run1, logr.Discard())
	dir, err := s.Save(4, state{}, writeShards)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range c.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"worker.state/.metadata", "worker.state/__0_0.distcp", "worker.state/__1_0.distcp", "worker.state/meta.json"}
	if !slices.Equal(names, want) {
		t.Errorf("manifest files %v, want %v", names, want)
	}
	if err := os.WriteFile(filepath.Join(dir, WorkerStateFile, "__1_0.distcp"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); err == nil {
		t.Error("Verify accepted a changed shard")
	}
}

func TestVerifyRefusesAManifestNamingAPathOutside(t *testing.T) {
	s, _ := NewStore(t.TempDir(), 0, run1, logr.Discard())
	dir, err := s.Save(1, state{}, writeState("w"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, manifestName))
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Files["../outside"] = m.Files["worker.state"]
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, manifestName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Verify of a manifest naming ../outside: %v, want a refusal", err)
	}
}
