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
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// samplerShift is d = logp_policy - logp_sampler of token t of every sampled answer
// of an engineWorker: importance weights e^1.2 = 3.3, above the default cap of 2,
// e^0.1 and e^-0.3.
func samplerShift(t int) float64 { return []float64{1.2, 0.1, -0.3}[t%3] }

// engineWorker stands for a PyTorch worker whose answers a vLLM engine samples: a CPU
// worker whose samples carry sampler log-probs logp - samplerShift(t) (none with
// omit). It notes the options of every Configure call, passing on only those the
// CPU policy knows, and the token weights of every reinforcement Backward call.
type engineWorker struct {
	worker.Member
	omit bool

	mu       sync.Mutex
	options  []map[string]string
	weighted [][]worker.Weighted
}

func (w *engineWorker) Configure(ctx context.Context, s worker.Setup) (worker.Description, error) {
	w.mu.Lock()
	w.options = append(w.options, maps.Clone(s.Options))
	w.mu.Unlock()
	s.Options = maps.Clone(s.Options)
	for k := range s.Options {
		if k == "pretrained" || k == "rollout_engine" || strings.HasPrefix(k, "vllm_") {
			delete(s.Options, k)
		}
	}
	return w.Member.Configure(ctx, s)
}

func (w *engineWorker) Generate(ctx context.Context, ps []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	cs, err := w.Member.Generate(ctx, ps, o)
	if w.omit {
		return cs, err
	}
	for _, c := range cs {
		for g, s := range c {
			c[g].SamplerLogProbs = make([]float64, len(s.LogProbs))
			for t, lp := range s.LogProbs {
				c[g].SamplerLogProbs[t] = lp - samplerShift(t)
			}
		}
	}
	return cs, err
}

func (w *engineWorker) Backward(ctx context.Context, items []worker.Weighted) (worker.Backwarded, error) {
	if len(items) > 0 && items[0].TokenWeights != nil {
		w.mu.Lock()
		w.weighted = append(w.weighted, slices.Clone(items))
		for i := range items {
			w.weighted[len(w.weighted)-1][i].TokenWeights = slices.Clone(items[i].TokenWeights)
		}
		w.mu.Unlock()
	}
	return w.Member.Backward(ctx, items)
}

// engineConfig is smallConfig with the PyTorch worker and the vllm engine (every
// rollout setting set), the sampler correction's cap as given ("" for the default).
func engineConfig(t *testing.T, cap trainingv1alpha1.Decimal) *Config {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	eager := true
	c.Spec.Model.Worker, c.Spec.Model.Pretrained = trainingv1alpha1.WorkerCUDA, "Qwen2.5-VL-3B-Instruct"
	c.Spec.Model.Rollout = &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, GPUMemoryUtilization: "0.25",
		MaxModelLen: 8192, EnforceEager: &eager, CPUKVCacheGiB: 2}
	if cap != "" {
		c.Spec.Algorithm.SamplerCorrection = &trainingv1alpha1.SamplerCorrectionSpec{Cap: cap}
	}
	return c
}

// engineRun is what a run on one engineWorker gives.
type engineRun struct {
	w       *engineWorker
	reports []*trainingv1alpha1.TrainingStatus
	gauges  map[string]float64
}

// runEngine runs c to its end on w, with the trainer's metrics registered.
func runEngine(t *testing.T, c *Config, w *engineWorker) engineRun {
	t.Helper()
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	rep, _ := run(t, c, Options{Workers: worker.NewGang(w), Reporter: rec, Metrics: NewMetrics(reg)})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauges := map[string]float64{}
	for _, f := range families {
		if g := f.GetMetric()[0].GetGauge(); g != nil {
			gauges[f.GetName()] = g.GetValue()
		}
	}
	return engineRun{w: w, reports: rec.reports, gauges: gauges}
}

// TestSamplerLogProbsReachTheLoss: a worker that samples with an engine (its samples
// carry sampler log-probs) has the loss weights of its answers' tokens multiplied by
// min(e^(logp - logp_sampler), cap): with the default cap of the vllm engine, 2,
// every weight of the first reinforcement step is its weight with the correction
// off (cap "0") times that, and with the correction off they are exactly those of a
// worker that reports no sampler log-probs. Every run reports the mismatch, the mean
// |logp - logp_sampler| of its last step, in status.training.samplerMismatch and the
// gauges espo_trainer_sampler_logprob_mismatch and _truncated_fraction; the worker
// gets the rollout settings as Configure options.
func TestSamplerLogProbsReachTheLoss(t *testing.T) {
	on := runEngine(t, engineConfig(t, ""), &engineWorker{Member: cpuMembers(1)[0]})
	off := runEngine(t, engineConfig(t, "0"), &engineWorker{Member: cpuMembers(1)[0]})
	plainConfig := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	plain := runEngine(t, plainConfig, &engineWorker{Member: cpuMembers(1)[0], omit: true})

	wantOptions := map[string]string{"rollout_engine": "vllm", "vllm_gpu_memory_utilization": "0.25", "vllm_max_model_len": "8192",
		"vllm_enforce_eager": "true", "vllm_cpu_kv_cache_gib": "2"}
	for k, v := range wantOptions {
		if got := on.w.options[0][k]; got != v {
			t.Errorf("Configure option %s = %q, want %q (all: %v)", k, got, v, on.w.options[0])
		}
	}
	for k := range plain.w.options[0] {
		if k == "rollout_engine" || strings.HasPrefix(k, "vllm_") {
			t.Errorf("the CPU policy's job sent the option %s", k)
		}
	}

	if len(on.w.weighted) == 0 || len(on.w.weighted) != len(off.w.weighted) {
		t.Fatalf("%d and %d reinforcement steps", len(on.w.weighted), len(off.w.weighted))
	}
	first, firstOff, firstPlain := on.w.weighted[0], off.w.weighted[0], plain.w.weighted[0]
	truncated, tokens := 0, 0
	for i, it := range first {
		if it.Answer.Text != firstOff[i].Answer.Text || len(it.TokenWeights) != len(firstOff[i].TokenWeights) {
			t.Fatalf("answer %d differs between the runs before their first reinforcement step", i)
		}
		if !slices.Equal(firstOff[i].TokenWeights, firstPlain[i].TokenWeights) {
			t.Errorf("answer %d: weights %v with the correction off, %v without sampler log-probs; want them equal",
				i, firstOff[i].TokenWeights, firstPlain[i].TokenWeights)
		}
		for k, w := range it.TokenWeights {
			is := math.Min(math.Exp(samplerShift(k)), 2)
			if is == 2 {
				truncated++
			}
			tokens++
			if want := is * firstOff[i].TokenWeights[k]; math.Abs(w-want) > 1e-12*math.Abs(want) {
				t.Errorf("answer %d, token %d: weight %v, want %v times the uncorrected %v", i, k, w, is, firstOff[i].TokenWeights[k])
			}
		}
	}
	if truncated == 0 || tokens == truncated {
		t.Fatalf("%d of %d tokens truncated: the answers do not reach both sides of the cap", truncated, tokens)
	}

	for name, r := range map[string]engineRun{"cap 2": on, "cap 0": off} {
		mismatch, cutFrac := lastStepFigures(r.w, 2)
		last := r.reports[len(r.reports)-1]
		if last.SamplerMismatch != trainingv1alpha1.NewMetric(mismatch) {
			t.Errorf("%s: status.training.samplerMismatch %q, want %q", name, last.SamplerMismatch, trainingv1alpha1.NewMetric(mismatch))
		}
		if got := r.gauges["espo_trainer_sampler_logprob_mismatch"]; math.Abs(got-mismatch) > 1e-12 {
			t.Errorf("%s: espo_trainer_sampler_logprob_mismatch %v, want %v", name, got, mismatch)
		}
		if name == "cap 0" {
			cutFrac = 0 // nothing is truncated with the correction off
		}
		if got := r.gauges["espo_trainer_sampler_truncated_fraction"]; math.Abs(got-cutFrac) > 1e-12 {
			t.Errorf("%s: espo_trainer_sampler_truncated_fraction %v, want %v", name, got, cutFrac)
		}
	}
	if last := plain.reports[len(plain.reports)-1]; last.SamplerMismatch != "" || plain.gauges["espo_trainer_sampler_logprob_mismatch"] != 0 {
		t.Errorf("without sampler log-probs: status %q, gauge %v; want neither", last.SamplerMismatch, plain.gauges["espo_trainer_sampler_logprob_mismatch"])
	}
}

// lastStepFigures returns the mean |samplerShift| over the tokens of w's last
// reinforcement step, and the fraction of them whose weight e^samplerShift is
// above isCap.
func lastStepFigures(w *engineWorker, isCap float64) (mismatch, truncated float64) {
	n := 0
	for _, it := range w.weighted[len(w.weighted)-1] {
		for k := range it.TokenWeights {
			mismatch += math.Abs(samplerShift(k))
			if math.Exp(samplerShift(k)) > isCap {
				truncated++
			}
			n++
		}
	}
	return mismatch / float64(n), truncated / float64(n)
}

// runFails runs c on the gang and returns the error the run ends with.
func runFails(t *testing.T, c *Config, gang *worker.Gang) error {
	t.Helper()
	tr, err := newTrainer(c, Options{Workers: gang, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background())
	if err == nil {
		t.Fatal("the run succeeded")
	}
	return err
}

// TestSamplerLogProbsThatDoNotFitFailTheStep: a vllm job whose worker reports no
// sampler log-probs, and a gang where one worker reports them and the other does
// not, fail the first reinforcement step, naming the problem and an answer.
func TestSamplerLogProbsThatDoNotFitFailTheStep(t *testing.T) {
	err := runFails(t, engineConfig(t, ""), worker.NewGang(&engineWorker{Member: cpuMembers(1)[0], omit: true}))
	if !strings.Contains(err.Error(), "spec.model.rollout.engine is vllm, but no answer of the batch carries the engine's log-probs") {
		t.Errorf("no sampler log-probs with vllm: %v", err)
	}
	ms := cpuMembers(2)
	err = runFails(t, engineConfig(t, ""), worker.NewGang(&engineWorker{Member: ms[0]}, &engineWorker{Member: ms[1], omit: true}))
	if !strings.Contains(err.Error(), "carries the sampling engine's log-probs and the answer of episode") ||
		!strings.Contains(err.Error(), "every answer of a batch must, or none") {
		t.Errorf("sampler log-probs from one worker of two: %v", err)
	}
}

// TestSamplerLogProbsOfAnAnswer: samplerLogProbs lays the sampler log-probs out as
// lossBackward lays out the tokens, lets an answer without tokens go either way, and
// names the answer whose sampler log-probs do not fit.
func TestSamplerLogProbsOfAnAnswer(t *testing.T) {
	ep := &dataset.Episode{ID: "food-7"}
	g := &group{Group: &experience.Group{Episode: ep, Steps: []int{4, 5}, Prompts: make([]worker.Prompt, 2), Samples: []worker.Sample{
		{LogProbs: []float64{-1, -2}, SamplerLogProbs: []float64{-1.5, -2.5}},
		{},
		{LogProbs: []float64{-3}, SamplerLogProbs: []float64{-3.5}},
		{LogProbs: []float64{-4, -5, -6}, SamplerLogProbs: []float64{-4.5, -5.5, -6.5}},
	}}}
	got, err := samplerLogProbs([]*group{g})
	if err != nil || !slices.Equal(got, []float64{-1.5, -2.5, -3.5, -4.5, -5.5, -6.5}) {
		t.Errorf("samplerLogProbs = %v, %v", got, err)
	}
	g.Samples[3].SamplerLogProbs = g.Samples[3].SamplerLogProbs[:2]
	if _, err := samplerLogProbs([]*group{g}); err == nil || !strings.Contains(err.Error(), "the answer of episode "+ep.ID+", step 5, candidate 1 has 2 sampler log-probs for its 3 tokens") {
		t.Errorf("a short answer: %v", err)
	}
	g.Samples[3].SamplerLogProbs = nil
	if _, err := samplerLogProbs([]*group{g}); err == nil || !strings.Contains(err.Error(), "step 4, candidate 0 carries the sampling engine's log-probs and the answer of episode "+ep.ID+", step 5, candidate 1 does not") {
		t.Errorf("an answer without: %v", err)
	}
	for i := range g.Samples {
		g.Samples[i].SamplerLogProbs = nil
	}
	if got, err := samplerLogProbs([]*group{g}); got != nil || err != nil {
		t.Errorf("no sampler log-probs: %v, %v; want nil", got, err)
	}
}
