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
	"context"
	"fmt"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// The bounds a test bed must meet before any arm is read: a rule with no weights
// must fail, an oracle must pass, and a template must not pass as an intent.
const (
	maxRuleRecAcc      = 0.70
	minOracleRecAcc    = 0.95
	maxTemplateIntents = 0.05
)

// validity is what the checks of one seed measured on its own users (the test
// channels, a stream of users no arm sees).
type validity struct {
	Seed     int64 `json:"seed"`
	Episodes int   `json:"episodes"`
	// Majority is the share of the more frequent label of the recommendation steps.
	Majority float64 `json:"majority"`
	// Rule is the RecAcc of the feature policy's evidence rule, Oracle that of a
	// rule that knows the user's preferences.
	Rule   float64 `json:"rule"`
	Oracle float64 `json:"oracle"`
	// TemplateSlots and TemplateEmbedding are the shares of requirements with every
	// preference value deleted that pass as intents, judged slot by slot and by the
	// hashed embedding at tau 0.75.
	TemplateSlots     float64 `json:"templateSlots"`
	TemplateEmbedding float64 `json:"templateEmbedding"`
	// TemplateEncoder is the same share judged by the -encoder's embeddings at its
	// tau, with one (omitted without).
	TemplateEncoder *float64 `json:"templateEncoder,omitempty"`
}

// ok reports whether the checks hold.
func (v validity) ok() bool {
	return v.Rule <= maxRuleRecAcc && v.Oracle >= minOracleRecAcc && v.TemplateSlots <= maxTemplateIntents
}

func (v validity) summary() string {
	verdict := "holds"
	if !v.ok() {
		verdict = "FAILS"
	}
	byEncoder := ""
	if v.TemplateEncoder != nil {
		byEncoder = fmt.Sprintf(", %.1f%% by the encoder", 100*(*v.TemplateEncoder))
	}
	return fmt.Sprintf("majority %.1f%%, rule %.1f%% (<= %.0f%%), oracle %.1f%% (>= %.0f%%), template intent %.1f%% by slots (<= %.0f%%), %.1f%% by hashed embedding%s: %s",
		100*v.Majority, 100*v.Rule, 100*maxRuleRecAcc, 100*v.Oracle, 100*minOracleRecAcc,
		100*v.TemplateSlots, 100*maxTemplateIntents, 100*v.TemplateEmbedding, byEncoder, verdict)
}

// checkValidity measures the checks of a seed on o.validityEpisodes users of the
// test channels, drawn from a stream of their own; with judge, the template intents
// are judged by its encoder too.
func checkValidity(ctx context.Context, o options, seed int64, judge *encoderJudge) (validity, error) {
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: o.testChannels, Episodes: o.validityEpisodes,
		Seed: uint64(seed*10 + 4), Difficulty: string(o.difficulty)})
	if err != nil {
		return validity{}, err
	}
	yes := recAcc(eps, alwaysYes)
	v := validity{Seed: seed, Episodes: len(eps), Majority: max(yes, 1-yes),
		Rule: recAcc(eps, evidenceRule), Oracle: recAcc(eps, oracle)}
	var pools, slots, embedded int
	var templates, requirements []string
	vocab := dataset.SlotVocab(eps)
	emb := espo.NewHashEmbedder(espo.DefaultEmbeddingDim)
	tau := espo.DefaultRewardConfig().Tau
	for e := range eps {
		ep := &eps[e]
		for j := range ep.Steps {
			s := &ep.Steps[j]
			if s.Stage != dataset.StagePool {
				continue
			}
			pools++
			template := dataset.TemplateOnly(s.Answer.InputText, ep.Preferences)
			if espo.MatchSlots(template, ep.Preferences, vocab).Right {
				slots++
			}
			if similarity(emb, template, s.Answer.InputText) >= tau {
				embedded++
			}
			templates, requirements = append(templates, template), append(requirements, s.Answer.InputText)
		}
	}
	v.TemplateSlots, v.TemplateEmbedding = frac(slots, pools), frac(embedded, pools)
	if judge != nil {
		passed, err := judge.passing(ctx, templates, requirements)
		if err != nil {
			return validity{}, err
		}
		share := frac(passed, pools)
		v.TemplateEncoder = &share
	}
	return v, nil
}

func frac(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// similarity is the cosine of the hashed embeddings of two texts.
func similarity(emb *espo.HashEmbedder, a, b string) float64 {
	x, y := make([]float64, emb.Dim()), make([]float64, emb.Dim())
	emb.Embed(x, a)
	emb.Embed(y, b)
	return espo.Cosine(x, y)
}
