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

package v1alpha1

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecimalFloat64(t *testing.T) {
	for _, tc := range []struct {
		in   Decimal
		want float64
		ok   bool
	}{
		{"0.5", 0.5, true}, {"-0.2", -0.2, true}, {"+0.3", 0.3, true}, {"1e-6", 1e-6, true},
		{"5E-07", 5e-7, true}, {"3", 3, true}, {"1.0e+2", 100, true}, {"-00.5", -0.5, true},
		{"", 0, false}, {"NaN", 0, false}, {"Inf", 0, false}, {".5", 0, false}, {"5.", 0, false},
		{"0x1p-2", 0, false}, {"1e400", 0, false}, {"1_000", 0, false}, {" 1", 0, false},
	} {
		got, err := tc.in.Float64()
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Decimal(%q).Float64() = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestNewDecimalRoundTrips(t *testing.T) {
	for _, v := range []float64{0, 0.1, -0.2, 1e-6, 1.5e-5, 3, 1.0 / 3, -123456.789, 9.99e99, -1e-99} {
		d := NewDecimal(v)
		got, err := d.Float64()
		if err != nil || got != v {
			t.Errorf("NewDecimal(%v) = %q, which parses to %v, %v", v, d, got, err)
		}
	}
	for v, want := range map[float64]Decimal{math.NaN(): "", math.Inf(1): "", math.Inf(-1): "", 1e100: "", math.SmallestNonzeroFloat64: "0"} {
		if d := NewDecimal(v); d != want {
			t.Errorf("NewDecimal(%v) = %q, want %q", v, d, want)
		}
	}
}

func TestNewMetric(t *testing.T) {
	for v, want := range map[float64]Decimal{
		2.0 / 7: "0.286", 0: "0.000", 1: "1.000", 0.9995: "1.000", -0.125: "-0.125", -0.0001: "0.000",
		12.34567: "12.346", math.NaN(): "", math.Inf(1): "",
	} {
		if got := NewMetric(v); got != want {
			t.Errorf("NewMetric(%v) = %q, want %q", v, got, want)
		}
		if want != "" && !decimalPattern.MatchString(string(want)) {
			t.Errorf("NewMetric(%v) = %q does not match the Decimal pattern", v, want)
		}
	}
}

func TestDefaultIsIdempotentAndKeepsSetValues(t *testing.T) {
	zero := int32(0)
	s := ESPOJobSpec{
		Datasets:  Datasets{Sources: []DatasetSource{{Name: "s", Synthetic: &SyntheticSource{Episodes: 7}}}},
		Algorithm: AlgorithmSpec{SFTEpochs: &zero, LearningRate: "1e-3"},
		RunPolicy: RunPolicy{BackoffLimit: &zero},
		Model:     ModelSpec{CPU: &CPUPolicySpec{}},
		Rewards:   RewardsSpec{Intent: IntentRewards{Embedder: &EmbedderSpec{Endpoint: "http://embeddings.ml.svc", BatchSize: 8}}},
	}
	s.Default()
	once := *s.DeepCopy()
	s.Default()
	if !reflect.DeepEqual(once, s) {
		t.Errorf("Default is not idempotent")
	}
	if *s.Algorithm.SFTEpochs != 0 || *s.RunPolicy.BackoffLimit != 0 || s.Algorithm.LearningRate != "1e-3" || s.Datasets.Sources[0].Synthetic.Episodes != 7 {
		t.Errorf("Default overwrote set values: %+v", s)
	}
	if s.Algorithm.GroupSize != 5 || s.Rewards.Intent.Correct != "0.5" || s.Model.CPU.HiddenSize != 32 || s.Trainer.Replicas != 1 {
		t.Errorf("Default left fields unset: %+v", s)
	}
	if e := s.Rewards.Intent.Embedder; e.BatchSize != 8 || e.TimeoutSeconds != 30 {
		t.Errorf("embedder defaulted to %+v, want batch size 8 kept and timeout 30", e)
	}
	var none ESPOJobSpec
	none.Default()
	if none.Rewards.Intent.Embedder != nil {
		t.Errorf("Default made an embedder: %+v", none.Rewards.Intent.Embedder)
	}
	if none.Model.Rollout != nil || none.Algorithm.SamplerCorrection != nil {
		t.Errorf("Default made a rollout section %+v or a sampler correction %+v", none.Model.Rollout, none.Algorithm.SamplerCorrection)
	}
	vllm := ESPOJobSpec{Model: ModelSpec{Worker: WorkerCUDA, Rollout: &RolloutSpec{Engine: RolloutVLLM, MaxModelLen: 8192}}}
	vllm.Default()
	if r := vllm.Model.Rollout; r.Engine != RolloutVLLM || r.MaxModelLen != 8192 || r.GPUMemoryUtilization != "" || r.CPUKVCacheGiB != 0 || r.EnforceEager != nil {
		t.Errorf("Default changed the rollout section to %+v: the engine's settings are the worker's defaults", r)
	}
	empty := ESPOJobSpec{Model: ModelSpec{Worker: WorkerCUDA, Rollout: &RolloutSpec{}}}
	empty.Default()
	if empty.Model.Rollout.Engine != RolloutHuggingFace {
		t.Errorf("an empty rollout section defaults to engine %q, want huggingface", empty.Model.Rollout.Engine)
	}
}

// TestCRDMatchesGo holds the generated CRD to the Go constants that repeat its rules.
func TestCRDMatchesGo(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/training.espo.dev_espojobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := string(data)
	if want := fmt.Sprintf("size(self.metadata.name) <= %d", MaxNameLength); !strings.Contains(crd, want) {
		t.Errorf("the CRD has no rule %q", want)
	}
	_, embedder, _ := strings.Cut(crd, " embedder:\n")
	embedder, _, _ = strings.Cut(embedder, "- endpoint\n") // the end of its properties
	for field, max := range map[string]int{"batchSize": MaxEmbedderBatchSize, "timeoutSeconds": MaxEmbedderTimeoutSeconds} {
		bound := regexp.MustCompile(`(?s)\s` + field + `:\n.*?maximum: (\d+)`).FindStringSubmatch(embedder)
		if bound == nil || bound[1] != fmt.Sprint(max) {
			t.Errorf("the CRD's embedder.%s maximum is %v, the Go constant %d", field, bound, max)
		}
	}
	decimalish := regexp.MustCompile(`\^\[-\+\]\?\[0-9\]\+[^'\s]*`)
	uses := decimalish.FindAllString(crd, -1)
	if len(uses) < 20 {
		t.Fatalf("found %d uses of the Decimal pattern in the CRD, want every Decimal field's", len(uses))
	}
	for _, u := range uses {
		if u != decimalPattern.String() {
			t.Errorf("the CRD has the decimal pattern %q, the Go code %q", u, decimalPattern.String())
		}
	}
}

func TestBoundMessage(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantLen int
	}{
		"short":           {in: "ok", wantLen: 2},
		"long ascii":      {in: strings.Repeat("x", 5000), wantLen: MaxConditionMessageLength},
		"long multi-byte": {in: strings.Repeat("é", 3000), wantLen: MaxConditionMessageLength - 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BoundMessage(tc.in)
			if len(got) != tc.wantLen || !utf8.ValidString(got) {
				t.Errorf("len %d (valid UTF-8: %v), want %d", len(got), utf8.ValidString(got), tc.wantLen)
			}
		})
	}
}

// TestIntentTauFollowsTheJudge: an unset threshold is 0.80 with the workers' sentence
// encoder and 0.75 with the built-in embedder or an embedding service; a set one wins.
func TestIntentTauFollowsTheJudge(t *testing.T) {
	worker := &EmbedderSpec{Worker: &WorkerEmbedderSpec{Model: "all-MiniLM-L6-v2"}}
	service := &EmbedderSpec{Endpoint: "http://embeddings.ml.svc:8080/v1/embeddings"}
	for _, tc := range []struct {
		r    IntentRewards
		want Decimal
	}{
		{IntentRewards{}, "0.75"},
		{IntentRewards{Embedder: service}, "0.75"},
		{IntentRewards{Embedder: worker}, "0.80"},
		{IntentRewards{Embedder: worker, Threshold: "0.7"}, "0.7"},
	} {
		if got := tc.r.Tau(); got != tc.want {
			t.Errorf("Tau of %+v = %s, want %s", tc.r, got, tc.want)
		}
	}
}

// TestSamplerCorrectionCap: the cap set wins; unset, it is "2" with the vllm engine
// and "0" (off) with huggingface, named or left unset.
func TestSamplerCorrectionCap(t *testing.T) {
	vllm := ModelSpec{Worker: WorkerCUDA, Rollout: &RolloutSpec{Engine: RolloutVLLM}}
	hf := ModelSpec{Worker: WorkerCUDA, Rollout: &RolloutSpec{Engine: RolloutHuggingFace}}
	for _, tc := range []struct {
		name  string
		model ModelSpec
		corr  *SamplerCorrectionSpec
		want  Decimal
	}{
		{"vllm, unset", vllm, nil, "2"},
		{"vllm, empty section", vllm, &SamplerCorrectionSpec{}, "2"},
		{"vllm, off", vllm, &SamplerCorrectionSpec{Cap: "0"}, "0"},
		{"vllm, 5", vllm, &SamplerCorrectionSpec{Cap: "5"}, "5"},
		{"huggingface named, unset", hf, nil, "0"},
		{"no rollout section, unset", ModelSpec{Worker: WorkerCUDA}, nil, "0"},
		{"huggingface, set for an external worker's sampler", ModelSpec{Worker: WorkerExternal}, &SamplerCorrectionSpec{Cap: "3"}, "3"},
	} {
		a := AlgorithmSpec{SamplerCorrection: tc.corr}
		if got := a.SamplerCorrectionCap(tc.model.Engine()); got != tc.want {
			t.Errorf("%s: cap %q, want %q", tc.name, got, tc.want)
		}
	}
	var m ModelSpec
	if m.Engine() != RolloutHuggingFace {
		t.Errorf("an unset engine is %q, want huggingface", m.Engine())
	}
}

// TestResumeOnAnotherSize: a resume is on another size only when the checkpoint's
// writers are known and differ from the workers that loaded it; its description
// counts both in words.
func TestResumeOnAnotherSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *ResumeStatus
		want bool
	}{
		{"none", nil, false},
		{"the writers unknown", &ResumeStatus{Step: 4, Workers: 2}, false},
		{"the same size", &ResumeStatus{Step: 4, WrittenBy: 2, Workers: 2}, false},
		{"more workers", &ResumeStatus{Step: 4, WrittenBy: 1, Workers: 2}, true},
		{"fewer workers", &ResumeStatus{Step: 4, WrittenBy: 16, Workers: 8}, true},
	} {
		if got := tc.r.OnAnotherSize(); got != tc.want {
			t.Errorf("%s: OnAnotherSize() = %v, want %v", tc.name, got, tc.want)
		}
	}
	got := (&ResumeStatus{Step: 12, WrittenBy: 1, Workers: 2}).Describe()
	if want := "resumed from the checkpoint of step 12, written by 1 worker, on 2 workers: training goes on from its weights"; !strings.HasPrefix(got, want) {
		t.Errorf("Describe() = %q, want it to begin %q", got, want)
	}
}

func TestShardsIsSplittingTheModel(t *testing.T) {
	for s, want := range map[ModelSharding]bool{"": false, ShardingReplicated: false, ShardingSharded: true, ShardingHybrid: true} {
		if got := (&ModelSpec{Sharding: s}).Shards(); got != want {
			t.Errorf("sharding %q: Shards() = %v, want %v", s, got, want)
		}
	}
}
