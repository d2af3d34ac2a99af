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
	"fmt"
	"os"
	"path/filepath"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/permanent"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Export is spec.export as the trainer acts on it: where the Hugging Face folder goes
// and what it holds.
type Export struct {
	// Dir is the folder the export replaces, as the pod sees it (the run config's
	// exportDir); Path is the same folder inside the claim, as status names it.
	Dir, Path string
	// Where names the target in errors, as the spec does.
	Where string
	// Merge adds the merged model to a LoRA export.
	Merge bool
	// BestBy is the validation metric (its API name) whose best checkpoint is
	// exported; empty for the final policy.
	BestBy string
}

// resolveExport checks spec.export against the rest of the run config, with the
// rules the API server applies, and returns it; nil without spec.export.
func resolveExport(c *Config) (*Export, error) {
	e := c.Spec.Export
	if e == nil {
		return nil, nil
	}
	const field = "spec.export"
	claim := e.PersistentVolumeClaim
	out := &Export{Dir: c.ExportDir, Path: claim.Path, Merge: e.Merge, BestBy: string(e.BestBy),
		Where: fmt.Sprintf("%s.persistentVolumeClaim (claim %s, path %q)", field, claim.ClaimName, claim.Path)}
	var errs []error
	if c.ExportDir == "" {
		errs = append(errs, fmt.Errorf("%s: the run config has no exportDir, the folder where the claim's path is mounted: run the job through the operator, or set exportDir", field))
	}
	if w := c.Spec.Model.Worker; w != trainingv1alpha1.WorkerCUDA {
		errs = append(errs, fmt.Errorf("%s: it writes the PyTorch worker's model as a Hugging Face folder, and spec.model.worker is %s: set worker: cuda, or remove export", field, w))
	}
	if e.Merge && c.Spec.Model.LoRA == nil {
		errs = append(errs, fmt.Errorf("%s.merge: it merges a LoRA adapter into its base model, and spec.model.lora is unset: set it, or remove merge", field))
	}
	if e.BestBy != "" {
		errs = append(errs, checkBestBy(c))
	}
	return out, errors.Join(errs...)
}

// checkBestBy refuses spec.export.bestBy in a run that keeps no checkpoints or
// evaluates no validation episodes (an environment with validationEpisodes 0); a
// recorded run whose split leaves no validation episode is refused once its
// datasets are loaded (checkValidationForBest).
func checkBestBy(c *Config) error {
	const field = "spec.export.bestBy"
	if c.Spec.Checkpoint == nil || c.CheckpointDir == "" {
		return fmt.Errorf("%s: it exports the best checkpoint, and the run keeps none: set spec.checkpoint, or remove bestBy to export the final policy", field)
	}
	if env := c.Spec.Datasets.Environment; env != nil && env.ValidationEpisodes != nil && *env.ValidationEpisodes == 0 {
		return fmt.Errorf("%s: it compares validation evaluations, and spec.datasets.environment.validationEpisodes is 0: raise it, or remove bestBy", field)
	}
	return nil
}

// checkValidationForBest refuses spec.export.bestBy when the loaded datasets give
// the validation set no episode.
func (t *Trainer) checkValidationForBest() error {
	if ex := t.settings.Export; ex == nil || ex.BestBy == "" || t.cfg.Spec.Datasets.Environment != nil {
		return nil
	}
	if len(t.src.Recorded().Validation) > 0 {
		return nil
	}
	return permanent.ConfigInvalid(errors.New("spec.export.bestBy: it compares validation evaluations, and the split leaves the validation set no episode: " +
		"give spec.datasets.split.validation a larger share, add a source with split: validation, or remove bestBy"))
}

// checkExportWritable makes sure, before any training, that the export's folder can
// be written: it creates the folder's parent and a file in it. A target that cannot
// be written fails the run at once with ConfigInvalid, naming spec.export.
func (t *Trainer) checkExportWritable() error {
	ex := t.settings.Export
	if ex == nil {
		return nil
	}
	parent := filepath.Dir(filepath.Clean(ex.Dir))
	err := os.MkdirAll(parent, 0o755)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(parent, ".espo-export-check-"); err == nil {
			err = errors.Join(f.Close(), os.Remove(f.Name()))
		}
	}
	if err != nil {
		return permanent.InPodPaths(permanent.ConfigInvalid(fmt.Errorf("%s: the export cannot be written: %w; "+
			"let the trainer's user (uid and gid 65532) write the claim, or name another claim or path", ex.Where, err)), t.opts.PodRoot)
	}
	return nil
}

// bestEvaluation is the validation evaluation of the history that scored highest on
// spec.export.bestBy, the earliest of equal scores; false before any.
func (t *Trainer) bestEvaluation() (EvalResult, bool) {
	ex := t.settings.Export
	if ex == nil || ex.BestBy == "" {
		return EvalResult{}, false
	}
	var best EvalResult
	found := false
	for i := range t.state.History {
		r := &t.state.History[i]
		if !found || r.named()[ex.BestBy] > best.named()[ex.BestBy] {
			best, found = *r, true
		}
	}
	return best, found
}

// protectBest keeps the best checkpoint by spec.export.bestBy from pruning.
func (t *Trainer) protectBest() {
	if best, ok := t.bestEvaluation(); ok && t.store != nil {
		t.store.Protect(best.Step)
	}
}

// loadBest loads the best checkpoint by spec.export.bestBy into the workers, when
// it is not the current policy, so that the test evaluation and the export are of
// it. It returns the step of the policy the workers then hold.
func (t *Trainer) loadBest(ctx context.Context) (int64, error) {
	best, ok := t.bestEvaluation()
	if !ok || best.Step == t.state.Step {
		return t.state.Step, nil
	}
	c, err := t.store.At(best.Step)
	if err != nil {
		return 0, fmt.Errorf("spec.export.bestBy: loading the best checkpoint by %s: %w", t.settings.Export.BestBy, err)
	}
	setup := worker.Setup{Seed: t.settings.Seed, Options: t.settings.WorkerOptions, LoadPath: filepath.Join(c.Dir, checkpoint.WorkerStateFile)}
	if _, err := t.opts.Workers.Configure(ctx, setup); err != nil {
		return 0, fmt.Errorf("spec.export.bestBy: loading the best checkpoint (step %d): %w", best.Step, err)
	}
	t.opts.Log.Info("loaded the best checkpoint for the test evaluation and the export", "step", best.Step,
		"metric", t.settings.Export.BestBy, "value", best.named()[t.settings.Export.BestBy], "finalStep", t.state.Step)
	return best.Step, nil
}

// export writes the policy the workers hold as spec.export's Hugging Face folder
// and records it in the status.
func (t *Trainer) export(ctx context.Context) error {
	ex := t.settings.Export
	out, err := t.opts.Workers.Export(ctx, ex.Dir, ex.Merge)
	if err != nil {
		return fmt.Errorf("%s: exporting the trained policy: %w", ex.Where, err)
	}
	now := t.now()
	st := &trainingv1alpha1.ExportStatus{Path: ex.Path, Kind: trainingv1alpha1.ExportKind(out.Kind), Merged: out.Merged,
		Step: out.Step, Files: out.Files, Time: &now}
	if best, ok := t.bestEvaluation(); ok {
		st.Metric, st.Value = trainingv1alpha1.EvalMetric(ex.BestBy), trainingv1alpha1.NewMetric(best.named()[ex.BestBy])
	}
	t.status.Export = st
	t.opts.Log.Info("exported the trained policy", "dir", ex.Dir, "kind", out.Kind, "merged", out.Merged, "step", out.Step, "files", out.Files)
	return nil
}
