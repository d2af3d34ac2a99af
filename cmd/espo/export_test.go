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
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/espo-dev/espo-operator/test/pyenv"
	"github.com/espo-dev/espo-operator/test/repo"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
)

// saveState is the PyTorch worker saving a LoRA policy of the model folder argv[1],
// with one optimizer step of an SFT loss taken, to the file argv[2]: a job's worker
// state, as its checkpoints hold it.
const saveState = `
import sys
from espo_worker import protocol as pb, wire
from espo_worker.policy import Policy
p = Policy({"pretrained": sys.argv[1], "dtype": "float32", "max_new_tokens": 8})
p.configure(1, {"lora_r": "4"})
prompt = pb.Prompt(instruction="book a quiet hotel", stage=pb.STAGE_GUI)
wire.backward(p, pb.BackwardRequest(items=[pb.Weighted(prompt=prompt, answer=pb.Answer(text="click(0.5, 0.5)"), sequence_weight=1.0)]))
wire.step(p, pb.StepRequest(learning_rate=0.05))
p.save(sys.argv[2])
`

// TestExportCommandWritesACheckpointsFolder: espo export turns a checkpoint of the
// PyTorch worker, whose base model has moved since (--base), into a Hugging Face
// folder that the worker's own verification accepts, of the checkpoint's step, with
// the merged model; it refuses a damaged checkpoint before running anything, and
// names --python when the interpreter is missing.
func TestExportCommandWritesACheckpointsFolder(t *testing.T) {
	python := pyenv.Require(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	workerDir := filepath.Join(root, "trainer", "worker", "torch")
	t.Setenv("PYTHONPATH", workerDir)
	pod := filepath.Join(t.TempDir(), "models-in-the-pod")
	runPython(t, workerDir, python, "-m", "tests.random_models", pod, "--arch", "qwen3")
	store, err := checkpoint.NewStore(t.TempDir(), 1, checkpoint.Binding{Run: "ns/job", UID: "u"}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ckpt, err := store.Save(1, map[string]int{"step": 1}, func(dir string) error {
		runPython(t, workerDir, python, "-c", saveState, pod, filepath.Join(dir, checkpoint.WorkerStateFile))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	here := filepath.Join(t.TempDir(), "models-here")
	if err := os.Rename(pod, here); err != nil {
		t.Fatal(err)
	}

	dest := filepath.Join(t.TempDir(), "export")
	out, err := runEspo(t, "export", ckpt, dest, "--base", here, "--merge", "--python", python)
	if err != nil {
		t.Fatalf("espo export: %v\n%s", err, out)
	}
	if !strings.Contains(out, "exported step 1 (lora, with the merged model in merged/) to "+dest) {
		t.Errorf("espo export printed %q", out)
	}
	verified := runPython(t, workerDir, python, "-c",
		"import sys, json; from espo_worker import export; m = export.verify(sys.argv[1]); print(json.dumps([m.step, m.kind, m.merged, m.base]))", dest)
	var got []any
	if err := json.Unmarshal([]byte(verified), &got); err != nil {
		t.Fatal(err)
	}
	if want := []any{float64(1), "lora", true, here}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("the export's manifest says %v, want %v", got, want)
	}

	if out, err := runEspo(t, "export", ckpt, filepath.Join(t.TempDir(), "x"), "--python", python); err == nil ||
		!strings.Contains(out+err.Error(), "--base") {
		t.Errorf("an export whose base model moved, without --base: %v\n%s; want a failure naming --base", err, out)
	}
	if _, err := runEspo(t, "export", ckpt, dest, "--python", filepath.Join(t.TempDir(), "no-python")); err == nil ||
		!strings.Contains(err.Error(), "set --python") {
		t.Errorf("a missing interpreter: %v, want a failure naming --python", err)
	}
	state := filepath.Join(ckpt, checkpoint.WorkerStateFile)
	if err := os.WriteFile(state, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runEspo(t, "export", ckpt, dest, "--python", filepath.Join(t.TempDir(), "no-python")); err == nil ||
		!strings.Contains(err.Error(), "is no intact checkpoint") {
		t.Errorf("a damaged checkpoint: %v, want it refused before python runs", err)
	}
}

// runPython runs python with args in dir and returns its standard output; a failure
// fails the test with its standard error.
func runPython(t *testing.T, dir, python string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", python, strings.Join(args[:1], " "), err, stderr.String())
	}
	return string(out)
}

// runEspo runs the espo command tree with args and returns what it printed, its
// standard output and error together.
func runEspo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
