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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// recorded, lived and served are the datasets of the jobs below: synthetic
// episodes, the simulated app, and an environment server (its endpoint follows).
const (
	recorded = "datasets:\n    sources:\n    - name: s\n      synthetic: {}"
	lived    = "datasets:\n    environment:\n      simulated: {}"
	served   = "datasets:\n    environment:\n      endpoint: "
)

// acceptedEdges are jobs just inside the rules of the invalid corpus that share
// their fields: each must be accepted, so that a rule drawn too wide (an IPv6 host
// refused, a GPU count written as a string misread, a patience equal to the
// evaluations refused) fails here. The spec below "spec:" of each.
var acceptedEdges = map[string]string{
	// HostPort: DNS names, IPv4 and bracketed IPv6, ports 1 and 65535.
	"endpoint-ipv6": served + "{address: \"[fd00::1]:65535\"}\n  algorithm: {sftEpochs: 0}",
	"endpoint-fqdn": served + "{address: \"smartspot-env.ml.svc.cluster.local:1\", slots: {cuisine: [thai, \"dim sum\"]}}\n  algorithm: {sftEpochs: 0}",
	"worker-ipv4":   recorded + "\n  model: {worker: external, endpoint: \"10.0.0.7:50051\"}",
	// Claim-relative paths: nested folders under weights; any path without weights.
	"pretrained-nested-under-weights": recorded + "\n  model: {worker: cuda, weights: {claimName: models}, pretrained: Qwen/Qwen2.5-VL-3B-Instruct}\n  rewards: {intent: {embedder: {worker: {model: encoders/all-MiniLM-L6-v2}}}}",
	"pretrained-absolute-in-image":    recorded + "\n  model: {worker: cuda, pretrained: /opt/models/Qwen2.5-VL-3B-Instruct}",
	// Twice 10.5 s is 21 s: a deadline of 22 s is more.
	"deadline-over-twice-a-fraction": recorded + "\n  trainer: {statusInterval: 10.5s}\n  runPolicy: {progressDeadlineSeconds: 22}",
	// A GPU for every worker, written as a number and as a string; no GPU at all (a
	// cuda worker on the CPU, as the local mode runs it).
	"gpus-as-number": recorded + "\n  model: {worker: cuda, pretrained: m}\n  trainer: {workersPerReplica: 2, resources: {limits: {nvidia.com/gpu: 2}}}",
	"gpus-as-string": recorded + "\n  model: {worker: cuda, pretrained: m}\n  trainer: {workersPerReplica: 2, resources: {limits: {nvidia.com/gpu: \"4\"}}}",
	"no-gpus":        recorded + "\n  model: {worker: cuda, pretrained: m}\n  trainer: {workersPerReplica: 4}",
	// The sampler correction off anywhere, on where another engine samples.
	"correction-off":      recorded + "\n  model: {worker: cuda, pretrained: m}\n  algorithm: {samplerCorrection: {cap: \"0\"}}",
	"correction-external": recorded + "\n  model: {worker: external, endpoint: \"w:1\"}\n  algorithm: {samplerCorrection: {cap: \"2\"}}",
	// Early stopping that can act on its last evaluation.
	"patience-every-evaluation":  recorded + "\n  algorithm: {sftEpochs: 1, epochs: 3}\n  earlyStopping: {target: {metric: recommendationAccuracy, value: \"0.8\"}, minReward: \"-1\", patience: 3}",
	"stopping-validation-source": recorded + "\n    - name: v\n      split: validation\n      synthetic: {seed: 1}\n    split: {train: \"0.9\", validation: \"0\", test: \"0.1\"}\n  earlyStopping: {minReward: \"-1\"}",
	// The intent judge's fields where they apply; an environment with its defaults.
	"slots-with-f1":        recorded + "\n  rewards: {intent: {match: slots, slotScore: f1}}",
	"embedding-threshold":  recorded + "\n  rewards: {intent: {match: embedding, threshold: \"0.7\"}}",
	"environment-defaults": lived + "\n    split: {}\n  rewards: {intent: {match: slots, slotScore: f1}}",
	// An export beside the checkpoints, and on another claim than a source of the
	// same path.
	"export-beside-checkpoints": recorded + "\n    - name: d\n      persistentVolumeClaim: {claimName: data, path: models/run-1}\n  model: {worker: cuda, pretrained: m}\n  checkpoint: {persistentVolumeClaim: {claimName: runs, path: checkpoints/run-1}}\n  export: {persistentVolumeClaim: {claimName: runs, path: models/run-1}}",
	"export-prefix-not-folder":  recorded + "\n  model: {worker: cuda, pretrained: m}\n  checkpoint: {persistentVolumeClaim: {claimName: runs, path: run-10}}\n  export: {persistentVolumeClaim: {claimName: runs, path: run-1}}",
	"flash-in-bfloat16":         recorded + "\n  model: {worker: cuda, pretrained: m, dtype: bfloat16, attnImplementation: flash_attention_3}",
	// Tracking: every run-name variable, an https URI with a path, port and query;
	// TensorBoard in a nested folder whose name starts like a checkpoint's.
	"tracking-every-variable": recorded + "\n  checkpoint: {persistentVolumeClaim: {claimName: runs}}\n  tracking: {mlflow: {trackingURI: \"https://mlflow.example.com:8443/tracking?tenant=ml\", experiment: \"GUI agents/ESPO\", runName: \"{namespace}/{name}-{algorithm}-{uid}\", credentialsSecret: {name: mlflow-credentials}}, tensorboard: {path: tb/step-1}}",
	"tracking-mlflow-only":    recorded + "\n  tracking: {mlflow: {trackingURI: \"http://10.0.0.9:5000\"}}",
}

// TestAcceptedEdges creates every job of acceptedEdges and expects each accepted.
func TestAcceptedEdges(t *testing.T) {
	ns := namespace(t)
	for name, spec := range acceptedEdges {
		t.Run(name, func(t *testing.T) {
			manifest := fmt.Sprintf("apiVersion: training.espo.dev/v1alpha1\nkind: ESPOJob\nmetadata:\n  name: %s\nspec:\n  %s\n", name, spec)
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
				t.Fatalf("%v in\n%s", err, manifest)
			}
			u.SetNamespace(ns)
			if err := env.Client.Create(context.Background(), u, strict); err != nil {
				t.Fatalf("refused: %v\n%s", err, strings.TrimSpace(manifest))
			}
		})
	}
}
