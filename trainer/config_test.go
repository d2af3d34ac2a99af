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
	"os"
	"path/filepath"
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
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
	c, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(c)
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
	c, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil || c.Spec.Rewards.Intent.Embedder != nil {
		t.Fatalf("without one: embedder %+v, %v; want none (the built-in embedder)", c.Spec.Rewards.Intent.Embedder, err)
	}
	c, err = LoadConfig(writeConfig(t, minimalConfig+"  rewards: {intent: {embedder: {endpoint: 'http://embeddings.ml.svc:8080/v1/embeddings'}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := trainingv1alpha1.EmbedderSpec{Endpoint: "http://embeddings.ml.svc:8080/v1/embeddings", TimeoutSeconds: 30, BatchSize: 256}
	if got := c.Spec.Rewards.Intent.Embedder; got == nil || *got != want {
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

func TestLoadSplitsCutsByEpisodeDeterministically(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := LoadSplits(c, [3]float64{0.8, 0.1, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := LoadSplits(c, [3]float64{0.8, 0.1, 0.1})
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
	s, err := LoadSplits(c, [3]float64{0.8, 0.1, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 3 || len(s.Validation) != 3 || len(s.Test) != 0 {
		t.Errorf("split sizes %d/%d/%d, want 3/3/0", len(s.Train), len(s.Validation), len(s.Test))
	}
}
