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
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/test/pyenv"
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
	KVCacheGiB     int // the KV cache of each vLLM engine on the CPU (ours: spec.model.rollout.cpuKVCacheGiB)
	LR             string
	PrimeSteps     int
	// TRLVLLMSite is a folder that holds TRL's pin (and datasets', accelerate's) for
	// the vLLM engine environment's python, put before its site-packages
	// (ESPO_BENCH_TRL_VLLM_SITE): with it the benchmark also runs TRL's own vLLM
	// integration, which needs vLLM and TRL in one process; without it that row says
	// it was not run. docs/worker-protocol.md says how to make one.
	TRLVLLMSite string
	// Dir keeps the run's files (models, data, logs) in this folder rather than a
	// temporary one (ESPO_BENCH_DIR).
	Dir string
}

func benchSettingsFromEnv(b *testing.B) benchSettings {
	s := benchSettings{Hidden: 256, Layers: 2, Prompts: 12, G: 4, Tokens: 64, Steps: 5, Threads: 2, KVCacheGiB: 1,
		LR: "1e-5", PrimeSteps: 200}
	for name, p := range map[string]*int{"HIDDEN": &s.Hidden, "LAYERS": &s.Layers, "PROMPTS": &s.Prompts, "G": &s.G,
		"TOKENS": &s.Tokens, "STEPS": &s.Steps, "THREADS": &s.Threads, "KV_CACHE_GIB": &s.KVCacheGiB,
		"PRIME_STEPS": &s.PrimeSteps} {
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
	s.TRLVLLMSite, s.Dir = os.Getenv("ESPO_BENCH_TRL_VLLM_SITE"), os.Getenv("ESPO_BENCH_DIR")
	if s.Steps < 2 || s.G < 2 {
		b.Fatalf("ESPO_BENCH_STEPS %d and ESPO_BENCH_G %d: want at least 2 each (one warm-up step, then measured ones)", s.Steps, s.G)
	}
	return s
}

// benchSide is one contender of the step benchmark: a training run that takes one
// optimizer step per turn and waits, idle, between its turns.
type benchSide interface {
	// start readies the side up to its first step (processes started, models
	// loaded where the side loads them before training).
	start() error
	// turn lets the side take one optimizer step and returns when it has.
	turn() error
	// finish lets the side end its run after its last step.
	finish() error
	label() string
}

// BenchmarkESPOStepBesideTRL times ESPO optimizer steps of ours, the Go trainer
// driving the PyTorch worker over gRPC, sampling with Hugging Face generate and with
// the vLLM engine (spec.model.rollout.engine), beside TRL's GRPOTrainer in two
// batch layouts, and, when ESPO_BENCH_TRL_VLLM_SITE is set, with TRL's own vLLM
// integration: on CPU, on the same model, prompts, G, answer length, learning rate,
// KL coefficient and optimizer, with the same torch thread count. The sides take
// their steps in turns, one step each in a fixed order (ours huggingface, TRL micro,
// ours vllm, TRL batch, TRL vllm) round after round, every other side idle meanwhile,
// so that a change of the machine's load falls on all of them alike. It prints a
// table of the step time and its phases with their shares, the tokens each side
// computed, and the ratios; it reports each side's median step seconds, the speed-up
// of ours with vllm over the fastest TRL row and the share of our step outside the
// worker (Go core and protocol). It runs once whatever b.N; run it with
//
//	go test ./trainer/worker/torch/ -run '^$' -bench BenchmarkESPOStepBesideTRL -benchtime 1x -timeout 40m
//
// docs/worker-protocol.md, "Step time beside TRL", says what each side runs and what
// the figures mean.
func BenchmarkESPOStepBesideTRL(b *testing.B) {
	s := benchSettingsFromEnv(b)
	loadStart := loadAverage()
	began := time.Now()
	dir := s.Dir
	if dir == "" {
		dir = b.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
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
	root := writeBenchEpisodes(b, dir, ep, s)

	hf := &espoSide{b: b, s: s, name: "ours, huggingface", engine: trainingv1alpha1.RolloutHuggingFace,
		dir: filepath.Join(dir, "espo-huggingface"), model: model, root: root}
	vl := &espoSide{b: b, s: s, name: "ours, vllm", engine: trainingv1alpha1.RolloutVLLM,
		dir: filepath.Join(dir, "espo-vllm"), model: model, root: root}
	micro := newTRLSide(b, s, dir, model, data, "micro", "TRL, G a micro-batch")
	batch := newTRLSide(b, s, dir, model, data, "batch", "TRL, one batch (v1)")
	sides := []benchSide{hf, micro, vl, batch}
	trlSides := []*trlSide{micro, batch}
	var tv *trlSide
	if s.TRLVLLMSite != "" {
		tv = newTRLSide(b, s, dir, model, data, "vllm", "TRL + vLLM colocate")
		sides, trlSides = append(sides, tv), append(trlSides, tv)
	}
	required := func(x benchSide) bool { return x != benchSide(tv) }

	// Each side is readied in turn, then the rounds: one step of each side, in order.
	alive := map[benchSide]bool{}
	for _, x := range sides {
		if err := x.start(); err != nil {
			if required(x) {
				b.Fatalf("%s: %v", x.label(), err)
			}
			b.Logf("%s: did not start: %v", x.label(), err)
			continue
		}
		alive[x] = true
	}
	for round := 0; round < s.Steps; round++ {
		for _, x := range sides {
			if !alive[x] {
				continue
			}
			if err := x.turn(); err != nil {
				if required(x) {
					b.Fatalf("%s, step %d: %v", x.label(), round+1, err)
				}
				b.Logf("%s, step %d: %v", x.label(), round+1, err)
				alive[x] = false
			}
		}
	}
	for _, x := range sides {
		if !alive[x] {
			continue
		}
		if err := x.finish(); err != nil {
			if required(x) {
				b.Fatalf("%s: %v", x.label(), err)
			}
			b.Logf("%s: %v", x.label(), err)
		}
	}
	var moved []float64
	benchJSON(b, benchPython(b, s, nil, "-m", "bench.moved", model, hf.state, vl.state), &moved)
	hf.moved, vl.moved = moved[0], moved[1]

	w := &bytes.Buffer{}
	params := micro.ready.Parameters
	fmt.Fprintf(w, "\nstep time beside TRL: random Qwen3, hidden %d, %d layers, %d parameters; %d prompts x G %d = %d "+
		"candidates of %d tokens per step; lr %s; beta 0.01; %d torch threads a side; %d steps a side, the first a "+
		"warm-up, taken in turns (%s), medians of the rest\n", s.Hidden, s.Layers, params, s.Prompts, s.G,
		s.Prompts*s.G, s.Tokens, s.LR, s.Threads, s.Steps, strings.Join(labels(sides), ", "))
	fmt.Fprintf(w, "machine: %d CPUs, load average (1 min) %s at the start, %s at the end, %.0f s in all: other work "+
		"on the machine slows every side\n", runtime.NumCPU(), loadStart, loadAverage(), time.Since(began).Seconds())
	fmt.Fprintf(w, "primed: %d steps in %.1fs, loss %.3f -> %.3f, %.0f%% of sampled answers parse; TRL %s, "+
		"transformers %s, torch %s\n", s.PrimeSteps, primed.Seconds, primed.LossFirst, primed.LossLast,
		100*primed.ParseRate, micro.ready.TRL, micro.ready.Transformers, micro.ready.Torch)
	cols := []column{hf.column(), vl.column(), micro.column(), batch.column()}
	for _, c := range cols[:2] { // the prompts' token ids are the worker's (benchValid)
		c.cells["prompt_tokens"] = strconv.Itoa(micro.ready.PromptTokens)
	}
	if tv != nil {
		cols = append(cols, tv.column())
	}
	writeTable(w, cols)
	r := benchRatios(hf, vl, trlSides)
	fmt.Fprintf(w, "\n%s\n", r.text)
	for _, x := range []*espoSide{hf, vl} {
		fmt.Fprintf(w, "per step, %s: turn s, trainer's step s, worker s, generated tokens, grad norm, sampler "+
			"mismatch:", x.name)
		for _, st := range x.steps {
			fmt.Fprintf(w, " [%.2f %.2f %.2f %d %.3g %.2g]", st.Seconds, st.TrainerSeconds, st.WorkerSeconds,
				st.GeneratedTokens, st.GradNorm, st.SamplerMismatch)
		}
		fmt.Fprintln(w)
	}
	for _, x := range trlSides {
		if x.failed != "" {
			fmt.Fprintf(w, "%s: did not run: %s\n", x.name, x.failed)
			continue
		}
		fmt.Fprintf(w, "per step, %s: turn s, own s, reward s, tokens, loss:", x.name)
		for _, st := range x.steps {
			fmt.Fprintf(w, " [%.2f %.2f %.4f %d %.3g]", st.Turn, st.Seconds, st.RewardSeconds, st.CompletionTokens, st.Loss)
		}
		fmt.Fprintln(w)
	}
	if tv == nil {
		fmt.Fprintf(w, "TRL + vLLM colocate: not run (set ESPO_BENCH_TRL_VLLM_SITE; docs/worker-protocol.md)\n")
	}
	err := benchValid(s, hf, vl, trlSides)
	fmt.Fprintf(w, "validity: %s\n", map[bool]string{true: "every side trained (gradient, loss and parameters finite " +
		"and moving), same prompts, candidates, prompt token ids and thread count, every answer of the answer length, " +
		"the engine's log-probs within the bound of the trainer's and its weights pushed before each Generate",
		false: "NOT VALID: " + fmt.Sprint(err)}[err == nil])
	fmt.Print(w.String())
	if err != nil {
		b.Fatalf("the comparison is not valid: %v", err)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(hf.median(func(x espoStep) float64 { return x.Seconds }), "espo-hf-step-s")
	b.ReportMetric(vl.median(func(x espoStep) float64 { return x.Seconds }), "espo-vllm-step-s")
	for _, x := range trlSides {
		if x.failed == "" {
			b.ReportMetric(x.median(func(t trlStep) float64 { return t.Turn }), "trl-"+x.layout+"-step-s")
		}
	}
	b.ReportMetric(r.speedup, "vllm-vs-best-trl-x")
	b.ReportMetric(100*r.outside, "outside-worker-%")
	b.ReportMetric(100*r.protocol, "protocol-%")
}

func labels(sides []benchSide) []string {
	var out []string
	for _, x := range sides {
		out = append(out, x.label())
	}
	return out
}

// ratios are the figures the issue asks for: ours with vllm against the fastest TRL
// row that ran, and the share of our vllm step outside the worker.
type ratios struct {
	speedup, outside, protocol float64
	text                       string
}

func benchRatios(hf, vl *espoSide, trls []*trlSide) ratios {
	var best *trlSide
	for _, x := range trls {
		if x.failed == "" && (best == nil || x.median(trlTurn) < best.median(trlTurn)) {
			best = x
		}
	}
	v, h := vl.median(espoSeconds), hf.median(espoSeconds)
	r := ratios{speedup: best.median(trlTurn) / v, outside: vl.median(outsideShare), protocol: vl.median(protocolShare)}
	var t strings.Builder
	fmt.Fprintf(&t, "ratios (medians, as measured): the fastest TRL row is %q at %.3f s a step; ours with vllm %.3f s: "+
		"%.2fx its speed (goal 2x: %s); ours with huggingface %.3f s: %.2fx", best.name, best.median(trlTurn), v,
		r.speedup, map[bool]string{true: "met", false: "NOT met"}[r.speedup >= 2], h, best.median(trlTurn)/h)
	for _, x := range trls {
		if x.failed == "" && x != best {
			fmt.Fprintf(&t, "; against %q (%.3f s) ours with vllm is %.2fx", x.name, x.median(trlTurn), x.median(trlTurn)/v)
		}
	}
	fmt.Fprintf(&t, ".\nGo core + protocol (outside the worker): %.2f%% of our vllm step (protocol %.2f%%), %.2f%% of "+
		"our huggingface step (protocol %.2f%%) (goal under 2%%: %s)", 100*r.outside, 100*r.protocol,
		100*hf.median(outsideShare), 100*hf.median(protocolShare),
		map[bool]string{true: "met", false: "NOT met"}[r.outside < 0.02 && hf.median(outsideShare) < 0.02])
	r.text = t.String()
	return r
}

// column is one side's cells of the table, by row key.
type column struct {
	name  string
	cells map[string]string
}

// tableRows are the table's rows: key and label.
var tableRows = [][2]string{
	{"step", "step seconds (median)"},
	{"sample", "  sampling: generate or vLLM, weight push included"},
	{"push", "    of which the weight push to vLLM"},
	{"score", "  the policy's log-probs of the samples"},
	{"reference", "  the reference's log-probs"},
	{"backward", "  loss forward+backward (Backward)"},
	{"optimizer", "  optimizer step (Step)"},
	{"trlrest", "  loss, backward, optimizer and the rest"},
	{"outside", "  outside the worker: Go core + protocol"},
	{"protocol", "    of which protocol"},
	{"reward", "  the reward function"},
	{"", ""},
	{"prompts", "prompts / candidates a step"},
	{"prompt_tokens", "prompt tokens a step"},
	{"generated", "generated tokens a step"},
	{"ms_token", "ms a generated token"},
	{"encoded", "token positions computed a step (trainer's model)"},
	{"enc_sample", "  in sampling (prompt + decode)"},
	{"enc_score", "  the policy's log-probs of the samples"},
	{"enc_reference", "  the reference's log-probs"},
	{"enc_loss", "  loss forward (+backward)"},
	{"engine_tokens", "prompt tokens sent to vLLM a step"},
	{"mismatch", "sampler vs trainer log-prob, mean |d| a token"},
	{"", ""},
	{"reward_mean", "mean reward (each side's own reward)"},
	{"gradnorm", "gradient norm (ours) / loss (TRL)"},
	{"moved", "parameters moved over the run, |dθ|/|θ|"},
	{"batching", "batch: per device x accumulation (gen. every)"},
}

func writeTable(w io.Writer, cols []column) {
	const first, width = 50, 21
	fmt.Fprintf(w, "\n%-*s", first, "per optimizer step")
	for _, c := range cols {
		fmt.Fprintf(w, " %*s", width, c.name)
	}
	fmt.Fprintln(w)
	for _, row := range tableRows {
		if row[0] == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "%-*s", first, row[1])
		for _, c := range cols {
			v, ok := c.cells[row[0]]
			if !ok {
				v = "-"
			}
			fmt.Fprintf(w, " %*s", width, v)
		}
		fmt.Fprintln(w)
	}
}

// share formats seconds with their share of the step.
func share(sec, frac float64) string {
	return fmt.Sprintf("%.3f (%4.1f%%)", sec, 100*frac)
}

// loadAverage returns the 1-minute load average of /proc/loadavg, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := bytes.Fields(b); err == nil && len(f) > 0 {
		return string(f[0])
	}
	return "?"
}

func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
func f0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// benchValid checks what makes the sides' figures comparable: every step of every
// side that ran trained (finite, and the parameters moved), the same prompts,
// candidates, prompt token ids and thread count, every answer of the answer length
// (the vLLM engine's too: an engine that stopped early would look faster), and the
// vLLM engine serving the trained weights: pushed before every Generate after a
// Step, its per-token log-probs within maxSamplerMismatch of the trainer's.
func benchValid(s benchSettings, hf, vl *espoSide, trls []*trlSide) error {
	full := s.Prompts * s.G * s.Tokens
	var errs []error
	for _, e := range []*espoSide{hf, vl} {
		if len(e.steps) != s.Steps {
			errs = append(errs, fmt.Errorf("%s: %d steps, want %d", e.name, len(e.steps), s.Steps))
			continue
		}
		if e.prompts != s.Prompts || e.candidates != s.Prompts*s.G {
			errs = append(errs, fmt.Errorf("%s: %d prompts and %d candidates a step, want %d and %d", e.name, e.prompts,
				e.candidates, s.Prompts, s.Prompts*s.G))
		}
		if e.threads != s.Threads {
			errs = append(errs, fmt.Errorf("%s: the worker ran %d torch threads, want %d", e.name, e.threads, s.Threads))
		}
		for i, x := range e.steps {
			if !(x.GradNorm > 0) || math.IsInf(x.GradNorm, 0) || x.WorkerSeconds <= 0 || x.WorkerSeconds > x.Seconds {
				errs = append(errs, fmt.Errorf("%s, step %d: %+v: want a positive finite gradient norm and worker "+
					"seconds within the step", e.name, i+1, x))
			}
			if x.GeneratedTokens != full {
				errs = append(errs, fmt.Errorf("%s, step %d: %d tokens generated, want %d (every answer %d tokens)",
					e.name, i+1, x.GeneratedTokens, full, s.Tokens))
			}
		}
		if !(e.trainedOK && e.moved > 0) {
			errs = append(errs, fmt.Errorf("%s: parameters moved %g, want > 0 and the run Completed", e.name, e.moved))
		}
	}
	if len(vl.steps) == s.Steps {
		last := vl.steps[len(vl.steps)-1]
		if last.Pushes < s.Steps {
			errs = append(errs, fmt.Errorf("%s: %d weight pushes in %d steps, want one before each Generate", vl.name,
				last.Pushes, s.Steps))
		}
		for i, x := range vl.steps {
			if !(x.SamplerMismatch >= 0 && x.SamplerMismatch <= maxSamplerMismatch) {
				errs = append(errs, fmt.Errorf("%s, step %d: the engine's log-probs differ from the trainer's by %g a "+
					"token on average, want at most %g", vl.name, i+1, x.SamplerMismatch, maxSamplerMismatch))
			}
		}
	}
	for _, t := range trls {
		if t.failed != "" && t.layout == "vllm" {
			continue
		}
		if len(t.steps) != s.Steps {
			errs = append(errs, fmt.Errorf("%s: %d steps, want %d", t.name, len(t.steps), s.Steps))
			continue
		}
		if !t.ready.PromptIDsMatch {
			errs = append(errs, fmt.Errorf("%s: TRL tokenizes the prompts otherwise than the worker", t.name))
		}
		if t.ready.Threads != s.Threads || t.ready.Prompts != s.Prompts {
			errs = append(errs, fmt.Errorf("%s: %d torch threads and %d prompts, want %d and %d", t.name,
				t.ready.Threads, t.ready.Prompts, s.Threads, s.Prompts))
		}
		for i, x := range t.steps {
			if math.IsNaN(x.Loss) || math.IsInf(x.Loss, 0) || !(x.ParamChange > 0) {
				errs = append(errs, fmt.Errorf("%s, step %d: %+v: want a finite loss and moved parameters", t.name, i+1, x))
			}
			if x.Candidates != s.Prompts*s.G || x.CompletionTokens != full {
				errs = append(errs, fmt.Errorf("%s, step %d: %d candidates of %d tokens in all, want %d of %d", t.name,
					i+1, x.Candidates, x.CompletionTokens, s.Prompts*s.G, full))
			}
		}
		if !(t.final.TRLParamChange > 0) {
			errs = append(errs, fmt.Errorf("%s: parameters moved %g, want > 0", t.name, t.final.TRLParamChange))
		}
	}
	return errors.Join(errs...)
}

// maxSamplerMismatch bounds the mean |trainer - engine| per-token log-prob of the vLLM
// side: float32 on both sides, vLLM's CPU kernels against transformers'
// (tests/test_rollout.py holds the largest single difference of a smaller model to
// 1e-4).
const maxSamplerMismatch = 1e-3

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

// writeBenchEpisodes writes the ESPO sides' dataset, s.Steps copies of ep (one batch
// each), and returns its data root.
func writeBenchEpisodes(b *testing.B, dir string, ep dataset.Episode, s benchSettings) string {
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
	return root
}

// benchEnv is the environment of the benchmark's Python processes: s.Threads torch
// threads, and as many for vLLM's CPU backend, which binds its OpenMP threads to CPUs
// itself (VLLM_CPU_OMP_THREADS_BIND; its default, auto, takes every CPU of the NUMA
// node) and ignores torch.set_num_threads.
func benchEnv(s benchSettings) []string {
	env := append(pyEnv(), "OMP_NUM_THREADS="+strconv.Itoa(s.Threads), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1",
		"TOKENIZERS_PARALLELISM=false", "VLLM_CPU_KVCACHE_SPACE="+strconv.Itoa(s.KVCacheGiB))
	if s.Threads <= runtime.NumCPU() {
		env = append(env, fmt.Sprintf("VLLM_CPU_OMP_THREADS_BIND=0-%d", s.Threads-1))
	}
	return env
}

// benchPython runs the environment's python in this folder with the benchmark's thread
// count and returns its standard output; its standard error goes to the log.
func benchPython(b *testing.B, s benchSettings, env []string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(python, args...)
	cmd.Env = append(benchEnv(s), env...)
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

// tail returns the last n bytes of the file at path, from a line's start.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// --- TRL's sides -------------------------------------------------------------

// trlSide is a bench/trl_step.py process that takes one optimizer step per turn.
type trlSide struct {
	b              *testing.B
	s              benchSettings
	name, layout   string
	python, stderr string
	cmd            *exec.Cmd
	env            []string
	stdin          io.WriteCloser
	msgs           chan trlMessage
	ready          trlReady
	steps          []trlStep
	final          trlFinal
	failed         string // why the side stopped, when it did
}

type trlMessage struct {
	Ready  *trlReady `json:"ready"`
	Step   *trlStep  `json:"step"`
	Result *trlFinal `json:"result"`
}

// trlReady is what bench/trl_step.py prints once the trainer is built.
type trlReady struct {
	Threads        int     `json:"threads"`
	Parameters     int     `json:"parameters"`
	Prompts        int     `json:"prompts"`
	Candidates     int     `json:"candidates"`
	PromptTokens   int     `json:"prompt_tokens"`
	PaddedTokens   int     `json:"padded_prompt_tokens"`
	PromptIDsMatch bool    `json:"prompt_ids_match"`
	BuildSeconds   float64 `json:"build_seconds"`
	TRL            string  `json:"trl"`
	Transformers   string  `json:"transformers"`
	Torch          string  `json:"torch"`
	Batch          []any   `json:"batch"` // per device, accumulation, steps per generation, generation batch
}

type trlStep struct {
	Turn             float64        // the step's turn as the benchmark timed it
	Seconds          float64        `json:"seconds"`
	RewardSeconds    float64        `json:"reward_seconds"`
	GenerateSeconds  float64        `json:"generate_seconds"`
	SyncSeconds      float64        `json:"sync_seconds"`
	ReferenceSeconds float64        `json:"reference_seconds"`
	ScoringSeconds   float64        `json:"scoring_seconds"`
	CompletionTokens int            `json:"completion_tokens"`
	Candidates       int            `json:"candidates"`
	Encoded          map[string]int `json:"encoded"`
	Loss             float64        `json:"loss"`
	MeanReward       float64        `json:"mean_reward"`
	ParamChange      float64        `json:"param_change"`
}

type trlFinal struct {
	TRLParamChange float64 `json:"trl_param_change"`
}

func newTRLSide(b *testing.B, s benchSettings, dir, model, data, layout, name string) *trlSide {
	t := &trlSide{b: b, s: s, name: name, layout: layout, python: python,
		stderr: filepath.Join(dir, "trl-"+layout+".log"), env: benchEnv(s)}
	if layout == "vllm" {
		// vLLM's environment, with TRL's pin put before its site-packages.
		t.python = os.Getenv(pyenv.EnvEnginePython)
		t.env = append(t.env, "PYTHONPATH="+s.TRLVLLMSite)
	}
	t.cmd = exec.Command(t.python, "-m", "bench.trl_step", "--model", model, "--data", data, "--lr", s.LR,
		"--threads", strconv.Itoa(s.Threads), "--layout", layout)
	t.cmd.Env = t.env
	return t
}

func (t *trlSide) label() string { return t.name }

func (t *trlSide) start() error {
	log, err := os.Create(t.stderr)
	if err != nil {
		return err
	}
	t.cmd.Stderr = log
	if t.stdin, err = t.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := t.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := t.cmd.Start(); err != nil {
		return t.fail(err)
	}
	t.b.Cleanup(func() {
		if t.cmd.ProcessState == nil {
			_ = t.cmd.Process.Kill()
			_ = t.cmd.Wait()
		}
		_ = log.Close()
	})
	t.msgs = make(chan trlMessage, 4)
	go func() {
		defer close(t.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "BENCH ")
			if !ok {
				continue
			}
			var m trlMessage
			if err := json.Unmarshal([]byte(line), &m); err == nil {
				t.msgs <- m
			}
		}
	}()
	m, ok := <-t.msgs
	if !ok || m.Ready == nil {
		return t.fail(errors.New("exited before its trainer was built"))
	}
	t.ready = *m.Ready
	return nil
}

// fail records why the side stopped: err and the last exception line of its log.
func (t *trlSide) fail(err error) error {
	if t.cmd.Process != nil && t.cmd.ProcessState == nil {
		_ = t.stdin.Close()
		_ = t.cmd.Process.Kill()
		_ = t.cmd.Wait()
	}
	why := err.Error()
	log := tail(t.stderr, 1<<16)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(strings.TrimPrefix(lines[i], "[rank0]:")); regexpError.MatchString(l) {
			why += ": " + l
			break
		}
	}
	t.failed = why + " (log: " + t.stderr + ")"
	return errors.New(t.failed)
}

func (t *trlSide) turn() error {
	start := time.Now()
	if _, err := io.WriteString(t.stdin, "go\n"); err != nil {
		return t.fail(err)
	}
	m, ok := <-t.msgs
	if !ok || m.Step == nil {
		return t.fail(errors.New("exited during its step"))
	}
	m.Step.Turn = time.Since(start).Seconds()
	t.steps = append(t.steps, *m.Step)
	return nil
}

func (t *trlSide) finish() error {
	if _, err := io.WriteString(t.stdin, "done\n"); err != nil {
		return t.fail(err)
	}
	m, ok := <-t.msgs
	if !ok || m.Result == nil {
		return t.fail(errors.New("exited before its result"))
	}
	t.final = *m.Result
	_ = t.stdin.Close()
	return t.cmd.Wait()
}

func (t *trlSide) measured() []trlStep {
	if len(t.steps) < 2 {
		return nil
	}
	return t.steps[1:]
}

func (t *trlSide) median(f func(trlStep) float64) float64 { return median(t.measured(), f) }

func trlTurn(x trlStep) float64 { return x.Turn }

func (t *trlSide) column() column {
	c := column{name: t.name, cells: map[string]string{}}
	if t.failed != "" || len(t.measured()) == 0 {
		c.cells["step"] = "did not run"
		return c
	}
	m := t.median
	step := m(trlTurn)
	frac := func(f func(trlStep) float64) float64 { return m(func(x trlStep) float64 { return f(x) / x.Turn }) }
	c.cells["step"] = f3(step)
	gen := func(x trlStep) float64 { return x.GenerateSeconds }
	c.cells["sample"] = share(m(gen), frac(gen))
	if t.layout == "vllm" {
		sync := func(x trlStep) float64 { return x.SyncSeconds }
		c.cells["push"] = share(m(sync), frac(sync))
		score := func(x trlStep) float64 { return x.ScoringSeconds }
		c.cells["score"] = share(m(score), frac(score))
	}
	ref := func(x trlStep) float64 { return x.ReferenceSeconds }
	c.cells["reference"] = share(m(ref), frac(ref))
	rest := func(x trlStep) float64 { return x.Turn - x.GenerateSeconds - x.ReferenceSeconds - x.ScoringSeconds }
	c.cells["trlrest"] = share(m(rest), frac(rest))
	rew := func(x trlStep) float64 { return x.RewardSeconds }
	c.cells["reward"] = share(m(rew), frac(rew))
	c.cells["prompts"] = fmt.Sprintf("%d / %.0f", t.ready.Prompts, m(func(x trlStep) float64 { return float64(x.Candidates) }))
	c.cells["prompt_tokens"] = strconv.Itoa(t.ready.PromptTokens)
	gtok := m(func(x trlStep) float64 { return float64(x.CompletionTokens) })
	c.cells["generated"] = f0(gtok)
	c.cells["ms_token"] = f3(1000 * step / gtok)
	enc := func(k string) func(trlStep) float64 {
		return func(x trlStep) float64 { return float64(x.Encoded[k]) }
	}
	c.cells["encoded"] = f0(m(func(x trlStep) float64 {
		var n int
		for _, v := range x.Encoded {
			n += v
		}
		return float64(n)
	}))
	if t.layout == "vllm" {
		c.cells["enc_sample"] = "(in vLLM)"
		c.cells["enc_score"] = f0(m(enc("scoring")))
	} else {
		c.cells["enc_sample"] = f0(m(enc("generate")))
	}
	c.cells["enc_reference"] = f0(m(enc("reference")))
	c.cells["enc_loss"] = f0(m(enc("loss")))
	if t.layout == "vllm" {
		c.cells["engine_tokens"] = strconv.Itoa(t.ready.PromptTokens) + " x G"
	}
	c.cells["reward_mean"] = f3(m(func(x trlStep) float64 { return x.MeanReward }))
	c.cells["gradnorm"] = f3(m(func(x trlStep) float64 { return x.Loss }))
	c.cells["moved"] = fmt.Sprintf("%.2e", t.final.TRLParamChange)
	if len(t.ready.Batch) == 4 {
		c.cells["batching"] = fmt.Sprintf("%v x %v (%v)", t.ready.Batch[0], t.ready.Batch[1], t.ready.Batch[2])
	}
	return c
}

// regexpError matches the line of a Python traceback that names the exception.
var regexpError = regexp.MustCompile(`^[A-Za-z_.]*(Error|Exception|Exit)\b`)

// --- our sides ---------------------------------------------------------------

// espoSide trains s.Steps ESPO steps, one copy of the episode per batch, with the Go
// trainer in this process driving a torch worker process (bench/worker.py: the
// worker with counters) over gRPC (loopback, with the job's token, as in a trainer
// pod), sampling with engine.
type espoSide struct {
	b                    *testing.B
	s                    benchSettings
	name                 string
	engine               trainingv1alpha1.RolloutEngine
	dir, model, root     string
	stats, phases, state string
	tm                   *timedMember
	remote               *worker.Remote
	release              chan struct{}
	records              chan espoStep
	done                 chan error
	steps                []espoStep
	prompts, candidates  int
	threads              int
	trainedOK            bool
	moved                float64
	last                 workerStats
	lastPhases           phaseStats
	lastClient           time.Duration
	turnStart            time.Time
	logErr               error
}

// espoStep is one ESPO step: the turn as the benchmark timed it (from letting the
// trainer go to its step's log line), the trainer's own step time, the time inside
// its worker calls as the trainer saw them (ClientSeconds: worker and protocol) and
// as the worker counted it (WorkerSeconds, from $ESPO_WORKER_STATS), and
// bench/worker.py's counters.
type espoStep struct {
	Seconds, TrainerSeconds, ClientSeconds, WorkerSeconds float64
	// Calls are the worker's seconds per call (Generate, LogProbs, Backward, Step).
	Calls                          map[string]float64
	GeneratedTokens, TrainedTokens int
	Encoded                        map[string]int
	Scoring, Engine, Push          float64
	Pushes, EnginePromptTokens     int
	GradNorm, MeanReward           float64
	SamplerMismatch                float64
}

func espoSeconds(x espoStep) float64   { return x.Seconds }
func outsideShare(x espoStep) float64  { return (x.Seconds - x.WorkerSeconds) / x.Seconds }
func protocolShare(x espoStep) float64 { return (x.ClientSeconds - x.WorkerSeconds) / x.Seconds }

func (e *espoSide) label() string { return e.name }

func (e *espoSide) measured() []espoStep {
	if len(e.steps) < 2 {
		return nil
	}
	return e.steps[1:]
}

func (e *espoSide) median(f func(espoStep) float64) float64 { return median(e.measured(), f) }

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

// phaseStats is bench/worker.py's $ESPO_BENCH_PHASES file.
type phaseStats struct {
	Encoded            map[string]int `json:"encoded"`
	ScoringSeconds     float64        `json:"scoring_seconds"`
	EngineSeconds      float64        `json:"engine_seconds"`
	EngineCalls        int            `json:"engine_calls"`
	EnginePromptTokens int            `json:"engine_prompt_tokens"`
	EngineSamples      int            `json:"engine_samples"`
	PushSeconds        float64        `json:"push_seconds"`
	Pushes             int            `json:"pushes"`
	Threads            int            `json:"threads"`
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	return err
}

func (e *espoSide) start() error {
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	s := e.s
	c := &trainer.Config{OutputDir: filepath.Join(e.dir, "out"), DataRoot: e.root}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "bench", Split: trainingv1alpha1.SplitTrain,
		PersistentVolumeClaim: &trainingv1alpha1.VolumePath{ClaimName: "bench", Path: "episodes.jsonl"}}}
	zero := int32(0)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmESPO, SFTEpochs: &zero, Epochs: 1,
		GroupSize: int32(s.G), EpisodesPerBatch: 1, LearningRate: trainingv1alpha1.Decimal(s.LR), Seed: 7}
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: e.model,
		DType: trainingv1alpha1.DTypeFloat32, MaxNewTokens: int32(s.Tokens)}
	if e.engine == trainingv1alpha1.RolloutVLLM {
		// spec.algorithm.samplerCorrection.cap keeps its default with vllm, 2.
		c.Spec.Model.Rollout = &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM,
			CPUKVCacheGiB: int32(s.KVCacheGiB)}
	}
	c.Spec.Default()

	e.stats, e.phases = filepath.Join(e.dir, "worker-stats.json"), filepath.Join(e.dir, "worker-phases.json")
	e.state = filepath.Join(e.dir, "espo-state.pt")
	addr := startBenchWorker(e.b, s, e.dir, e.stats, e.phases)
	r, err := worker.Dial(addr, nil, workertest.Token)
	if err != nil {
		return err
	}
	e.b.Cleanup(func() { r.Close() })
	e.remote, e.tm = r, &timedMember{Member: r}
	sink := &stepSink{on: e.record}
	settings, err := trainer.Resolve(c)
	if err != nil {
		return err
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(e.tm), Log: logr.New(sink)})
	if err != nil {
		return err
	}
	e.release, e.records, e.done = make(chan struct{}), make(chan espoStep), make(chan error, 1)
	go func() {
		<-e.release
		rep, err := tr.Run(context.Background())
		if err == nil && rep.Outcome != trainingv1alpha1.OutcomeCompleted {
			err = fmt.Errorf("outcome %s: %s", rep.Outcome, rep.Message)
		}
		e.done <- err
	}()
	return nil
}

// record is the trainer's "step" log line: the step's figures go to the benchmark,
// and the trainer waits for its next turn.
func (e *espoSide) record(kv map[string]any) {
	end := time.Now()
	var st workerStats
	var ph phaseStats
	err := readJSON(e.stats, &st)
	if err == nil {
		err = readJSON(e.phases, &ph)
	}
	if err != nil {
		e.logErr = err
	}
	client := e.tm.total()
	calls := map[string]float64{}
	for _, c := range trainingCalls {
		calls[c] = st.Calls[c].Seconds - e.last.Calls[c].Seconds
	}
	enc := map[string]int{}
	for k, v := range ph.Encoded {
		enc[k] = v - e.lastPhases.Encoded[k]
	}
	x := espoStep{
		Seconds: end.Sub(e.turnStart).Seconds(), TrainerSeconds: num(kv["stepSeconds"]),
		ClientSeconds: (client - e.lastClient).Seconds(), WorkerSeconds: st.busy() - e.last.busy(), Calls: calls,
		GeneratedTokens: st.GeneratedTokens - e.last.GeneratedTokens, TrainedTokens: st.TrainedTokens - e.last.TrainedTokens,
		Encoded: enc, Scoring: ph.ScoringSeconds - e.lastPhases.ScoringSeconds,
		Engine: ph.EngineSeconds - e.lastPhases.EngineSeconds, Push: ph.PushSeconds - e.lastPhases.PushSeconds,
		Pushes: ph.Pushes, EnginePromptTokens: ph.EnginePromptTokens - e.lastPhases.EnginePromptTokens,
		GradNorm: num(kv["gradNorm"]), MeanReward: num(kv["meanStepReward"]), SamplerMismatch: math.NaN(),
	}
	if v, ok := kv["samplerMismatch"]; ok {
		x.SamplerMismatch = num(v)
	}
	e.threads = ph.Threads
	e.last, e.lastPhases, e.lastClient = st, ph, client
	e.records <- x
	<-e.release
}

func (e *espoSide) turn() error {
	e.turnStart = time.Now()
	e.release <- struct{}{}
	select {
	case x := <-e.records:
		if e.logErr != nil {
			return fmt.Errorf("reading the worker's stats: %w", e.logErr)
		}
		e.steps = append(e.steps, x)
		return nil
	case err := <-e.done:
		return fmt.Errorf("the run ended before its step: %v", err)
	}
}

func (e *espoSide) finish() error {
	e.release <- struct{}{}
	if err := <-e.done; err != nil {
		return err
	}
	e.trainedOK = true
	e.prompts, e.candidates = e.tm.prompts, e.tm.candidates
	_, err := e.remote.Client().Save(context.Background(), &workerpb.SaveRequest{Path: e.state})
	return err
}

func (e *espoSide) column() column {
	c := column{name: e.name, cells: map[string]string{}}
	m := e.median
	step := m(espoSeconds)
	frac := func(f func(espoStep) float64) float64 { return m(func(x espoStep) float64 { return f(x) / x.Seconds }) }
	cell := func(f func(espoStep) float64) string { return share(m(f), frac(f)) }
	call := func(name string) func(espoStep) float64 { return func(x espoStep) float64 { return x.Calls[name] } }
	c.cells["step"] = f3(step)
	c.cells["sample"] = cell(func(x espoStep) float64 { return x.Calls["Generate"] - x.Scoring })
	if e.engine == trainingv1alpha1.RolloutVLLM {
		c.cells["push"] = cell(func(x espoStep) float64 { return x.Push })
		c.cells["engine_tokens"] = f0(m(func(x espoStep) float64 { return float64(x.EnginePromptTokens) })) + " (n=G)"
		c.cells["mismatch"] = fmt.Sprintf("%.2e", m(func(x espoStep) float64 { return x.SamplerMismatch }))
	}
	c.cells["score"] = cell(func(x espoStep) float64 { return x.Scoring })
	c.cells["reference"] = cell(call("LogProbs"))
	c.cells["backward"] = cell(call("Backward"))
	c.cells["optimizer"] = cell(func(x espoStep) float64 { return x.Calls["Step"] + x.Calls["Gradients"] })
	c.cells["outside"] = cell(func(x espoStep) float64 { return x.Seconds - x.WorkerSeconds })
	c.cells["protocol"] = cell(func(x espoStep) float64 { return x.ClientSeconds - x.WorkerSeconds })
	c.cells["reward"] = "(in Go)"
	c.cells["prompts"] = fmt.Sprintf("%d / %d", e.prompts, e.candidates)
	gtok := m(func(x espoStep) float64 { return float64(x.GeneratedTokens) })
	c.cells["generated"] = f0(gtok)
	c.cells["ms_token"] = f3(1000 * step / gtok)
	enc := func(k string) float64 { return m(func(x espoStep) float64 { return float64(x.Encoded[k]) }) }
	c.cells["encoded"] = f0(m(func(x espoStep) float64 {
		var n int
		for _, v := range x.Encoded {
			n += v
		}
		return float64(n)
	}))
	if e.engine == trainingv1alpha1.RolloutVLLM {
		c.cells["enc_sample"] = "(in vLLM)"
	} else {
		c.cells["enc_sample"] = f0(enc("Generate"))
	}
	c.cells["enc_score"] = f0(enc("Scoring"))
	c.cells["enc_reference"] = f0(enc("LogProbs"))
	c.cells["enc_loss"] = f0(enc("Backward"))
	c.cells["reward_mean"] = f3(m(func(x espoStep) float64 { return x.MeanReward }))
	c.cells["gradnorm"] = f3(m(func(x espoStep) float64 { return x.GradNorm }))
	c.cells["moved"] = fmt.Sprintf("%.2e", e.moved)
	c.cells["batching"] = "a prompt's G a call"
	return c
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

// startBenchWorker starts the torch worker (bench/worker.py) on CPU with the
// benchmark's thread count, recording its per-call seconds in stats and its counters
// in phases, and returns its address; the process is stopped at the end of the
// benchmark.
func startBenchWorker(b *testing.B, s benchSettings, dir, stats, phases string) string {
	token := filepath.Join(dir, "worker-token")
	if err := os.WriteFile(token, []byte(workertest.Token), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "bench.worker", "--listen", "127.0.0.1:0", "--device", "cpu",
		"--drain-quiet", "0.5", "--token-file", token, "--allow-path", dir)
	cmd.Env = append(benchEnv(s), "ESPO_WORKER_STATS="+stats, "ESPO_BENCH_PHASES="+phases)
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

func (m *timedMember) Backward(ctx context.Context, items []worker.Weighted) (worker.Backwarded, error) {
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
