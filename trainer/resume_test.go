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

package trainer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/experience"
)

// jobConfig is smallConfig as the controller writes it for job ns/demo of the given
// UID, with checkpoints every 4 steps in dir (claim ckpt, path runs/demo).
func jobConfig(t *testing.T, uid, dir string) *Config {
	t.Helper()
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Job = JobRef{Namespace: "ns", Name: "demo", UID: types.UID(uid)}
	c.CheckpointDir = dir
	c.Spec.Checkpoint = &trainingv1alpha1.CheckpointSpec{EverySteps: 4, Keep: 2,
		PersistentVolumeClaim: trainingv1alpha1.VolumePath{ClaimName: "ckpt", Path: "runs/demo"}}
	return c
}

// runToTheEnd trains job ns/demo uid-1 to completion with checkpoints in a fresh
// folder and returns that folder and the newest checkpoint's.
func runToTheEnd(t *testing.T) (dir, newest string) {
	t.Helper()
	dir = t.TempDir()
	rep, _ := run(t, jobConfig(t, "uid-1", dir), Options{Workers: cpuGang(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Status.LastCheckpoint == nil {
		t.Fatalf("the first run: outcome %s, last checkpoint %+v", rep.Outcome, rep.Status.LastCheckpoint)
	}
	return dir, rep.Status.LastCheckpoint.Path
}

// refusedRun runs c, which must refuse its checkpoint folder, and returns the report
// of its end; it fails the test when the run trained a step.
func refusedRun(t *testing.T, c *Config) *trainingv1alpha1.TrainingStatus {
	t.Helper()
	rec := &recorder{}
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Reporter: rec, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	var refused *checkpointRefused
	if rep != nil || !errors.As(err, &refused) {
		t.Fatalf("Run() = %+v, %v; want a refused checkpoint", rep, err)
	}
	if len(rec.reports) == 0 {
		t.Fatal("the refusal was not reported")
	}
	for _, r := range rec.reports {
		if r.Step != 0 || r.Evaluation != nil {
			t.Fatalf("a run that refused its checkpoint reported step %d, evaluation %+v", r.Step, r.Evaluation)
		}
	}
	end := rec.reports[len(rec.reports)-1]
	if end.Outcome != trainingv1alpha1.OutcomeCheckpointMismatch || end.Message != err.Error() {
		t.Errorf("the end's report: outcome %s, message %q; want CheckpointMismatch and the error %q", end.Outcome, end.Message, err)
	}
	return end
}

// The case and its neighbours: the job recreated with another algorithm on
// the same checkpoint path, and each other part of the binding, are refused with a
// message that names the folder, the checkpoint, what differs and the fix.
func TestACheckpointOfAnotherJobOrSpecIsRefused(t *testing.T) {
	dir, newest := runToTheEnd(t)
	cases := map[string]struct {
		uid    string
		change func(*Config)
		says   []string
		// samePart: the spec did not change, so no part may be named.
		samePart bool
	}{
		"the job recreated with epochs 2": {
			uid:    "uid-2",
			change: func(c *Config) { c.Spec.Algorithm.Epochs = 2 },
			says:   []string{"another run wrote it (job ns/demo uid uid-1; this is job ns/demo uid uid-2)", "the spec differs in algorithm"},
		},
		"the job recreated with the same spec": {
			uid:      "uid-2",
			says:     []string{"another run wrote it"},
			samePart: true,
		},
		"another dataset seed": {
			uid:    "uid-1",
			change: func(c *Config) { c.Spec.Datasets.Sources[0].Synthetic.Seed = 4 },
			says:   []string{"the spec differs in datasets"},
		},
		"another model and rewards": {
			uid: "uid-1",
			change: func(c *Config) {
				c.Spec.Model.CPU.HiddenSize = 8
				c.Spec.Rewards.Format = "0.2"
			},
			says: []string{"the spec differs in model and rewards"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := jobConfig(t, tc.uid, dir)
			if tc.change != nil {
				tc.change(c)
			}
			msg := refusedRun(t, c).Message
			for _, want := range append(tc.says, `spec.checkpoint (claim ckpt, path "runs/demo")`,
				"checkpoint "+newest+" belongs to another run", "give spec.checkpoint a new path", "spec.model.initialCheckpoint") {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if tc.samePart && strings.Contains(msg, "differs in") {
				t.Errorf("message %q names a part for a spec that did not change", msg)
			}
		})
	}
}

// The same job resumes its checkpoint after changes to the sections it may change
// while suspended (scheduling, checkpoint cadence, early stopping): they are not in
// the binding. A finished run's last checkpoint resumes at the plan's end.
func TestTheSameJobResumesWhatItMayChangeWhileSuspended(t *testing.T) {
	dir, newest := runToTheEnd(t)
	c := jobConfig(t, "uid-1", dir)
	c.Spec.Trainer.NodeSelector = map[string]string{"pool": "b"}
	c.Spec.Checkpoint.EverySteps, c.Spec.Checkpoint.Keep = 3, 1
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{MinReward: "-100", Patience: 1}
	rec := &recorder{}
	rep, tr := run(t, c, Options{Workers: cpuGang(1), Reporter: rec})
	total := tr.plan.TotalSteps()
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps != total {
		t.Fatalf("outcome %s after %d steps, want Completed after the plan's %d: %s", rep.Outcome, rep.Steps, total, rep.Message)
	}
	for _, r := range rec.reports {
		if r.Step != total {
			t.Fatalf("the resumed run reported step %d, want only the resumed %d: it trained again", r.Step, total)
		}
	}
	if got := rec.reports[0].LastCheckpoint; got == nil || got.Path != newest {
		t.Errorf("the first report's checkpoint is %+v, want the resumed %s", got, newest)
	}
}

// A checkpoint of this run whose position is not one of the plan is refused rather
// than counted as progress: the run never reports Succeeded without training its plan.
func TestAPositionOutsideThePlanIsRefused(t *testing.T) {
	c := jobConfig(t, "uid-1", t.TempDir())
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	total := tr.plan.TotalSteps()
	past := State{Epoch: len(tr.plan.Epochs), Step: total}
	if _, err := tr.store.Save(total, past, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, checkpoint.WorkerStateFile), []byte("never loaded"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	msg := refusedRun(t, c).Message
	if !strings.Contains(msg, "is not one of this run's plan") {
		t.Errorf("message %q does not say the position is outside the plan", msg)
	}
}

// A cpu model stored without its cpu section (model: {worker: cpu}) runs the CPU
// policy's defaults: it binds as the model with them written out, and only so.
func TestACPUModelWithoutItsSectionBindsAsItsDefaults(t *testing.T) {
	binding := func(change func(*trainingv1alpha1.ModelSpec)) string {
		c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
		c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCPU}
		change(&c.Spec.Model)
		c.Spec.Default()
		b, err := runBinding(c, &experience.Splits{})
		if err != nil {
			t.Fatal(err)
		}
		return b.Parts["model"]
	}
	bare := binding(func(*trainingv1alpha1.ModelSpec) {})
	if written := binding(func(m *trainingv1alpha1.ModelSpec) { m.CPU = &trainingv1alpha1.CPUPolicySpec{} }); written != bare {
		t.Error("model {worker: cpu} and the same with its cpu defaults written out bind differently")
	}
	if other := binding(func(m *trainingv1alpha1.ModelSpec) { m.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 16} }); other == bare {
		t.Error("hiddenSize 16 binds as the default 32")
	}
}

// TestEveryReportCarriesTheRunsProvenance: every status report holds the run's
// provenance: the operator's part from the run config, the digests that bind its
// checkpoints, the seed and the trainer's version. The same config and data give the
// same provenance; other episodes under the same spec change the datasets digest
// alone, another seed the algorithm digest and the seed.
func TestEveryReportCarriesTheRunsProvenance(t *testing.T) {
	provenanceOf := func(edit func(*Config)) *trainingv1alpha1.RunProvenance {
		c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
		c.Provenance = trainingv1alpha1.RunProvenance{OperatorVersion: "v9 (commit op)", TrainerImage: "espo:v9", WorkerImage: "espo:v9"}
		edit(c)
		rec := &recorder{}
		run(t, c, Options{Workers: cpuGang(1), Reporter: rec, Version: "v9 (commit tr)"})
		first := rec.reports[0].Provenance
		for i, r := range rec.reports {
			if diff := cmp.Diff(first, r.Provenance); diff != "" {
				t.Fatalf("report %d's provenance differs from the first's (-first +report):\n%s", i, diff)
			}
		}
		return first
	}
	base := provenanceOf(func(*Config) {})
	for _, d := range []string{base.Datasets, base.Model, base.Algorithm, base.Rewards} {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(d) {
			t.Errorf("digest %q: want 64 hexadecimal digits", d)
		}
	}
	want := trainingv1alpha1.RunProvenance{Datasets: base.Datasets, Model: base.Model, Algorithm: base.Algorithm, Rewards: base.Rewards,
		Seed: 11, TrainerVersion: "v9 (commit tr)", OperatorVersion: "v9 (commit op)", TrainerImage: "espo:v9", WorkerImage: "espo:v9"}
	if diff := cmp.Diff(&want, base); diff != "" {
		t.Errorf("provenance (-want +got):\n%s", diff)
	}
	if again := provenanceOf(func(*Config) {}); !reflect.DeepEqual(again, base) {
		t.Errorf("the same run again: %+v, want %+v", again, base)
	}
	otherData := provenanceOf(func(c *Config) { c.Spec.Datasets.Sources[0].Synthetic.Seed = 4 })
	if otherData.Datasets == base.Datasets || otherData.Model != base.Model || otherData.Algorithm != base.Algorithm {
		t.Errorf("other episodes: %+v, want only the datasets digest changed from %+v", otherData, base)
	}
	otherSeed := provenanceOf(func(c *Config) { c.Spec.Algorithm.Seed = 12 })
	if otherSeed.Algorithm == base.Algorithm || otherSeed.Seed != 12 || otherSeed.Datasets != base.Datasets {
		t.Errorf("another seed: %+v, want the algorithm digest and the seed changed from %+v", otherSeed, base)
	}
}
