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

import "k8s.io/apimachinery/pkg/types"

// RunConfig is the resolved run configuration of a trainer: the ESPOJob's spec with
// every default applied, and where the trainer finds its data, workers and
// checkpoints. The controller writes it, as YAML under the key RunConfigKey, into the
// job's ConfigMap, which is mounted into every trainer pod; "espo trainer --config FILE"
// reads it. It is a file format, not a stored resource.
type RunConfig struct {
	// Job names the ESPOJob the trainer reports to; empty when run standalone.
	// +optional
	Job JobRef `json:"job,omitempty"`
	// Spec is the job's spec. Defaults are applied on load.
	Spec ESPOJobSpec `json:"spec"`
	// DataRoot is the folder under which PVC and ConfigMap dataset sources are
	// mounted, one sub-folder per source name: <dataRoot>/<source name>/<path>.
	// +optional
	DataRoot string `json:"dataRoot,omitempty"`
	// CheckpointDir is where checkpoints go; empty disables them.
	// +optional
	CheckpointDir string `json:"checkpointDir,omitempty"`
	// ExportDir is the folder spec.export replaces with the Hugging Face export of
	// the trained policy; empty when the job exports nothing.
	// +optional
	ExportDir string `json:"exportDir,omitempty"`
	// Workers are the addresses (host:port) of remote policy workers that the trainer
	// drives besides its own spec.trainer.workersPerReplica in-process CPU workers.
	// +optional
	Workers []string `json:"workers,omitempty"`
	// InitialCheckpoint is the folder of a checkpoint written by an earlier run
	// (spec.model.initialCheckpoint, mounted): the policy starts from its weights
	// when this run has no checkpoint of its own yet.
	// +optional
	InitialCheckpoint string `json:"initialCheckpoint,omitempty"`
	// OutputDir receives the final report, report.json.
	// +optional
	OutputDir string `json:"outputDir,omitempty"`
	// Provenance is what the operator knows of the run's provenance: its version and
	// the images it runs the trainer and the workers with. The trainer adds the rest
	// and reports it in status.training.provenance.
	// +optional
	Provenance RunProvenance `json:"provenance,omitempty"`
}

// JobRef identifies an ESPOJob.
type JobRef struct {
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// UID is the job's metadata.uid: the trainer binds its checkpoints to it, so that
	// a job recreated under the same name does not resume the old job's checkpoints.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// The environment variables of the trainer container that hold the MLflow tracking
// server's credentials when spec.tracking.mlflow.credentialsSecret is set: the
// controller fills them from the Secret's keys token, username and password
// (valueFrom.secretKeyRef, each optional), the names MLflow's own clients read.
const (
	MLflowTokenEnv    = "MLFLOW_TRACKING_TOKEN"
	MLflowUsernameEnv = "MLFLOW_TRACKING_USERNAME"
	MLflowPasswordEnv = "MLFLOW_TRACKING_PASSWORD"
)

// RunConfigKey is the ConfigMap key that holds the RunConfig.
const RunConfigKey = "run.yaml"

// EmbedderAPIKeyEnv is the environment variable of the trainer container that holds
// the embedding service's API key when spec.rewards.intent.embedder.apiKeySecretRef
// is set: the controller fills it from that Secret (valueFrom.secretKeyRef), and the
// trainer reads it, so that the key is in neither the run config nor the status.
const EmbedderAPIKeyEnv = "ESPO_EMBEDDER_API_KEY"

// The contract between the controller, the trainer and the workers about the worker
// token and the folders a worker may save to and load from.
const (
	// WorkerTokenFileEnv names the file with the job's worker token, set in the
	// trainer container (which sends it) and in every worker container (which
	// demands it).
	WorkerTokenFileEnv = "ESPO_WORKER_TOKEN_FILE"
	// WorkerTokenLength is the length of a worker token: 32 random bytes in
	// hexadecimal.
	WorkerTokenLength = 64
	// WorkerPathsEnv lists, separated by colons, the folders a worker container may
	// save to and load from.
	WorkerPathsEnv = "ESPO_WORKER_PATHS"
)

// InitialCheckpointMountPath is where spec.model.initialCheckpoint's claim is mounted,
// read-only, in every container that hosts policy workers.
const InitialCheckpointMountPath = "/initial-checkpoint"

// ModelsMountPath is where spec.model.weights is mounted in the worker containers.
const ModelsMountPath = "/models"
