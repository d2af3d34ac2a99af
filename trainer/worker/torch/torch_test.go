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
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"github.com/espo-dev/espo-operator/trainer/plan"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// python is the interpreter of the worker's test environment (test/pyenv), set by
// TestMain.
var python string

// TestMain finds (or builds, on first use) the worker's Python environment: the tests
// of this package fail without it rather than skip. The random Hugging Face models
// (randomModel) live in one folder for the test binary, removed at the end.
func TestMain(m *testing.M) {
	p, err := pyenv.Python()
	if err == nil {
		python = p
		err = useEngine()
	}
	if err == nil {
		modelsDir, err = os.MkdirTemp("", "espo-torch-models-")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(modelsDir)
	os.Exit(code)
}

// useEngine sets $ESPO_VLLM_PYTHON, which the worker's vLLM engine and its tests
// (tests/test_rollout.py) read, to the engine environment's python.
func useEngine() error {
	p, err := pyenv.EnginePython()
	if err == nil {
		err = os.Setenv(pyenv.EnvEnginePython, p)
	}
	return err
}

// pyEnv is the environment of the Python processes: one CPU thread for torch (the
// tiny model's operations are too small to share: with two the trainer test took as
// long and a fifth more CPU), no bytecode written into the source tree, and Python's
// fault handler on (a fatal signal such as SIGABRT prints every thread's stack).
func pyEnv() []string {
	return append(os.Environ(), "OMP_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PYTHONFAULTHANDLER=1")
}

var servingRE = regexp.MustCompile(`serving on (\S+):(\d+) `)

// torchWorker is a running torch worker process, as a Member that sends the job's
// token (workertest.Token).
type torchWorker struct {
	*worker.Remote
	addr string
	mu   sync.Mutex
	// stderr is all the process wrote to its standard error, gRPC's own log at debug
	// verbosity included.
	stderr strings.Builder
}

// log returns what the process wrote to its standard error so far.
func (w *torchWorker) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}

// startWorker starts the torch worker with the tiny model on a free loopback port,
// requiring workertest.Token and saving and loading under allowed, and returns it;
// the process is stopped at the end of the test: interrupted, it drains until half a
// second passes without a call (--drain-quiet 0.5; args may set another), where the
// default 60 s would outlast the cleanup's 10 s wait for it to exit.
func startWorker(t testing.TB, allowed string, args ...string) *torchWorker {
	t.Helper()
	return startWorkerEnv(t, nil, allowed, args...)
}

// startWorkerEnv is startWorker with env added to the process's environment.
func startWorkerEnv(t testing.TB, env []string, allowed string, args ...string) *torchWorker {
	t.Helper()
	cmd := exec.Command(python, append([]string{"-m", "espo_worker", "--listen", "127.0.0.1:0", "--model", "tiny",
		"--device", "cpu", "--threads", "4", "--drain-quiet", "0.5", "--token-file", workertest.WriteToken(t), "--allow-path", allowed}, args...)...)
	cmd.Env = append(append(pyEnv(), "GRPC_VERBOSITY=debug"), env...)
	w := &torchWorker{}
	a := serveProcess(t, cmd, func(line string) {
		w.mu.Lock()
		w.stderr.WriteString(line + "\n")
		w.mu.Unlock()
	})
	r, err := worker.Dial(a, nil, workertest.Token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w.Remote, w.addr = r, a
	return w
}

// serveProcess starts cmd, a worker process, and returns the address it says it
// serves on (servingRE, on its standard error); every line of its standard error goes
// to seen and, but that one, to the test's log. The process is interrupted at the end
// of the test and killed if it has not exited 10 s later.
func serveProcess(tb testing.TB, cmd *exec.Cmd, seen func(line string)) string {
	tb.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			seen(line)
			if m := servingRE.FindStringSubmatch(line); m != nil && !sent {
				addr <- m[1] + ":" + m[2]
				sent = true
				continue
			}
			tb.Logf("worker: %s", line)
		}
		if !sent {
			close(addr)
		}
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			tb.Fatal("the torch worker exited before serving")
		}
		return a
	case <-time.After(60 * time.Second):
		tb.Fatal("the torch worker did not start serving within 60s")
	}
	return ""
}

// TestTorchWorkerNeedsTheTokenAndStaysInItsFolder: the worker process refuses every
// method to a caller without the job's token or with another job's, serves the
// token, refuses Save and Load out of its --allow-path folder, and writes no token
// to its standard error, gRPC's debug log included.
func TestTorchWorkerNeedsTheTokenAndStaysInItsFolder(t *testing.T) {
	l := workertest.NewLayout(t)
	w := startWorker(t, l.Allowed)
	tiny := map[string]string{"pretrained": "tiny"}
	workertest.CheckTokenRequired(t, workertest.Conn(t, w.addr), l.Allowed, tiny)
	workertest.CheckConfined(t, w.Client(), l, tiny)
	if log := w.log(); strings.Contains(log, workertest.Token) || strings.Contains(log, workertest.OtherToken) {
		t.Errorf("the worker's standard error holds a token:\n%s", log)
	}
}

// TestTorchWorkerLoadsAnInlineState: ConfigureRequest.state restores a state as its
// file does, and is refused when sent with a load path or when it is no state.
func TestTorchWorkerLoadsAnInlineState(t *testing.T) {
	dir := t.TempDir()
	workertest.CheckInlineState(t, startWorker(t, dir).Client(), dir, map[string]string{"pretrained": "tiny"})
}

// TestTorchWorkerRefusesToStartWithoutAToken: without --token-file (and
// $ESPO_WORKER_TOKEN_FILE) or --insecure-no-auth the worker does not start, and says
// which flag fixes it.
func TestTorchWorkerRefusesToStartWithoutAToken(t *testing.T) {
	cmd := exec.Command(python, "-m", "espo_worker", "--listen", "127.0.0.1:0", "--model", "tiny", "--device", "cpu")
	cmd.Env = append(pyEnv(), worker.EnvTokenFile+"=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--token-file") || !strings.Contains(string(out), "--insecure-no-auth") {
		t.Errorf("the worker without a token: %v: %s; want it to refuse, naming --token-file and --insecure-no-auth", err, out)
	}
}

// TestPythonUnitTests runs the Python package's own tests (tests/test_*.py) with
// pytest, as `python -m pytest` in this folder does. It and the package's longest Go
// tests are parallel tests: they run after the others, two at a time on two cores
// (go test's -parallel, GOMAXPROCS by default), the pytest run beside the Go tests
// one after another, each of which starts its own processes on addresses of its own.
func TestPythonUnitTests(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(python, "-m", "pytest", "-q", "-rs")
	cmd.Env = pyEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m pytest: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte(" skipped")) {
		t.Errorf("pytest skipped tests: every test must run here\n%s", out)
	}
	t.Logf("%s", out)
}

// TestRuffFindsNothing lints the package and its tests with ruff, configured in
// pyproject.toml (make verify runs the same check).
func TestRuffFindsNothing(t *testing.T) {
	cmd := exec.Command(python, "-m", "ruff", "check", "--no-cache", ".")
	cmd.Env = pyEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ruff check: %v\n%s", err, out)
	}
}

// smallRun is a run over a few synthetic episodes, enough for every split to get one:
// one SFT epoch and one ESPO epoch, G = 2, two episodes per batch, with the tiny model.
func smallRun(t *testing.T) *trainer.Config {
	c := &trainer.Config{OutputDir: t.TempDir()}
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "synth",
		Synthetic: &trainingv1alpha1.SyntheticSource{Channels: []trainingv1alpha1.Channel{"food", "hotel"}, Episodes: 10, Seed: 5}}}
	one := int32(1)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: trainingv1alpha1.AlgorithmESPO, SFTEpochs: &one, Epochs: 1, GroupSize: 2,
		EpisodesPerBatch: 2, LearningRate: "0.003", Seed: 7}
	c.Spec.Model = trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "tiny"}
	c.Spec.Default()
	return c
}

// TestTrainerDrivesTheTorchWorker: the Go trainer trains the Python worker over gRPC
// through the SFT cold start and an ESPO epoch to Completed, with finite statistics,
// under each protobuf implementation python offers (pure Python and the compiled one).
func TestTrainerDrivesTheTorchWorker(t *testing.T) {
	for _, impl := range protobufImplementations(t) {
		t.Run(impl, func(t *testing.T) { trainTorchWorker(t, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="+impl) })
	}
}

// trainTorchWorker runs smallRun to Completed on a torch worker with env added to its
// environment, and checks the report and the worker's Info.
func trainTorchWorker(t *testing.T, env ...string) {
	c := smallRun(t)
	w := startWorkerEnv(t, env, c.OutputDir, "--max-new-tokens", "24", "--max-prompt-tokens", "96")
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if rep.Steps < 2 || len(rep.Validation) != 2 || rep.Validation[1].Stage != plan.ESPO {
		t.Fatalf("report %+v: want SFT and ESPO steps, each epoch evaluated", rep)
	}
	info, err := w.Client().Info(context.Background(), &workerpb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Steps != rep.Steps || info.ReducesGradients || info.Parameters == 0 {
		t.Errorf("worker info %v, want %d steps and reduces_gradients false", info, rep.Steps)
	}
	t.Logf("%d steps in %v; model %s, %d parameters", rep.Steps, time.Since(start).Round(time.Millisecond), info.Model, info.Parameters)
}

// episodePrompts returns the prompts of the first steps of a generated episode.
func episodePrompts(t *testing.T, n int) []*workerpb.Prompt {
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"hotel"}, Episodes: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*workerpb.Prompt
	for j := 0; j < n && j < len(eps[0].Steps); j++ {
		ps = append(ps, worker.PromptFromStep(&eps[0], j))
	}
	return ps
}

// demonstrations returns the Backward items of the SFT loss of prompts' answers.
func sft(t *testing.T, ps []*workerpb.Prompt) []*workerpb.Weighted {
	items := make([]*workerpb.Weighted, len(ps))
	for i, p := range ps {
		text := espo.FormatAnswer("", espo.Action{Type: "click", Point: [2]float64{0.5, 0.25}, Text: espo.NoText})
		if p.Stage == workerpb.Stage_STAGE_POOL {
			text = espo.FormatAnswer("", espo.Action{Type: espo.ActionPoolFound, Point: espo.NoPoint, Text: "a quiet hotel"})
		}
		items[i] = &workerpb.Weighted{Prompt: p, Answer: &workerpb.Answer{Text: text}, SequenceWeight: 1 / float64(len(ps))}
	}
	return items
}

// rpcError is what must panics with; fatalOnPanic turns it into t.Fatal.
type rpcError struct{ err error }

// must returns v, or panics with err for fatalOnPanic, deferred by the test, to
// report: so a call and its check fit one expression.
func must[T any](v T, err error) T {
	if err != nil {
		panic(rpcError{err})
	}
	return v
}

func fatalOnPanic(t *testing.T) {
	if r := recover(); r != nil {
		if e, ok := r.(rpcError); ok {
			t.Fatal(e.err)
		}
		panic(r)
	}
}

// configured starts a worker with model ("tiny", or an architecture of randomModel
// in float32), answers of up to maxNew tokens and prompts of up to maxPrompt, saving
// under allowed, and configures it with seed.
func configured(t *testing.T, model string, seed uint64, maxNew, maxPrompt, allowed string) workerpb.WorkerClient {
	w := startWorker(t, allowed, "--max-new-tokens", maxNew, "--max-prompt-tokens", maxPrompt).Client()
	opts := map[string]string{"pretrained": "tiny"}
	if model != "tiny" {
		opts = map[string]string{"pretrained": randomModel(t, model), "dtype": "float32"}
	}
	must(w.Configure(context.Background(), &workerpb.ConfigureRequest{Seed: seed, Options: opts}))
	return w
}

// models are the models the protocol tests train: the tiny GRU, and a causal LM and a
// vision-language model of real Hugging Face architectures (randomModel).
var models = []string{"tiny", "qwen3", "qwen2_5_vl"}

// modelPrompts is episodePrompts for model, each prompt with a screenshot for a
// vision-language model.
func modelPrompts(t *testing.T, model string, n int) []*workerpb.Prompt {
	ps := episodePrompts(t, n)
	if strings.HasSuffix(model, "_vl") {
		shot := screenshot(t, 0)
		for _, p := range ps {
			p.ScreenshotPath = shot
		}
	}
	return ps
}

// TestGenerateLogProbsEqualLogProbs: the log-probs Generate reports are those LogProbs
// returns for the same tokens, and equal the reference's right after a snapshot.
func TestGenerateLogProbsEqualLogProbs(t *testing.T) {
	for _, model := range models {
		t.Run(model, func(t *testing.T) { generateLogProbsEqualLogProbs(t, model) })
	}
}

func generateLogProbsEqualLogProbs(t *testing.T, model string) {
	defer fatalOnPanic(t)
	ctx := context.Background()
	w := configured(t, model, 3, "24", "128", t.TempDir())
	ps := modelPrompts(t, model, 3)
	must(w.Backward(ctx, &workerpb.BackwardRequest{Items: sft(t, ps)}))
	must(w.Step(ctx, &workerpb.StepRequest{LearningRate: 0.01}))
	must(w.SnapshotReference(ctx, &workerpb.SnapshotReferenceRequest{}))
	gen := must(w.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps, Samples: 3, Seed: 42, Temperature: 1.5}))
	again := must(w.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps[1:2], Samples: 3, Seed: 42, Temperature: 1.5}))
	if !proto.Equal(gen.Candidates[1], again.Candidates[0]) {
		t.Errorf("a prompt's candidates depend on its batch: %v vs %v", gen.Candidates[1], again.Candidates[0])
	}
	req := &workerpb.LogProbsRequest{Reference: true}
	var samples []*workerpb.Sample
	for i, c := range gen.Candidates {
		for _, s := range c.Samples {
			req.Items = append(req.Items, &workerpb.Scored{Prompt: ps[i], Answer: s.Answer})
			samples = append(samples, s)
		}
	}
	lp := must(w.LogProbs(ctx, req))
	for i, it := range lp.Items {
		s := samples[i]
		if len(it.Current) != len(s.Logprobs) || len(s.Logprobs) == 0 {
			t.Fatalf("answer %d: %d log-probs from LogProbs, %d from Generate", i, len(it.Current), len(s.Logprobs))
		}
		for k := range it.Current {
			if it.Current[k] != s.Logprobs[k] || it.Reference[k] != s.Logprobs[k] || it.TokenIds[k] != s.Answer.TokenIds[k] {
				t.Fatalf("answer %d token %d: generate %v, logprobs %v, reference %v", i, k, s.Logprobs[k], it.Current[k], it.Reference[k])
			}
		}
	}
	greedy := must(w.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps[:1], Samples: 2, Greedy: true}))
	if !proto.Equal(greedy.Candidates[0].Samples[0], greedy.Candidates[0].Samples[1]) {
		t.Errorf("greedy candidates differ")
	}
}

// objectiveInput is the input of tests/espo_objective.py.
type objectiveInput struct {
	State   string          `json:"state"`
	Prompts []string        `json:"prompts"`
	Items   []objectiveItem `json:"items"`
	Configs []lossConfig    `json:"configs"`
}

type objectiveItem struct {
	Prompt   int       `json:"prompt"`
	TokenIDs []int32   `json:"token_ids"`
	Old      []float64 `json:"old"`
	Adv      float64   `json:"adv"`
}

type lossConfig struct {
	EpsLow   float64 `json:"eps_low"`
	EpsHigh  float64 `json:"eps_high"`
	DualClip float64 `json:"dual_clip"`
	Beta     float64 `json:"beta"`
	KL       string  `json:"kl"`
	Agg      string  `json:"agg"`
}

// TestAppliedGradientIsTheESPOGradient is the cross-language check of the loss
// weights: the gradient the worker accumulates from Backward with the weights of
// espo.LossWeights equals minus the autograd gradient of the ESPO objective J written
// in torch from the formulas (tests/espo_objective.py), for each aggregation and KL
// estimator, with current, sampling and reference policies all different and some
// ratios clipped.
func TestAppliedGradientIsTheESPOGradient(t *testing.T) {
	t.Parallel() // one of the package's longest: see TestPythonUnitTests
	for _, model := range models {
		t.Run(model, func(t *testing.T) { appliedGradientIsTheESPOGradient(t, model) })
	}
}

func appliedGradientIsTheESPOGradient(t *testing.T, model string) {
	defer fatalOnPanic(t)
	ctx := context.Background()
	dir := t.TempDir()
	w := configured(t, model, 5, "16", "96", dir)
	ps := modelPrompts(t, model, 2)
	step := func(lr float64) {
		must(w.Backward(ctx, &workerpb.BackwardRequest{Items: sft(t, ps)}))
		must(w.Step(ctx, &workerpb.StepRequest{LearningRate: lr}))
	}
	step(0.01)
	must(w.SnapshotReference(ctx, &workerpb.SnapshotReferenceRequest{}))
	step(0.01)
	const G = 3
	gen := must(w.Generate(ctx, &workerpb.GenerateRequest{Prompts: ps, Samples: G, Seed: 8}))
	step(0.004) // the policy moves away from the one that sampled
	state := filepath.Join(dir, "state.pt")
	must(w.Save(ctx, &workerpb.SaveRequest{Path: state}))

	in := objectiveInput{State: state}
	for _, p := range ps {
		b := must(proto.Marshal(p))
		in.Prompts = append(in.Prompts, base64.StdEncoding.EncodeToString(b))
	}
	lpReq := &workerpb.LogProbsRequest{Reference: true}
	var samples []*workerpb.Sample
	advs := []float64{1.3, -0.8, 0.4, -1.6, 0.9, -0.2}
	for i, c := range gen.Candidates {
		for g, s := range c.Samples {
			lpReq.Items = append(lpReq.Items, &workerpb.Scored{Prompt: ps[i], Answer: s.Answer})
			samples = append(samples, s)
			in.Items = append(in.Items, objectiveItem{Prompt: i, TokenIDs: s.Answer.TokenIds, Old: s.Logprobs, Adv: advs[i*G+g]})
		}
	}
	lp := must(w.LogProbs(ctx, lpReq))
	var tok espo.Tokens
	for i, it := range lp.Items {
		tok.LogP = append(tok.LogP, it.Current...)
		tok.RefLogP = append(tok.RefLogP, it.Reference...)
		tok.OldLogP = append(tok.OldLogP, samples[i].Logprobs...)
		tok.Lens = append(tok.Lens, len(it.Current))
		tok.Adv = append(tok.Adv, in.Items[i].Adv)
	}
	cfgs := []espo.LossConfig{
		{EpsLow: 0.02, EpsHigh: 0.03, DualClip: 1.05, Beta: 0.05, KL: espo.KLK3, Agg: espo.SeqMeanTokenMean},
		{EpsLow: 0.2, EpsHigh: 0.3, DualClip: 3, Beta: 0.1, KL: espo.KLK2, Agg: espo.TokenMean},
		{EpsLow: 0.01, EpsHigh: 0.01, Beta: 0.2, KL: espo.KLK1, Agg: espo.SeqMeanTokenSum},
	}
	type got struct {
		grad      []float32
		objective float64
		clip      float64
	}
	var gots []got
	for _, cfg := range cfgs {
		in.Configs = append(in.Configs, lossConfig{cfg.EpsLow, cfg.EpsHigh, cfg.DualClip, cfg.Beta, string(cfg.KL), string(cfg.Agg)})
		weights := make([]float64, len(tok.LogP))
		ls := must(espo.LossWeights(weights, tok, cfg))
		// A fresh accumulator: Load restores the saved state without a gradient.
		must(w.Load(ctx, &workerpb.LoadRequest{Path: state}))
		req := &workerpb.BackwardRequest{}
		off := 0
		for i, it := range lpReq.Items {
			n := len(lp.Items[i].Current)
			req.Items = append(req.Items, &workerpb.Weighted{Prompt: it.Prompt, Answer: it.Answer, TokenWeights: weights[off : off+n]})
			off += n
		}
		must(w.Backward(ctx, req))
		g := must(w.Gradients(ctx, &workerpb.GradientsRequest{}))
		gots = append(gots, got{g.Gradient, ls.Objective, ls.ClipFrac})
	}

	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b := must(json.Marshal(in))
	if err := os.WriteFile(inPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "tests.espo_objective", inPath, outPath)
	cmd.Env = pyEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tests/espo_objective.py: %v\n%s", err, out)
	}
	var res struct {
		Results []struct {
			Objective float64   `json:"objective"`
			Grad      []float64 `json:"grad"`
		} `json:"results"`
	}
	if err := json.Unmarshal(must(os.ReadFile(outPath)), &res); err != nil {
		t.Fatal(err)
	}
	for k, r := range res.Results {
		g := gots[k]
		name := fmt.Sprintf("%s/%s", cfgs[k].Agg, cfgs[k].KL)
		if math.Abs(r.Objective-g.objective) > 1e-6*(1+math.Abs(r.Objective)) {
			t.Errorf("%s: J in torch %v, espo.LossWeights %v", name, r.Objective, g.objective)
		}
		if len(r.Grad) != len(g.grad) {
			t.Fatalf("%s: %d gradient values from torch, %d from the worker", name, len(r.Grad), len(g.grad))
		}
		// The worker's gradient is that of the loss -J.
		var diff, norm float64
		for i := range r.Grad {
			d := float64(g.grad[i]) + r.Grad[i]
			diff, norm = diff+d*d, norm+r.Grad[i]*r.Grad[i]
		}
		rel := math.Sqrt(diff / norm)
		if norm == 0 || rel > 1e-4 {
			t.Errorf("%s: |g_worker + dJ/dtheta| / |dJ/dtheta| = %.3g (|dJ/dtheta| = %.3g), want < 1e-4", name, rel, math.Sqrt(norm))
		}
		t.Logf("%s: J %.6g, clipped %.2f of tokens, relative gradient difference %.2g", name, r.Objective, g.clip, rel)
	}
	if gots[0].clip == 0 {
		t.Errorf("no ratio clipped with eps 0.02/0.03: the check does not cover the clipped branches")
	}
}
