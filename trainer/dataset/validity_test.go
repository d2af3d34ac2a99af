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

package dataset_test

import (
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// validityEpisodes is the size of the validity sample: 100 episodes per channel.
const validityEpisodes = 600

func generate(t testing.TB, difficulty string, seed uint64) []dataset.Episode {
	t.Helper()
	eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: validityEpisodes, Seed: seed, Difficulty: difficulty})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// recAcc is the share of recommend steps whose label decide(episode, step index)
// gives.
func recAcc(eps []dataset.Episode, decide func(ep *dataset.Episode, j int) string) float64 {
	right, n := 0, 0
	for i := range eps {
		ep := &eps[i]
		for j := range ep.Steps {
			if ep.Steps[j].Stage != dataset.StageRecommend {
				continue
			}
			n++
			if decide(ep, j) == ep.Steps[j].Answer.InputText {
				right++
			}
		}
	}
	return float64(right) / float64(n)
}

func evidenceRule(ep *dataset.Episode, j int) string {
	return cpu.EvidenceRule(worker.PromptFromStep(ep, j))
}

func oracle(ep *dataset.Episode, j int) string { return dataset.OracleDecision(ep, &ep.Steps[j]) }

// TestHardDataDefeatsTheEvidenceRule is the validity check of hard data, on all
// six channels: the no-weights evidence rule, which reads every structural
// revelation right, scores at most 70% RecAcc on hard data (and at least 95% on
// standard data, where it is the shortcut), while the oracle that knows the
// preferences scores at least 95% on hard data.
func TestHardDataDefeatsTheEvidenceRule(t *testing.T) {
	hard, standard := generate(t, dataset.DifficultyHard, 31), generate(t, dataset.DifficultyStandard, 31)
	ruleHard, ruleStd, oracleHard := recAcc(hard, evidenceRule), recAcc(standard, evidenceRule), recAcc(hard, oracle)
	t.Logf("evidence rule RecAcc: standard %.3f, hard %.3f; oracle on hard %.3f", ruleStd, ruleHard, oracleHard)
	if ruleHard > 0.70 {
		t.Errorf("evidence rule scores %.3f on hard data, want at most 0.70", ruleHard)
	}
	if ruleStd < 0.95 {
		t.Errorf("evidence rule scores %.3f on standard data, want at least 0.95 (the shortcut hard data removes)", ruleStd)
	}
	if oracleHard < 0.95 {
		t.Errorf("oracle scores %.3f on hard data, want at least 0.95", oracleHard)
	}
	if o := recAcc(standard, oracle); o != 1 {
		t.Errorf("oracle scores %.3f on standard data, want 1 (no label noise)", o)
	}
}

// TestHardTemplateOnlyIntentFails checks that the wording of a hard requirement
// does not pass for it: the requirement with every preference value deleted
// reaches cosine 0.75 (IntentAcc's tau) under the hashed embedder for at most 5%
// of the episodes.
func TestHardTemplateOnlyIntentFails(t *testing.T) {
	emb := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	req, tmpl := make([]float64, emb.Dim()), make([]float64, emb.Dim())
	pass := func(eps []dataset.Episode) float64 {
		n := 0
		for i := range eps {
			emb.Embed(req, eps[i].Requirement)
			emb.Embed(tmpl, dataset.TemplateOnly(eps[i].Requirement, eps[i].Preferences))
			if espo.Cosine(req, tmpl) >= 0.75 {
				n++
			}
		}
		return float64(n) / float64(len(eps))
	}
	hard, standard := pass(generate(t, dataset.DifficultyHard, 32)), pass(generate(t, dataset.DifficultyStandard, 32))
	t.Logf("template-only intent passes at tau 0.75: standard %.3f, hard %.3f", standard, hard)
	if hard > 0.05 {
		t.Errorf("template-only intent passes %.3f of hard requirements, want at most 0.05", hard)
	}
}
