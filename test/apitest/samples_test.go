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

package apitest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// The samples' files, one per scenario the issue asks for; TestSamples fails on a
// sample that is missing or not listed.
var sampleFiles = []string{
	"training_v1alpha1_espojob_environment.yaml",
	"training_v1alpha1_espojob_gpu.yaml",
	"training_v1alpha1_espojob_minimal.yaml",
	"training_v1alpha1_espojob_pvc.yaml",
}

// documentedDefaults are the defaults the Go doc comments promise, read back raw from
// what the server stored for the minimal sample (which sets none of them, except
// learningRate). Numbers come back as int64, decimals as the exact default string.
var documentedDefaults = map[string]any{
	"datasets.sources[0].split":                 "all",
	"datasets.sources[0].synthetic.channels":    []any{"food", "hotel", "flight", "movie", "travel"},
	"datasets.split.train":                      "0.8",
	"datasets.split.validation":                 "0.1",
	"datasets.split.test":                       "0.1",
	"datasets.split.seed":                       int64(0),
	"model.worker":                              "cpu",
	"model.cpu.architecture":                    "features", // the whole cpu section, as spec.model is left out
	"model.cpu.hiddenSize":                      int64(32),
	"model.cpu.featureBits":                     int64(15),
	"model.cpu.maxIntentWords":                  int64(40),
	"algorithm.name":                            "espo",
	"algorithm.sftEpochs":                       int64(1),
	"algorithm.epochs":                          int64(6),
	"algorithm.groupSize":                       int64(5),
	"algorithm.episodesPerBatch":                int64(1),
	"algorithm.maxGradNorm":                     "1.0",
	"algorithm.samplingTemperature":             "1.0",
	"algorithm.clip.low":                        "0.2",
	"algorithm.clip.high":                       "0.3",
	"algorithm.clip.dual":                       "3.0",
	"algorithm.kl.coefficient":                  "0.01",
	"algorithm.kl.estimator":                    "k3",
	"algorithm.lossAggregation":                 "seq-mean-token-mean",
	"algorithm.seed":                            int64(0),
	"algorithm.optimizer.beta1":                 "0.9",
	"algorithm.optimizer.beta2":                 "0.999",
	"algorithm.optimizer.epsilon":               "1e-8",
	"algorithm.optimizer.weightDecay":           "0.01",
	"algorithm.optimizer.warmupSteps":           int64(0),
	"algorithm.optimizer.schedule":              "constant",
	"rewards.format":                            "0.5",
	"rewards.gui.exact":                         "0.5",
	"rewards.gui.typeOnly":                      "0.2",
	"rewards.gui.valueOnly":                     "-0.2",
	"rewards.gui.wrong":                         "-0.5",
	"rewards.gui.textF1Threshold":               "0.5",
	"rewards.intent.correct":                    "0.5",
	"rewards.intent.threshold":                  nil, // the judge's own: IntentRewards.Tau
	"rewards.intent.embedder":                   nil, // the built-in embedder unless a service is named
	"rewards.decision.correct":                  "0.5",
	"rewards.decision.wrong":                    "-0.5",
	"rewards.cout.temperature":                  "1.0",
	"rewards.cout.weight":                       "1.0",
	"rewards.cout.mode":                         "episode",
	"rewards.cout.gates":                        "both",
	"rewards.cout.emptyGate":                    "0.5",
	"trainer.replicas":                          int64(1),
	"trainer.workersPerReplica":                 int64(1),
	"runPolicy.suspend":                         false,
	"runPolicy.backoffLimit":                    int64(3),
	"runPolicy.maxDisruptions":                  nil,    // unset: no limit
	"algorithm.learningRate":                    "1e-3", // set by the sample: not overwritten
	"datasets.sources[0].synthetic.episodes":    int64(100),
	"datasets.sources[0].synthetic.seed":        int64(1),
	"datasets.sources[0].name":                  "smartspot",
	"datasets.sources[0].persistentVolumeClaim": nil, // exactly one source kind, not defaulted
}

// TestSamples creates every sample in config/samples and checks that the server stored
// exactly what v1alpha1's Go defaulting makes of the same file: so the CRD defaults and
// ESPOJobSpec.Default agree, field for field, on every sample.
func TestSamples(t *testing.T) {
	got, err := filepath.Glob(filepath.Join(env.RepoRoot, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f))
	}
	if fmt.Sprint(names) != fmt.Sprint(sampleFiles) {
		t.Fatalf("config/samples holds %v, want %v", names, sampleFiles)
	}
	ns := namespace(t)
	for _, f := range got {
		t.Run(filepath.Base(f), func(t *testing.T) {
			u := readManifest(t, f)
			u.SetNamespace(ns)
			if err := env.Client.Create(context.Background(), u, strict); err != nil {
				t.Fatalf("refused: %v", err)
			}
			var stored trainingv1alpha1.ESPOJob
			if err := env.Scheme.Convert(u, &stored, nil); err != nil {
				t.Fatal(err)
			}

			var want trainingv1alpha1.ESPOJob
			data, _ := yaml.Marshal(readManifest(t, f).Object)
			if err := yaml.UnmarshalStrict(data, &want); err != nil {
				t.Fatalf("the sample does not decode strictly into ESPOJob: %v", err)
			}
			want.Spec.Default()
			if !equality.Semantic.DeepEqual(stored.Spec, want.Spec) {
				t.Errorf("server defaults and Go defaults differ (-server +Go):\n%s", diff.Diff(stored.Spec, want.Spec))
			}
		})
	}
}

// TestDocumentedDefaults checks every documented default on the minimal sample, raw.
func TestDocumentedDefaults(t *testing.T) {
	ns := namespace(t)
	u := readManifest(t, filepath.Join(env.RepoRoot, "config", "samples", "training_v1alpha1_espojob_minimal.yaml"))
	u.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), u, strict); err != nil {
		t.Fatal(err)
	}
	raw := getRaw(t, ns, u.GetName())
	for path, want := range documentedDefaults {
		got, _ := lookup(raw.Object["spec"], path)
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("spec.%s = %#v, want %#v", path, got, want)
		}
	}
}

// TestEmbedderDefaults names an embedding service with its endpoint alone and reads
// back the documented defaults, raw, and the same through the Go types and Default.
func TestEmbedderDefaults(t *testing.T) {
	ns := namespace(t)
	u := readManifest(t, filepath.Join(env.RepoRoot, "config", "samples", "training_v1alpha1_espojob_minimal.yaml"))
	u.SetNamespace(ns)
	if err := unstructured.SetNestedField(u.Object, map[string]any{"endpoint": "http://embeddings.ml.svc:8080/v1/embeddings"},
		"spec", "rewards", "intent", "embedder"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), u, strict); err != nil {
		t.Fatalf("refused: %v", err)
	}
	raw := getRaw(t, ns, u.GetName())
	want := map[string]any{"endpoint": "http://embeddings.ml.svc:8080/v1/embeddings", "timeoutSeconds": int64(30), "batchSize": int64(256)}
	if got, _ := lookup(raw.Object["spec"], "rewards.intent.embedder"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored embedder %v, want %v", got, want)
	}
	goDefaulted := trainingv1alpha1.EmbedderSpec{Endpoint: "http://embeddings.ml.svc:8080/v1/embeddings"}
	goDefaulted.Default()
	var stored trainingv1alpha1.ESPOJob
	if err := env.Scheme.Convert(raw, &stored, nil); err != nil {
		t.Fatal(err)
	}
	if got := stored.Spec.Rewards.Intent.Embedder; got == nil || *got != goDefaulted {
		t.Errorf("server defaults %+v, Go defaults %+v", got, goDefaulted)
	}
}

// lookup follows a dotted path with [i] list indexes through decoded JSON.
func lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			fmt.Sscanf(part[i:], "[%d]", &idx)
			part = part[:i]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
		if idx >= 0 {
			l, ok := v.([]any)
			if !ok || idx >= len(l) {
				return nil, false
			}
			v = l[idx]
		}
	}
	return v, true
}
