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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/espo-dev/espo-operator/trainer/checkpoint"
)

// envPython names the variable that, when set, is the default interpreter of
// `espo export`: one that imports espo_worker, as the PyTorch worker's image's does.
const envPython = "ESPO_PYTHON"

// exportOptions are the flags of `espo export`.
type exportOptions struct {
	python, base, device, maxShardSize string
	merge                              bool
}

// exported is what espo_worker.export_cli prints of the folder it wrote.
type exported struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Merged bool   `json:"merged"`
	Step   int64  `json:"step"`
	Files  int    `json:"files"`
}

// newExportCommand is `espo export CHECKPOINT DEST`: the Hugging Face folder of a
// checkpoint of the PyTorch worker, the one spec.export writes, made offline.
func newExportCommand() *cobra.Command {
	o := exportOptions{python: os.Getenv(envPython)}
	if o.python == "" {
		o.python = "python3"
	}
	cmd := &cobra.Command{
		Use:   "export CHECKPOINT DEST",
		Short: "Write the policy of a checkpoint as a Hugging Face folder, offline (what spec.export writes)",
		Long: `Export turns a checkpoint of a job on the PyTorch worker (a step-<n> folder of
spec.checkpoint's claim, of any step and any job, or spec.model.initialCheckpoint's)
into the folder spec.export writes: the peft adapter (with --merge also the merged
model under merged/) or the whole model, with the tokenizer, processor, chat template
and espo-export.json, the manifest of every file's SHA-256. DEST is replaced whole,
once the export is complete.

It runs the PyTorch worker's own code (python -m espo_worker.export_cli) with the
interpreter --python, on a machine that has the checkpoint and the base model: the
worker image (whose python3 imports espo_worker), or a machine where espo_worker is
importable. The checkpoint names its base model as the pod saw it (/models/...);
--base names the folder where it is now.`,
		Example: `  espo export /checkpoints/gui-run-7/step-000000001200 /models/gui-run-7-step-1200 \
      --base /models/Qwen2.5-VL-3B-Instruct --merge`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := exportCheckpoint(cmd.Context(), args[0], args[1], o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			merged := ""
			if out.Merged {
				merged = ", with the merged model in merged/"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported step %d (%s%s) to %s: %d files, listed in espo-export.json\n",
				out.Step, out.Kind, merged, out.Path, out.Files)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.base, "base", "", "the base model's folder on this machine, when it is not where the checkpoint's pod had it")
	f.BoolVar(&o.merge, "merge", false, "also write the LoRA adapter merged into the base model, under merged/")
	f.StringVar(&o.device, "device", "cpu", "where the model is loaded: cpu or cuda")
	f.StringVar(&o.maxShardSize, "max-shard-size", "5GB", "the largest safetensors file of a whole model")
	f.StringVar(&o.python, "python", o.python, "the interpreter that imports espo_worker (default $"+envPython+", else python3)")
	return cmd
}

// exportCheckpoint verifies the checkpoint in dir against its manifest and has the
// PyTorch worker's code export its worker state to dest; the worker's messages go to
// stderr.
func exportCheckpoint(ctx context.Context, dir, dest string, o exportOptions, stderr io.Writer) (exported, error) {
	c, err := checkpoint.Verify(dir)
	if err != nil {
		return exported{}, fmt.Errorf("%s is no intact checkpoint (%w): give a step-<n> folder of the job's checkpoint claim", dir, err)
	}
	if !c.HoldsWorkerState() {
		return exported{}, fmt.Errorf("%s: the checkpoint holds no %s", dir, checkpoint.WorkerStateFile)
	}
	args := []string{"-m", "espo_worker.export_cli", filepath.Join(c.Dir, checkpoint.WorkerStateFile), dest,
		"--device", o.device, "--max-shard-size", o.maxShardSize}
	if o.base != "" {
		args = append(args, "--base", o.base)
	}
	if o.merge {
		args = append(args, "--merge")
	}
	python, err := exec.LookPath(o.python)
	if err != nil {
		return exported{}, fmt.Errorf("no interpreter %q (%w): set --python (or $%s) to the python3 that imports espo_worker", o.python, err, envPython)
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		return exported{}, fmt.Errorf("exporting %s with %s: %w (the reason is above; the interpreter must import espo_worker, "+
			"as the PyTorch worker image's python3 does)", dir, o.python, err)
	}
	var out exported
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return exported{}, fmt.Errorf("exporting %s: %s answered %q, not the export's summary: is it the PyTorch worker's interpreter?", dir, o.python, stdout.String())
	}
	return out, nil
}
