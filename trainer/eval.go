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
	"fmt"
	"path/filepath"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/checkpoint"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/metrics"
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// EvalResult holds the metrics of one evaluation, as fractions in [0, 1].
type EvalResult struct {
	Split string `json:"split"`
	// Stage and Epoch name the epoch after which the evaluation ran; Step is the
	// number of optimizer steps taken by then.
	Stage                  plan.Kind `json:"stage,omitempty"`
	Epoch                  int       `json:"epoch,omitempty"`
	Step                   int64     `json:"step"`
	Episodes               int       `json:"episodes"`
	Steps                  int       `json:"steps"`
	GUITypeAccuracy        float64   `json:"guiTypeAccuracy"`
	ElementAccuracy        float64   `json:"elementAccuracy"`
	OperationF1            float64   `json:"operationF1"`
	StepSuccessRate        float64   `json:"stepSuccessRate"`
	IntentAccuracy         float64   `json:"intentAccuracy"`
	RecommendationAccuracy float64   `json:"recommendationAccuracy"`
	FormatRate             float64   `json:"formatRate"`
	// IntentMatch is how the intents were judged (status.training.intentMatch):
	// "slots", "embedding", "embedding-service", or "slots+" one of the others.
	IntentMatch string `json:"intentMatch,omitempty"`
	// Report is the evaluator's full report: per stage and per channel.
	Report *metrics.Report `json:"report,omitempty"`
}

// summary returns r without the full per-channel report.
func (r *EvalResult) summary() EvalResult {
	c := *r
	c.Report = nil
	return c
}

// named returns the metrics by their API names (spec.earlyStopping.target.metric).
func (r *EvalResult) named() map[string]float64 {
	return map[string]float64{
		string(trainingv1alpha1.MetricGUITypeAccuracy):        r.GUITypeAccuracy,
		string(trainingv1alpha1.MetricElementAccuracy):        r.ElementAccuracy,
		string(trainingv1alpha1.MetricOperationF1):            r.OperationF1,
		string(trainingv1alpha1.MetricStepSuccessRate):        r.StepSuccessRate,
		string(trainingv1alpha1.MetricIntentAccuracy):         r.IntentAccuracy,
		string(trainingv1alpha1.MetricRecommendationAccuracy): r.RecommendationAccuracy,
		string(trainingv1alpha1.MetricFormatRate):             r.FormatRate,
	}
}

// status returns r in the form of status.training.evaluation.
func (r *EvalResult) status() *trainingv1alpha1.EvaluationStatus {
	return &trainingv1alpha1.EvaluationStatus{
		Split:                  trainingv1alpha1.EvaluationSplit(r.Split),
		GUITypeAccuracy:        trainingv1alpha1.NewMetric(r.GUITypeAccuracy),
		ElementAccuracy:        trainingv1alpha1.NewMetric(r.ElementAccuracy),
		OperationF1:            trainingv1alpha1.NewMetric(r.OperationF1),
		StepSuccessRate:        trainingv1alpha1.NewMetric(r.StepSuccessRate),
		IntentAccuracy:         trainingv1alpha1.NewMetric(r.IntentAccuracy),
		RecommendationAccuracy: trainingv1alpha1.NewMetric(r.RecommendationAccuracy),
		FormatRate:             trainingv1alpha1.NewMetric(r.FormatRate),
	}
}

// EvaluateAnswers scores answers[e][j], the answer to step j of episode e, with the
// SmartSpot metrics, judging intents as the run's rewards do. With an embedding
// service (or the workers' encoder), the intents of the answers are embedded before
// they are scored.
func (t *Trainer) EvaluateAnswers(ctx context.Context, split string, eps []dataset.Episode, answers [][]string) (*EvalResult, error) {
	if err := t.intents.PrefetchEvaluation(ctx, eps, answers); err != nil {
		return nil, err
	}
	defer t.intents.Release()
	ev := metrics.NewEvaluator(metrics.Options{Tau: t.settings.Rewards.Tau, TextF1: t.settings.Rewards.TextF1, Embedder: t.intents.Embedder(),
		Match: t.settings.Rewards.Match, Slots: t.src.Vocab()})
	for e := range eps {
		if err := ev.Add(&eps[e], answers[e]); err != nil {
			return nil, err
		}
	}
	r := evalResult(split, len(eps), ev.Report())
	r.IntentMatch = t.intents.Match(eps)
	return r, nil
}

// EvaluationEpisodes returns the episodes of split ("validation" or "test") with the
// policy's greedy answer to each step: the recorded episodes, answered on their
// recorded histories, or, in an environment, the split's held-out episodes lived
// through (their answers the references the policy is judged against).
func (t *Trainer) EvaluationEpisodes(ctx context.Context, split string) ([]dataset.Episode, [][]string, error) {
	return t.src.Evaluation(ctx, split)
}

// evaluationSplit lives through (or replays) split's episodes and scores the
// policy's greedy answers; nil without episodes of that split.
func (t *Trainer) evaluationSplit(ctx context.Context, split string) (*EvalResult, error) {
	eps, answers, err := t.src.Evaluation(ctx, split)
	if err != nil {
		return nil, fmt.Errorf("evaluating the %s split: %w", split, err)
	}
	if len(eps) == 0 {
		return nil, nil
	}
	return t.EvaluateAnswers(ctx, split, eps, answers)
}

// evaluateEpoch evaluates on the validation split after an epoch, reports, and applies
// early stopping; it stops the loop on an early stop or a failure. A drain stops the
// evaluation at once.
func (t *Trainer) evaluateEpoch(ctx context.Context, ep *plan.Epoch) (stop, bool) {
	evalCtx, cancel := t.untilDrained(ctx)
	r, err := t.evaluationSplit(evalCtx, "validation")
	cancel()
	if err != nil {
		return t.failed(err), true
	}
	if r == nil {
		return stop{}, false
	}
	r.Stage, r.Epoch, r.Step = ep.Kind, ep.Number, t.state.Step
	t.state.History = append(t.state.History, r.summary())
	t.protectBest()
	if r.RecommendationAccuracy > t.state.BestRecommendationAccuracy {
		t.state.BestRecommendationAccuracy = r.RecommendationAccuracy
	}
	t.publishEval(ctx, ep, r)
	return t.earlyStop(ep, r)
}

// publishEval logs, records and reports an evaluation.
func (t *Trainer) publishEval(ctx context.Context, ep *plan.Epoch, r *EvalResult) {
	st := r.status()
	now := t.now()
	st.Epoch, st.Step, st.Time = int32(ep.Number), r.Step, &now
	t.status.Evaluation = st
	t.status.IntentMatch = r.IntentMatch
	if t.state.BestRecommendationAccuracy >= 0 {
		t.status.BestRecommendationAccuracy = trainingv1alpha1.NewMetric(t.state.BestRecommendationAccuracy)
	}
	t.opts.Metrics.observeEval(r.Split, r.named())
	t.trackEval(r)
	t.opts.Log.Info("evaluation", "split", r.Split, "stage", ep.Kind, "epoch", ep.Number, "step", r.Step,
		"guiTypeAccuracy", percent(r.GUITypeAccuracy), "elementAccuracy", percent(r.ElementAccuracy),
		"operationF1", percent(r.OperationF1), "stepSuccessRate", percent(r.StepSuccessRate),
		"intentAccuracy", percent(r.IntentAccuracy), "recommendationAccuracy", percent(r.RecommendationAccuracy),
		"formatRate", percent(r.FormatRate), "intentMatch", r.IntentMatch)
	t.report(ctx)
}

// earlyStop applies spec.earlyStopping to a validation result. Each condition keeps
// its own count of evaluations in a row for which it held, and acts once the count
// reaches patience: the target on every validation evaluation (the SFT cold start's
// included), minReward only after epochs that sample candidates (SFT has no rewards;
// its evaluations neither count nor break the count). The counts are part of the
// checkpointed State, so a resumed run keeps them.
func (t *Trainer) earlyStop(ep *plan.Epoch, r *EvalResult) (stop, bool) {
	es := t.settings.EarlyStopping
	if es == nil {
		return stop{}, false
	}
	if target := es.Target; target != nil {
		v := r.named()[es.TargetMetric]
		if countInARow(&t.state.TargetEvals, v >= target.Value) >= es.Patience {
			return stop{reason: stopTargetReached, message: fmt.Sprintf("%s %.3f reached the target %s at step %d%s",
				es.TargetMetric, v, target.Written, t.state.Step, inARow(t.state.TargetEvals))}, true
		}
	}
	if es.MinReward == nil || ep.Kind == plan.SFT {
		return stop{}, false
	}
	mean := t.epochReward.mean()
	if countInARow(&t.state.LowRewardEvals, mean < es.MinReward.Value) >= es.Patience {
		return stop{reason: stopRewardCollapsed, message: fmt.Sprintf("the mean step reward %.3f was below %s%s",
			mean, es.MinReward.Written, inARow(t.state.LowRewardEvals))}, true
	}
	return stop{}, false
}

// countInARow adds one to *n when held, resets it to 0 otherwise, and returns it.
func countInARow(n *int, held bool) int {
	if held {
		*n++
	} else {
		*n = 0
	}
	return *n
}

// inARow is the end of a stop message that says for how many evaluations in a row
// the condition held: nothing for one.
func inARow(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(", %d evaluations in a row", n)
}

// finish evaluates on the test split, exports a run that succeeded (spec.export: the
// best checkpoint, loaded before the test evaluation, or the final policy), writes
// the final report and reports the outcome of a run that ended as s.
func (t *Trainer) finish(ctx context.Context, s stop) (*Report, error) {
	rep := &Report{Outcome: s.outcome(), Message: s.message, Steps: t.state.Step, Validation: t.state.History,
		BestRecommendationAccuracy: max(t.state.BestRecommendationAccuracy, 0)}
	exporting := t.settings.Export != nil && (s.reason == stopCompleted || s.reason == stopTargetReached)
	policyStep := t.state.Step
	if exporting {
		var err error
		if policyStep, err = t.loadBest(ctx); err != nil {
			return nil, t.fail(ctx, err)
		}
	}
	if s.reason != stopNonFiniteLoss {
		if err := t.test(ctx, rep, policyStep); err != nil {
			return nil, t.fail(ctx, err)
		}
	}
	if exporting {
		if err := t.export(ctx); err != nil {
			return nil, t.fail(ctx, err)
		}
	}
	t.reportEnd(ctx, s)
	rep.Status = t.status.DeepCopy()
	rep.IntentMatch = t.status.IntentMatch
	if err := writeReport(t.cfg.OutputDir, rep); err != nil {
		return nil, fmt.Errorf("writing the final report: %w", err)
	}
	t.opts.Log.Info("training finished", "outcome", rep.Outcome, "message", s.message, "steps", t.state.Step)
	return rep, nil
}

// test evaluates the workers' policy, of step policyStep, on the test split, when the
// run has one, into rep and the status.
func (t *Trainer) test(ctx context.Context, rep *Report, policyStep int64) error {
	r, err := t.evaluationSplit(ctx, "test")
	if err != nil || r == nil {
		return err
	}
	r.Step = policyStep
	rep.Test = r
	last := &t.plan.Epochs[len(t.plan.Epochs)-1]
	if t.state.Epoch < len(t.plan.Epochs) {
		last = &t.plan.Epochs[t.state.Epoch]
	}
	t.status.Stage = trainingv1alpha1.StageEval
	t.publishEval(ctx, last, r)
	return nil
}

// evalResult condenses an evaluator's report into the status metrics: the GUI type
// accuracy is the type accuracy over GUI steps; the others are micro averages over
// their own steps.
func evalResult(split string, episodes int, r metrics.Report) *EvalResult {
	m := r.Micro
	return &EvalResult{
		Split: split, Episodes: episodes, Steps: m.Steps,
		GUITypeAccuracy:        r.ByStage[string(dataset.StageGUI)].TypeAcc,
		ElementAccuracy:        m.EleAcc,
		OperationF1:            m.OpF1,
		StepSuccessRate:        m.StepSR,
		IntentAccuracy:         m.IntentAcc,
		RecommendationAccuracy: m.RecAcc,
		FormatRate:             m.FormatRate,
		Report:                 &r,
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
	t.trackExport(st)
	t.opts.Log.Info("exported the trained policy", "dir", ex.Dir, "kind", out.Kind, "merged", out.Merged, "step", out.Step, "files", out.Files)
	return nil
}

// trackEval hands the tracker an evaluation's metrics.
func (t *Trainer) trackEval(r *EvalResult) {
	if tr := t.opts.Tracker; tr != nil {
		tr.Log(evalPoints(r.Split, r.Step, r.named(), t.opts.Clock.Now())...)
	}
}

// trackExport tags the trackers' run with where the exported model lives.
func (t *Trainer) trackExport(st *trainingv1alpha1.ExportStatus) {
	if tr := t.opts.Tracker; tr != nil && st != nil && t.cfg.Spec.Export != nil {
		tr.Tags(exportTags(t.cfg.Spec.Export, st))
	}
}
