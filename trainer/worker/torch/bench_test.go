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

package torch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// benchSettings size the step benchmark; each comes from $ESPO_BENCH_<NAME> when set.
type benchSettings struct {
	Hidden, Layers int // the random Qwen3 (tests/random_models.py)
	Prompts        int // prompts per optimizer step: the steps of the one episode each batch holds
	G              int // candidates per prompt
	Tokens         int // answer length: max new tokens, which the primed model fills
	Steps          int // optimizer steps per side, the first a warm-up
	Threads        int // torch threads of each side (OMP_NUM_THREADS and torch.set_num_threads)
	LR             string
	PrimeSteps     int
}

func benchSettingsFromEnv(b *testing.B) benchSettings {
	s := benchSettings{Hidden: 256, Layers: 2, Prompts: 12, G: 4, Tokens: 64, Steps: 5, Threads: 2, LR: "1e-5", PrimeSteps: 200}
	for name, p := range map[string]*int{"HIDDEN": &s.Hidden, "LAYERS": &s.Layers, "PROMPTS": &s.Prompts, "G": &s.G,
		"TOKENS": &s.Tokens, "STEPS": &s.Steps, "THREADS": &s.Threads, "PRIME_STEPS": &s.PrimeSteps} {
		if v := os.Getenv("ESPO_BENCH_" + name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				b.Fatalf("ESPO_BENCH_%s=%q: want a positive integer", name, v)
			}
			*p = n
		}
	}
	if v := os.Getenv("ESPO_BENCH_LR"); v != "" {
		s.LR = v
	}
	if s.Steps < 2 || s.G < 2 {
		b.Fatalf("ESPO_BENCH_STEPS %d and ESPO_BENCH_G %d: want at least 2 each (one warm-up step, then measured ones)", s.Steps, s.G)
	}
	return s
}

// BenchmarkESPOStepBesideTRL times one ESPO optimizer step of the Go trainer driving
// the PyTorch worker over gRPC beside one optimizer step of TRL's GRPOTrainer, on CPU,
// on the same model, prompts, G, answer length, learning rate and optimizer, with the
// same torch thread count; it prints a table and reports espo-step-s, trl-step-s
// (medians after a warm-up step), trl-reward-s (the TRL reward function's own time per
// step), outside-worker-% (the share of the ESPO step the worker is not busy: Go core
// plus protocol) and protocol-% (the share inside the worker calls as the trainer sees
// them but outside the worker's own time). It runs once whatever b.N; run it with
//
//	go test ./trainer/worker/torch/ -run '^$' -bench BenchmarkESPOStepBesideTRL -benchtime 1x -timeout 30m
//
// docs/worker-protocol.md, "Step time beside TRL", says what each side runs and what
// the figures mean.
func BenchmarkESPOStepBesideTRL(b *testing.B) {
	s := benchSettingsFromEnv(b)
	loadStart := loadAverage()
	dir := b.TempDir()
	ep := benchEpisode(b, s.Prompts)
	model, data := filepath.Join(dir, "model"), filepath.Join(dir, "bench.json")
	writeBenchData(b, data, ep, s)
	var primed struct {
		Seconds   float64 `json:"seconds"`
		LossFirst float64 `json:"loss_first"`
		LossLast  float64 `json:"loss_last"`
		ParseRate float64 `json:"parse_rate"`
	}
	benchPython(b, s, nil, "-m", "tests.random_models", model, "--arch", "qwen3",
		"--hidden", strconv.Itoa(s.Hidden), "--layers", strconv.Itoa(s.Layers))
	benchJSON(b, benchPython(b, s, nil, "-m", "bench.prime", model, data, "--steps", strconv.Itoa(s.PrimeSteps)), &primed)

	espoSide := runESPOSide(b, s, dir, model, ep)
	var trl trlResult
	benchJSON(b, benchPython(b, s, nil, "-m", "bench.trl_step", "--model", model, "--data", data,
		"--lr", s.LR, "--threads", strconv.Itoa(s.Threads), "--espo-state", espoSide.state), &trl)

	e, t := espoSide.measured(), trl.Steps[1:]
	espoSecs, trlSecs := median(e, func(x espoStep) float64 { return x.Seconds }), median(t, func(x trlStep) float64 { return x.Seconds })
	worker := median(e, func(x espoStep) float64 { return x.WorkerSeconds })
	client := median(e, func(x espoStep) float64 { return x.ClientSeconds })
	outside := median(e, func(x espoStep) float64 { return (x.Seconds - x.WorkerSeconds) / x.Seconds })
	protocol := median(e, func(x espoStep) float64 { return (x.ClientSeconds - x.WorkerSeconds) / x.Seconds })
	reward := median(t, func(x trlStep) float64 { return x.RewardSeconds })
	espoTokens := median(e, func(x espoStep) float64 { return float64(x.GeneratedTokens) })
	trlTokens := median(t, func(x trlStep) float64 { return float64(x.CompletionTokens) })

	w := &bytes.Buffer{}
	fmt.Fprintf(w, "\nstep time beside TRL: random Qwen3, hidden %d, %d layers, %d parameters; %d prompts x G %d = %d candidates "+
		"of %d tokens per step; lr %s; %d torch threads a side (espo worker %d, TRL %d); %d steps a side, the first a warm-up\n",
		s.Hidden, s.Layers, trl.Parameters, s.Prompts, s.G, s.Prompts*s.G, s.Tokens, s.LR, s.Threads, espoSide.threads,
		trl.Threads, s.Steps)
	fmt.Fprintf(w, "machine: %d CPUs, load average (1 min) %s at the start, %s at the end: other work on the machine slows "+
		"both sides\n", runtime.NumCPU(), loadStart, loadAverage())
	fmt.Fprintf(w, "primed: %d steps in %.1fs, loss %.3f -> %.3f, %.0f%% of sampled answers parse\n",
		s.PrimeSteps, primed.Seconds, primed.LossFirst, primed.LossLast, 100*primed.ParseRate)
	fmt.Fprintf(w, "\n%-38s %14s %14s\n", "per optimizer step (median)", "ESPO (ours)", "TRL GRPO")
	row := func(name, a, b string) { fmt.Fprintf(w, "%-38s %14s %14s\n", name, a, b) }
	call := func(name string) float64 { return median(e, func(x espoStep) float64 { return x.Calls[name] }) }
	row("step seconds", f3(espoSecs), f3(trlSecs))
	row("  sampling (Generate; _generate)", f3(call("Generate")), f3(median(t, func(x trlStep) float64 { return x.GenerateSeconds })))
	row("  reference log-probs", f3(call("LogProbs")), f3(median(t, func(x trlStep) float64 { return x.ReferenceSeconds })))
	row("  loss forward+backward (Backward)", f3(call("Backward")), "-")
	row("  optimizer step (Step)", f3(call("Step")), "-")
	row("  loss, backward, optimizer, rest", "-", f3(median(t, func(x trlStep) float64 { return x.Seconds - x.GenerateSeconds - x.ReferenceSeconds })))
	row("  outside the worker: Go + protocol", f3(median(e, func(x espoStep) float64 { return x.Seconds - x.WorkerSeconds })), "-")
	row("  the reward function", "(in Go)", f4(reward))
	row("worker busy", f3(worker), "-")
	row("worker calls as the trainer saw them", f3(client), "-")
	row("share outside the worker", pct(outside), "-")
	row("  of which protocol", pct(protocol), "-")
	row("prompts", strconv.Itoa(espoSide.prompts), strconv.Itoa(trl.Prompts))
	row("candidates", strconv.Itoa(espoSide.candidates), strconv.Itoa(trl.Candidates))
	row("prompt tokens", strconv.Itoa(trl.PromptTokens), strconv.Itoa(trl.PromptTokens))
	row("  encoded per pass over the candidates", strconv.Itoa(trl.PromptTokens)+" once", strconv.Itoa(trl.PaddedTokens)+" padded")
	row("generated tokens", f0(espoTokens), f0(trlTokens))
	row("ms per generated token", f3(1000*espoSecs/espoTokens), f3(1000*trlSecs/trlTokens))
	row("mean reward", f3(median(e, func(x espoStep) float64 { return x.MeanReward })), f3(median(t, func(x trlStep) float64 { return x.MeanReward })))
	row("gradient norm / loss", f3(median(e, func(x espoStep) float64 { return x.GradNorm })), f3(median(t, func(x trlStep) float64 { return x.Loss })))
	row("parameters moved, |dθ|/|θ|", fmt.Sprintf("%.2e", trl.ESPOParamChange), fmt.Sprintf("%.2e", trl.TRLParamChange))
	fmt.Fprintf(w, "\nper step, ESPO: seconds, worker seconds, tokens, grad norm:")
	for _, x := range espoSide.steps {
		fmt.Fprintf(w, " [%.2f %.2f %d %.3g]", x.Seconds, x.WorkerSeconds, x.GeneratedTokens, x.GradNorm)
	}
	fmt.Fprintf(w, "\nper step, TRL: seconds, reward seconds, tokens, loss:")
	for _, x := range trl.Steps {
		fmt.Fprintf(w, " [%.2f %.4f %d %.3g]", x.Seconds, x.RewardSeconds, x.CompletionTokens, x.Loss)
	}
	fmt.Fprintln(w)
	err := benchValid(s, espoSide, trl)
	full := s.Prompts * s.G * s.Tokens
	fmt.Fprintf(w, "validity: %s; every step's answers of %d tokens (%d a step): ESPO %v, TRL %v\n",
		map[bool]string{true: "both sides trained (gradient, loss and parameters finite and moving), same prompts, " +
			"candidates, prompt token ids and thread count", false: "NOT VALID"}[err == nil], s.Tokens, full,
		!slices.ContainsFunc(espoSide.steps, func(x espoStep) bool { return x.GeneratedTokens != full }),
		!slices.ContainsFunc(trl.Steps, func(x trlStep) bool { return x.CompletionTokens != full }))
	fmt.Print(w.String())
	if err != nil {
		b.Fatalf("the comparison is not valid: %v", err)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(espoSecs, "espo-step-s")
	b.ReportMetric(trlSecs, "trl-step-s")
	b.ReportMetric(reward, "trl-reward-s")
	b.ReportMetric(100*outside, "outside-worker-%")
	b.ReportMetric(100*protocol, "protocol-%")
}

// loadAverage returns the 1-minute load average of /proc/loadavg, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := bytes.Fields(b); err == nil && len(f) > 0 {
		return string(f[0])
	}
	return "?"
}

func f3(x float64) string  { return strconv.FormatFloat(x, 'f', 3, 64) }
func f4(x float64) string  { return strconv.FormatFloat(x, 'f', 4, 64) }
func f0(x float64) string  { return strconv.FormatFloat(x, 'f', 0, 64) }
func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

// benchValid checks what makes the two sides' figures comparable: every step trained
// (finite, and the parameters moved on both sides), the same prompts, candidates and
// prompt tokens per step, and every answer of the answer length on both sides.
func benchValid(s benchSettings, e *espoRun, t trlResult) error {
	if len(e.steps) != s.Steps || len(t.Steps) != s.Steps {
		return fmt.Errorf("%d ESPO and %d TRL steps, want %d each", len(e.steps), len(t.Steps), s.Steps)
	}
	if e.prompts != s.Prompts || t.Prompts != s.Prompts || e.candidates != s.Prompts*s.G || t.Candidates != s.Prompts*s.G {
		return fmt.Errorf("prompts %d and %d, candidates %d and %d per step, want %d and %d", e.prompts, t.Prompts,
			e.candidates, t.Candidates, s.Prompts, s.Prompts*s.G)
	}
	if !t.PromptIDsMatch {
		return fmt.Errorf("TRL tokenizes the prompts otherwise than the worker")
	}
	if e.threads != s.Threads || t.Threads != s.Threads {
		return fmt.Errorf("torch threads: worker %d, TRL %d, want %d", e.threads, t.Threads, s.Threads)
	}
	for i, x := range e.steps {
		if !(x.GradNorm > 0) || math.IsInf(x.GradNorm, 0) || x.WorkerSeconds <= 0 || x.WorkerSeconds > x.Seconds {
			return fmt.Errorf("ESPO step %d: %+v: want a positive finite gradient norm and worker seconds within the step", i+1, x)
		}
	}
	for i, x := range t.Steps {
		if math.IsNaN(x.Loss) || math.IsInf(x.Loss, 0) || !(x.ParamChange > 0) {
			return fmt.Errorf("TRL step %d: %+v: want a finite loss and moved parameters", i+1, x)
		}
	}
	if !(e.trainedOK && t.ESPOParamChange > 0 && t.TRLParamChange > 0) {
		return fmt.Errorf("parameters moved: ESPO %g, TRL %g; want both > 0 and the run Completed", t.ESPOParamChange, t.TRLParamChange)
	}
	return nil
}

// benchEpisode returns the first generated SmartSpot episode of exactly n steps: every
// batch of the benchmark holds a copy of it, so that each ESPO step and each TRL step
// has the same n prompts.
func benchEpisode(b *testing.B, n int) dataset.Episode {
	var found *dataset.Episode
	err := dataset.GenerateEach(dataset.GenerateOptions{Episodes: 500, Seed: 5}, func(ep dataset.Episode) error {
		if found == nil && len(ep.Steps) == n {
			found = &ep
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if found == nil {
		b.Fatalf("no generated episode has %d steps (ESPO_BENCH_PROMPTS): try 11 to 29", n)
	}
	return *found
}

// writeBenchData writes what the Python side reads (bench/common.py): the episode's
// prompts, each with its demonstrated answer and another answer of the episode.
func writeBenchData(b *testing.B, path string, ep dataset.Episode, s benchSettings) {
	type item struct {
		Prompt string `json:"prompt"`
		Answer string `json:"answer"`
		Wrong  string `json:"wrong"`
	}
	var items []item
	answers := make([]string, len(ep.Steps))
	for j := range ep.Steps {
		answers[j] = espo.FormatAnswer("", ep.Steps[j].Answer.Espo())
	}
	for j := range ep.Steps {
		msg, err := proto.Marshal(worker.PromptFromStep(&ep, j))
		if err != nil {
			b.Fatal(err)
		}
		wrong := answers[j]
		for k := 1; k < len(answers) && wrong == answers[j]; k++ {
			wrong = answers[(j+k)%len(answers)]
		}
		items = append(items, item{Prompt: base64.StdEncoding.EncodeToString(msg), Answer: answers[j], Wrong: wrong})
	}
	out, err := json.Marshal(map[string]any{"prompts": items, "steps": s.Steps, "group": s.G, "tokens": s.Tokens})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchPython runs the environment's python in this folder with the benchmark's thread
// count and returns its standard output; its standard error goes to the log.
func benchPython(b *testing.B, s benchSettings, env []string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(python, args...)
	cmd.Env = append(append(pyEnv(), "OMP_NUM_THREADS="+strconv.Itoa(s.Threads), "HF_HUB_OFFLINE=1",
		"TRANSFORMERS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("python %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// benchJSON decodes the last line of out into v.
func benchJSON(b *testing.B, out []byte, v any) {
	b.Helper()
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], v); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
}

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return math.NaN()
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// trlResult is what bench/trl_step.py prints.
type trlResult struct {
	Steps           []trlStep `json:"steps"`
	Threads         int       `json:"threads"`
	Parameters      int       `json:"parameters"`
	Prompts         int       `json:"prompts"`
	Candidates      int       `json:"candidates"`
	PromptTokens    int       `json:"prompt_tokens"`
	PaddedTokens    int       `json:"padded_prompt_tokens"`
	PromptIDsMatch  bool      `json:"prompt_ids_match"`
	TRLParamChange  float64   `json:"trl_param_change"`
	ESPOParamChange float64   `json:"espo_param_change"`
}

type trlStep struct {
	Seconds          float64 `json:"seconds"`
	RewardSeconds    float64 `json:"reward_seconds"`
	GenerateSeconds  float64 `json:"generate_seconds"`
	ReferenceSeconds float64 `json:"reference_seconds"`
	CompletionTokens int     `json:"completion_tokens"`
	Loss             float64 `json:"loss"`
	MeanReward       float64 `json:"mean_reward"`
	ParamChange      float64 `json:"param_change"`
}

// espoStep is one ESPO step as the trainer logged it, with the time inside its worker
// calls as the trainer saw them (ClientSeconds: worker and protocol) and as the worker
// counted it (WorkerSeconds, from $ESPO_WORKER_STATS).
type espoStep struct {
	Seconds, ClientSeconds, WorkerSeconds float64
	// Calls are the worker's seconds per call (Generate, LogProbs, Backward, Step).
	Calls                          map[string]float64
	GeneratedTokens, TrainedTokens int
	GradNorm, MeanReward           float64
}

type espoRun struct {
	steps               []espoStep
	prompts, candidates int
	threads             int
	state               string // the worker's state after the run (Save)
	trainedOK           bool
}

func (r *espoRun) measured() []espoStep { return r.steps[1:] }

// trainingCalls are the calls of an ESPO step, as the worker's stats name them
// (evaluation's greedy Generate is GenerateGreedy).
var trainingCalls = []string{"Generate", "LogProbs", "Backward", "Gradients", "Step"}

// workerStats is the worker's $ESPO_WORKER_STATS file (espo_worker.server.Stats).
type workerStats struct {
	Calls map[string]struct {
		Count   int     `json:"count"`
		Seconds float64 `json:"seconds"`
	} `json:"calls"`
	GeneratedTokens int `json:"generated_tokens"`
	TrainedTokens   int `json:"trained_tokens"`
}

func (w workerStats) busy() float64 {
	var s float64
	for _, c := range trainingCalls {
		s += w.Calls[c].Seconds
	}
	return s
}

// runESPOSide trains s.Steps ESPO steps, one copy of ep per batch, with the Go trainer
// in this process driving a torch worker process over gRPC (loopback, with the
// job's token, as in a trainer pod), and returns each step's figures.
func runESPOSide(b *testing.B, s benchSettings, dir, model string, ep dataset.Episode) *espoRun {
	root := filepath.Join(dir, "data")
	if err := os.MkdirAll(filepath.Join(root, "bench"), 0o755); err != nil {
		b.Fatal(err)
	}
	var jsonl bytes.Buffer
	for i := range s.Steps {
		c := ep
		c.ID = fmt.Sprintf("%s-%d", ep.ID, i)
		if err := dataset.WriteEpisode(&jsonl, &c); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bench", "episodes.jsonl"), jsonl.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	c := &trainer.Config{OutputDir: filepath.Join(dir, "out"), DataRoot: root}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "bench", Split: trainingv1alpha1.SplitTrain,
		PersistentVolumeClaim: &trainingv1alpha1.VolumePath{ClaimName: "bench", Path: "episodes.jsonl"}}}
	zero := int32(0)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmESPO, SFTEpochs: &zero, Epochs: 1,
		GroupSize: int32(s.G), EpisodesPerBatch: 1, LearningRate: trainingv1alpha1.Decimal(s.LR), Seed: 7}
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: model,
		DType: trainingv1alpha1.DTypeFloat32, MaxNewTokens: int32(s.Tokens)}
	c.Spec.Default()

	stats := filepath.Join(dir, "worker-stats.json")
	addr := startBenchWorker(b, s, dir, stats)
	r, err := worker.Dial(addr, nil, workertest.Token)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	tm := &timedMember{Member: r}
	run := &espoRun{state: filepath.Join(dir, "espo-state.pt")}
	var last workerStats
	var lastClient time.Duration
	var logErr error
	sink := &stepSink{on: func(kv map[string]any) {
		var st workerStats
		b, err := os.ReadFile(stats)
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err != nil {
			logErr = err
			return
		}
		client := tm.total()
		calls := map[string]float64{}
		for _, c := range trainingCalls {
			calls[c] = st.Calls[c].Seconds - last.Calls[c].Seconds
		}
		run.steps = append(run.steps, espoStep{
			Seconds: num(kv["stepSeconds"]), ClientSeconds: (client - lastClient).Seconds(),
			WorkerSeconds: st.busy() - last.busy(), Calls: calls,
			GeneratedTokens: st.GeneratedTokens - last.GeneratedTokens, TrainedTokens: st.TrainedTokens - last.TrainedTokens,
			GradNorm: num(kv["gradNorm"]), MeanReward: num(kv["meanStepReward"]),
		})
		last, lastClient = st, client
	}}
	tr, err := trainer.New(c, trainer.Options{Workers: worker.NewGang(tm), Log: logr.New(sink)})
	if err != nil {
		b.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if logErr != nil {
		b.Fatalf("reading the worker's stats: %v", logErr)
	}
	run.trainedOK = rep.Outcome == trainingv1alpha1.OutcomeCompleted
	if !run.trainedOK {
		b.Fatalf("the ESPO run: outcome %s: %s", rep.Outcome, rep.Message)
	}
	if _, err := r.Client().Save(context.Background(), &workerpb.SaveRequest{Path: run.state}); err != nil {
		b.Fatal(err)
	}
	run.prompts, run.candidates = tm.prompts, tm.candidates
	run.threads = benchWorkerThreads(b, s, dir)
	return run
}

// benchWorkerThreads returns torch's thread count in a process started as the worker
// is (same environment): the worker does not report it.
func benchWorkerThreads(b *testing.B, s benchSettings, dir string) int {
	out := benchPython(b, s, nil, "-c", "import torch; print(torch.get_num_threads())")
	n, err := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return math.NaN()
}

// startBenchWorker starts the torch worker on CPU with the benchmark's thread count,
// recording its per-call seconds in stats, and returns its address; the process is
// stopped at the end of the benchmark.
func startBenchWorker(b *testing.B, s benchSettings, dir, stats string) string {
	token := filepath.Join(dir, "worker-token")
	if err := os.WriteFile(token, []byte(workertest.Token), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "espo_worker", "--listen", "127.0.0.1:0", "--device", "cpu",
		"--drain-quiet", "0.5", "--token-file", token, "--allow-path", dir)
	cmd.Env = append(pyEnv(), "OMP_NUM_THREADS="+strconv.Itoa(s.Threads), "ESPO_WORKER_STATS="+stats,
		"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false")
	return serveProcess(b, cmd, func(string) {})
}

// timedMember is a worker.Member that adds up the time spent inside the calls of a
// training step as the trainer sees them (the worker's time plus the protocol's:
// messages built, sent, parsed and answered), and counts the prompts and candidates
// of the last sampling call.
type timedMember struct {
	worker.Member
	mu                  sync.Mutex
	busy                time.Duration
	prompts, candidates int
}

func (m *timedMember) add(start time.Time) {
	d := time.Since(start)
	m.mu.Lock()
	m.busy += d
	m.mu.Unlock()
}

func (m *timedMember) total() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.busy
}

func (m *timedMember) Generate(ctx context.Context, prompts []worker.Prompt, o worker.SampleOptions) ([][]worker.Sample, error) {
	defer m.add(time.Now())
	out, err := m.Member.Generate(ctx, prompts, o)
	m.mu.Lock()
	m.prompts, m.candidates = len(out), 0
	for _, c := range out {
		m.candidates += len(c)
	}
	m.mu.Unlock()
	return out, err
}

func (m *timedMember) LogProbs(ctx context.Context, items []worker.Scored, o worker.ScoreOptions) ([]worker.TokenLogProbs, error) {
	defer m.add(time.Now())
	return m.Member.LogProbs(ctx, items, o)
}

func (m *timedMember) Backward(ctx context.Context, items []worker.Weighted) (float64, error) {
	defer m.add(time.Now())
	return m.Member.Backward(ctx, items)
}

func (m *timedMember) Gradient(ctx context.Context) ([]float32, error) {
	defer m.add(time.Now())
	return m.Member.Gradient(ctx)
}

func (m *timedMember) Step(ctx context.Context, o worker.StepOptions) (float64, error) {
	defer m.add(time.Now())
	return m.Member.Step(ctx, o)
}

// stepSink is a logr sink that hands the key-values of each "step" line of the
// trainer's log to on, in the trainer's goroutine, right after the step.
type stepSink struct{ on func(map[string]any) }

func (s *stepSink) Init(logr.RuntimeInfo)          {}
func (s *stepSink) Enabled(level int) bool         { return level == 0 }
func (s *stepSink) Error(error, string, ...any)    {}
func (s *stepSink) WithValues(...any) logr.LogSink { return s }
func (s *stepSink) WithName(string) logr.LogSink   { return s }
func (s *stepSink) Info(level int, msg string, kvs ...any) {
	if msg != "step" {
		return
	}
	kv := map[string]any{}
	for i := 0; i+1 < len(kvs); i += 2 {
		if k, ok := kvs[i].(string); ok {
			kv[k] = kvs[i+1]
		}
	}
	s.on(kv)
}
