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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/experience"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const minimalConfig = `
spec:
  datasets:
    sources:
    - name: synth
      synthetic: {channels: [food, hotel], episodes: 20, seed: 7}
`

func TestLoadConfigAppliesThePaperDefaults(t *testing.T) {
	r, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	if r.Rewards != espo.DefaultRewardConfig() {
		t.Errorf("rewards = %+v, want the paper's %+v", r.Rewards, espo.DefaultRewardConfig())
	}
	if r.Advantage != espo.DefaultAdvantageConfig() {
		t.Errorf("advantage = %+v, want %+v", r.Advantage, espo.DefaultAdvantageConfig())
	}
	if want := espo.DefaultLossConfig(); r.Loss != want {
		t.Errorf("loss = %+v, want %+v", r.Loss, want)
	}
	if r.LearningRate != 1e-6 || r.Split != [3]float64{0.8, 0.1, 0.1} {
		t.Errorf("learning rate %v split %v, want 1e-6 and 8:1:1", r.LearningRate, r.Split)
	}
}

func TestLoadConfigDefaultsTheEmbedder(t *testing.T) {
	s, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil || s.Config.Spec.Rewards.Intent.Embedder != nil {
		t.Fatalf("without one: embedder %+v, %v; want none (the built-in embedder)", s.Config.Spec.Rewards.Intent.Embedder, err)
	}
	s, err = LoadConfig(writeConfig(t, minimalConfig+"  rewards: {intent: {embedder: {endpoint: 'http://embeddings.ml.svc:8080/v1/embeddings'}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := trainingv1alpha1.EmbedderSpec{Endpoint: "http://embeddings.ml.svc:8080/v1/embeddings", TimeoutSeconds: 30, BatchSize: 256}
	if got := s.Config.Spec.Rewards.Intent.Embedder; got == nil || *got != want {
		t.Errorf("embedder %+v, want %+v", got, want)
	}
}

func TestLoadConfigNamesTheBadField(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown field": {minimalConfig + "bogus: 1\n", `unknown field "bogus"`},
		"bad decimal":   {minimalConfig + "  rewards: {format: 'half'}\n", "spec.rewards.format"},
		"bad tau":       {minimalConfig + "  rewards: {intent: {threshold: '1.5'}}\n", "spec.rewards"},
		"bad clip":      {minimalConfig + "  algorithm: {clip: {low: '2'}}\n", "spec.algorithm"},
		"embedder without a scheme": {minimalConfig + "  rewards: {intent: {embedder: {endpoint: 'embeddings.ml.svc:8080'}}}\n",
			`spec.rewards.intent.embedder.endpoint: "embeddings.ml.svc:8080" is not an http or https URL with a host`},
		"embedder timeout": {minimalConfig + "  rewards: {intent: {embedder: {endpoint: 'http://embeddings.ml.svc', timeoutSeconds: 601}}}\n",
			"spec.rewards.intent.embedder.timeoutSeconds: 601 not in [1, 600]"},
		"embedder API key without a key": {minimalConfig + "  rewards: {intent: {embedder: {endpoint: 'http://embeddings.ml.svc', apiKeySecretRef: {name: embeddings}}}}\n",
			"spec.rewards.intent.embedder.apiKeySecretRef: name and key are required"},
		"embedder batch size": {minimalConfig + "  rewards: {intent: {embedder: {endpoint: 'http://embeddings.ml.svc', batchSize: -1}}}\n",
			"spec.rewards.intent.embedder.batchSize: -1 not in [1, 2048]"},
		"embedder with neither endpoint nor worker": {minimalConfig + "  rewards: {intent: {embedder: {timeoutSeconds: 5}}}\n",
			"spec.rewards.intent.embedder: set exactly one of endpoint (an embedding service) and worker"},
		"embedder worker with an API key": {minimalConfig + "  model: {worker: cuda, pretrained: m}\n  rewards: {intent: {embedder: {worker: {model: e}, apiKeySecretRef: {name: s, key: k}}}}\n",
			"spec.rewards.intent.embedder: model and apiKeySecretRef are an embedding service's"},
		"embedder worker with the CPU policy": {minimalConfig + "  rewards: {intent: {embedder: {worker: {model: e}}}}\n",
			"spec.rewards.intent.embedder.worker needs spec.model.worker cuda or external"},
		"LoRA dropout not a decimal": {minimalConfig + "  model: {worker: cuda, pretrained: m, lora: {rank: 8, dropout: 'some'}}\n",
			`spec.model.lora.dropout: v1alpha1: "some" is not a decimal`},
		"LoRA dropout of 1": {minimalConfig + "  model: {worker: cuda, pretrained: m, lora: {rank: 8, dropout: '1.0'}}\n",
			"spec.model.lora.dropout: 1 must be at least 0 and less than 1"},
		"LoRA dropout below 0": {minimalConfig + "  model: {worker: cuda, pretrained: m, lora: {rank: 8, dropout: '-0.1'}}\n",
			"spec.model.lora.dropout: -0.1 must be at least 0 and less than 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadConfig error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestSamplerCorrectionCapResolves: spec.algorithm.samplerCorrection.cap reaches the
// loss as ISCap: 2 by default with the vllm engine, 0 with huggingface, the value set
// otherwise; a cap below 1 is refused, naming the field.
func TestSamplerCorrectionCapResolves(t *testing.T) {
	const cuda = "  model: {worker: cuda, pretrained: m, rollout: {engine: %s}}\n"
	for _, tc := range []struct {
		yaml string
		want float64
	}{
		{minimalConfig, 0},
		{minimalConfig + fmt.Sprintf(cuda, "vllm"), 2},
		{minimalConfig + fmt.Sprintf(cuda, "huggingface"), 0},
		{minimalConfig + fmt.Sprintf(cuda, "vllm") + "  algorithm: {samplerCorrection: {cap: '0'}}\n", 0},
		{minimalConfig + fmt.Sprintf(cuda, "vllm") + "  algorithm: {samplerCorrection: {cap: '5'}}\n", 5},
		{minimalConfig + "  algorithm: {samplerCorrection: {cap: '1.5'}}\n", 1.5},
	} {
		r, err := LoadConfig(writeConfig(t, tc.yaml))
		if err != nil || r.Loss.ISCap != tc.want {
			t.Errorf("%s: ISCap %v, %v; want %v", tc.yaml, r.Loss.ISCap, err, tc.want)
		}
	}
	for cap, want := range map[string]string{"0.5": "importance-sampling cap 0.5 must be 0 (off) or at least 1", "two": "spec.algorithm.samplerCorrection.cap"} {
		_, err := LoadConfig(writeConfig(t, minimalConfig+"  algorithm: {samplerCorrection: {cap: '"+cap+"'}}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cap %s: %v, want an error naming %q", cap, err, want)
		}
	}
}

// TestRolloutRulesWithoutTheAPIServer: a run config that breaks a rule of
// spec.model.rollout, spec.model.sharding or the model folders the API server applies (one that never
// passed through it) fails New with the ConfigInvalid outcome, naming the field: a
// restart would meet it again.
func TestRolloutRulesWithoutTheAPIServer(t *testing.T) {
	yes := true
	for name, tc := range map[string]struct {
		model trainingv1alpha1.ModelSpec
		want  string
	}{
		"vllm with the cpu policy": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCPU,
			Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM}},
			"spec.model.rollout.engine: vllm runs only beside the PyTorch worker, not with spec.model.worker cpu"},
		"vllm with an external worker": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerExternal, Endpoint: "w:1",
			Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM}},
			"not with spec.model.worker external: set worker: cuda, or remove rollout"},
		"a vllm setting with huggingface": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
			Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutHuggingFace, EnforceEager: &yes}},
			"settings of the vllm engine, which the huggingface engine would ignore"},
		"all of the GPU and more": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
			Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, GPUMemoryUtilization: "1.5"}},
			"spec.model.rollout.gpuMemoryUtilization: 1.5 must be greater than 0 and at most 1"},
		"a context shorter than a prompt with the default answer": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
			MaxPromptTokens: 1000, Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, MaxModelLen: 1255}},
			"spec.model.rollout.maxModelLen: 1255 is below maxPromptTokens + maxNewTokens = 1256"},
		"sharding with the cpu policy": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCPU, Sharding: trainingv1alpha1.ShardingSharded},
			"spec.model.sharding: sharded splits the project's PyTorch workers' model among them, and spec.model.worker is cpu"},
		"hybrid sharding with an external worker": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerExternal, Endpoint: "w:1",
			Sharding: trainingv1alpha1.ShardingHybrid}, "spec.model.sharding: hybrid splits the project's PyTorch workers' model among them, and spec.model.worker is external: set worker: cuda, or remove sharding"},
		"an absolute model folder under weights": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "/models/m",
			Weights: &trainingv1alpha1.VolumePath{ClaimName: "models"}},
			`spec.model.pretrained: "/models/m": with spec.model.weights it is a folder inside the weights claim's path`},
		"a model folder climbing out of weights": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "hub/../../m",
			Weights: &trainingv1alpha1.VolumePath{ClaimName: "models", Path: "hub"}},
			`spec.model.pretrained: "hub/../../m": with spec.model.weights`},
		"a CPU KV cache beyond 1024 GiB": {trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m",
			Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, CPUKVCacheGiB: 2048}},
			"spec.model.rollout.cpuKVCacheGiB: 2048 not in [1, 1024]"},
	} {
		t.Run(name, func(t *testing.T) {
			c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
			c.Spec.Model = tc.model
			c.Spec.Default()
			_, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
				t.Errorf("New: %v (outcome %q); want ConfigInvalid naming %q", err, PermanentOutcome(err), tc.want)
			}
		})
	}
	ok := trainingv1alpha1.ModelSpec{Worker: trainingv1alpha1.WorkerCUDA, Pretrained: "m", MaxPromptTokens: 1000, MaxNewTokens: 100,
		Rollout: &trainingv1alpha1.RolloutSpec{Engine: trainingv1alpha1.RolloutVLLM, GPUMemoryUtilization: "1", MaxModelLen: 1100}}
	if err := checkRollout(&ok); err != nil {
		t.Errorf("a vllm engine at every bound refused: %v", err)
	}
}

func TestLoadSplitsCutsByEpisodeDeterministically(t *testing.T) {
	s, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	s1, err := loadSplits(c, [3]float64{0.8, 0.1, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := loadSplits(c, [3]float64{0.8, 0.1, 0.1})
	if len(s1.Train) != 16 || len(s1.Validation) != 2 || len(s1.Test) != 2 {
		t.Fatalf("split sizes %d/%d/%d, want 16/2/2", len(s1.Train), len(s1.Validation), len(s1.Test))
	}
	seen := map[string]bool{}
	for i, set := range [][]dataset.Episode{s1.Train, s1.Validation, s1.Test} {
		other := [][]dataset.Episode{s2.Train, s2.Validation, s2.Test}[i]
		for j := range set {
			if set[j].ID != other[j].ID {
				t.Errorf("split %d differs between loads at %d: %s vs %s", i, j, set[j].ID, other[j].ID)
			}
			if seen[set[j].ID] {
				t.Errorf("episode %s is in two splits", set[j].ID)
			}
			seen[set[j].ID] = true
		}
	}
}

func TestLoadSplitsReadsExplicitSplitsFromFiles(t *testing.T) {
	root := t.TempDir()
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"movie"}, Episodes: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"train", "val"} {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		f, _ := os.Create(filepath.Join(dir, "a.jsonl"))
		for i := range eps {
			dataset.WriteEpisode(f, &eps[i])
		}
		f.Close()
	}
	c := &Config{DataRoot: root, Spec: trainingv1alpha1.ESPOJobSpec{Datasets: trainingv1alpha1.Datasets{Sources: []trainingv1alpha1.DatasetSource{
		{Name: "train", Split: trainingv1alpha1.SplitTrain, ConfigMap: &trainingv1alpha1.ConfigMapSource{Name: "cm"}},
		{Name: "val", Split: trainingv1alpha1.SplitValidation, PersistentVolumeClaim: &trainingv1alpha1.VolumePath{ClaimName: "pvc", Path: "a.jsonl"}},
	}}}}
	c.Spec.Default()
	s, err := loadSplits(c, [3]float64{0.8, 0.1, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 3 || len(s.Validation) != 3 || len(s.Test) != 0 {
		t.Errorf("split sizes %d/%d/%d, want 3/3/0", len(s.Train), len(s.Validation), len(s.Test))
	}
}

// loadSplits loads the datasets of c as the trainer does.
func loadSplits(c *Config, fractions [3]float64) (*experience.Splits, error) {
	return experience.LoadSplits(c.DataRoot, c.Spec.Datasets.Sources, fractions, uint64(c.Spec.Datasets.Split.Seed))
}
