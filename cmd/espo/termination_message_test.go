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

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/espo-dev/espo-operator/internal/localcluster/podenv"
)

func TestWriteTerminationMessage(t *testing.T) {
	path := writeFile(t, "termination-log", "an older message, longer than the new one")
	if err := writeTerminationMessage(path, "dataset: bad JSON"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "dataset: bad JSON" {
		t.Errorf("the file holds %q, want the message alone", b)
	}

	missing := filepath.Join(t.TempDir(), "termination-log")
	if err := writeTerminationMessage(missing, "x"); err != nil {
		t.Errorf("outside a container: %v, want nothing written and no error", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("outside a container a file was created: %v", err)
	}
}

func TestBoundTerminationMessage(t *testing.T) {
	if got := boundTerminationMessage("short"); got != "short" {
		t.Errorf("a short message became %q", got)
	}
	exact := strings.Repeat("x", maxTerminationMessage)
	if got := boundTerminationMessage(exact); got != exact {
		t.Errorf("a message of exactly %d bytes was cut", maxTerminationMessage)
	}
	long := "outer context: " + strings.Repeat("é", 3000) + ": the root cause"
	got := boundTerminationMessage(long)
	if len(got) > maxTerminationMessage || !utf8.ValidString(got) {
		t.Errorf("bounded message: %d bytes, valid UTF-8 %v; want at most %d, valid", len(got), utf8.ValidString(got), maxTerminationMessage)
	}
	for _, part := range []string{"outer context: ", terminationElision, ": the root cause"} {
		if !strings.Contains(got, part) {
			t.Errorf("bounded message lacks %q", part)
		}
	}
}

// TestTrainerWritesItsErrorAsTheTerminationMessage: a trainer that cannot read its
// dataset exits with the error, which is the whole of its termination message (no
// log line before it), in the file the process node names.
func TestTrainerWritesItsErrorAsTheTerminationMessage(t *testing.T) {
	data := t.TempDir()
	if err := errors.Join(os.Mkdir(filepath.Join(data, "bad"), 0o755),
		os.WriteFile(filepath.Join(data, "bad", "a.jsonl"), []byte("{\"id\": \"x\", \"steps\": [oops\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	config := writeFile(t, "run.yaml", "dataRoot: "+data+"\noutputDir: "+t.TempDir()+"\n"+
		"spec:\n  datasets:\n    sources:\n    - name: bad\n      configMap:\n        name: bad\n")
	message := writeFile(t, "termination-log", "")
	t.Setenv(podenv.TerminationMessagePath, message)

	cmd := newRootCommand()
	cmd.SetArgs([]string{"trainer", "--config", config, "--metrics-bind-address", "0", "--report", "none"})
	err := cmd.Execute()
	if err == nil {
		t.Fatal("the trainer succeeded on a corrupt dataset")
	}
	b, _ := os.ReadFile(message)
	if string(b) != err.Error() {
		t.Errorf("termination message %q, want the trainer's error %q", b, err)
	}
	if !strings.HasPrefix(string(b), "spec.datasets.sources[0] (bad): ") || !strings.Contains(string(b), "bad JSON") {
		t.Errorf("termination message %q: want the dataset's error", b)
	}
}
