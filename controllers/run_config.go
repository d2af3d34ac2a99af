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

package controllers

import (
	"fmt"
	"path"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// buildRunConfig resolves the job into the trainer's run config: the job's name and
// UID (which the trainer binds its checkpoints to), its spec with every default
// applied, where the datasets, checkpoints, export and output are mounted, the addresses of
// the remote policy workers, and prov, the operator's part of the run's provenance.
// spec.runPolicy.suspend is left out (false): it is not the trainer's business, and
// suspending must not rewrite the config.
func buildRunConfig(job *trainingv1alpha1.ESPOJob, prov trainingv1alpha1.RunProvenance) *trainingv1alpha1.RunConfig {
	spec := job.Spec.DeepCopy()
	spec.Default()
	spec.RunPolicy.Suspend = false
	rc := &trainingv1alpha1.RunConfig{
		Job:        trainingv1alpha1.JobRef{Namespace: job.Namespace, Name: job.Name, UID: job.UID},
		Spec:       *spec,
		DataRoot:   DataRoot,
		Workers:    workerAddresses(job),
		OutputDir:  OutputDir,
		Provenance: prov,
	}
	if spec.Checkpoint != nil {
		rc.CheckpointDir = path.Join(CheckpointMountPath, spec.Checkpoint.PersistentVolumeClaim.Path)
	}
	if e := spec.Export; e != nil {
		rc.ExportDir = path.Join(ExportMountPath, e.PersistentVolumeClaim.Path)
	}
	if ic := spec.Model.InitialCheckpoint; ic != nil {
		rc.InitialCheckpoint = path.Join(trainingv1alpha1.InitialCheckpointMountPath, ic.Path)
	}
	return rc
}

// workerAddresses are the policy workers rank 0 drives besides its in-process ones:
// the worker container of every other rank, reached through the headless Service as
// <pod hostname>.<service>.<namespace>.svc:<port>, and with cuda also rank 0's own
// worker container on localhost. A cuda worker container runs one worker process per
// GPU, spec.trainer.workersPerReplica of them on ports WorkerPort, WorkerPort+1, ...
func workerAddresses(job *trainingv1alpha1.ESPOJob) []string {
	var addrs []string
	perPod := workerProcesses(job)
	if job.Spec.Model.Worker == trainingv1alpha1.WorkerCUDA {
		for k := range perPod {
			addrs = append(addrs, fmt.Sprintf("localhost:%d", WorkerPort+k))
		}
	}
	for rank := int32(1); rank < replicas(job); rank++ {
		for k := range perPod {
			addrs = append(addrs, fmt.Sprintf("%s:%d", podFQDN(job, rank), WorkerPort+k))
		}
	}
	return addrs
}

// workerProcesses is the number of worker processes (and ports) of a worker
// container: spec.trainer.workersPerReplica with cuda, one per GPU; else 1.
func workerProcesses(job *trainingv1alpha1.ESPOJob) int32 {
	if job.Spec.Model.Worker != trainingv1alpha1.WorkerCUDA {
		return 1
	}
	return max(job.Spec.Trainer.WorkersPerReplica, 1)
}

// podFQDN is the DNS name of a rank's pod through the job's headless Service.
func podFQDN(job *trainingv1alpha1.ESPOJob, rank int32) string {
	return fmt.Sprintf("%s.%s.%s.svc", podName(job, rank), serviceName(job), job.Namespace)
}

// replicas is the number of trainer pods (at least 1, whether or not defaulted).
func replicas(job *trainingv1alpha1.ESPOJob) int32 { return max(job.Spec.Trainer.Replicas, 1) }

// runProvenance is the operator's part of a job's provenance: its version and the
// images of the job's trainer and worker containers (none for an external worker,
// which the job does not run).
func runProvenance(job *trainingv1alpha1.ESPOJob, o Options) trainingv1alpha1.RunProvenance {
	p := trainingv1alpha1.RunProvenance{OperatorVersion: o.OperatorVersion, TrainerImage: trainerImage(job, o.PodOptions)}
	if job.Spec.Model.Worker != trainingv1alpha1.WorkerExternal {
		p.WorkerImage = workerImage(job, o.PodOptions)
	}
	return p
}

// runConfigYAML is the job's run config (buildRunConfig) as YAML, as the ConfigMap
// holds it. It fails only if the config cannot be marshalled.
func runConfigYAML(job *trainingv1alpha1.ESPOJob, prov trainingv1alpha1.RunProvenance) (string, error) {
	raw, err := yaml.Marshal(buildRunConfig(job, prov))
	if err != nil {
		return "", fmt.Errorf("marshalling the run config: %w", err)
	}
	return string(raw), nil
}

// desiredConfigMap is the ConfigMap that holds the job's run config, runConfig (see
// runConfigYAML), under trainingv1alpha1.RunConfigKey.
func desiredConfigMap(job *trainingv1alpha1.ESPOJob, runConfig string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(configMapName(job), job.Namespace).
		WithLabels(jobLabels(job)).WithOwnerReferences(controllerRef(job)).
		WithData(map[string]string{trainingv1alpha1.RunConfigKey: runConfig})
}

// runConfigMemo keeps the run config of each job the controller reconciles, as YAML,
// for the job's UID and generation: the config depends only on the job's identity
// and spec, and marshalling it on every reconcile was a quarter of the controller's
// allocations at scale. Entries are dropped when a job finishes or is gone.
type runConfigMemo struct {
	mu    sync.Mutex
	byJob map[types.NamespacedName]memoizedRunConfig
}

// memoizedRunConfig is a job's run config as YAML, for the job's UID and generation.
type memoizedRunConfig struct {
	uid        types.UID
	generation int64
	yaml       string
}

// yaml returns the job's run config as YAML (runConfigYAML), marshalled again only
// if the job's UID or generation changed since the last call (prov, which follows
// from the spec and the operator's options, changes with them).
func (m *runConfigMemo) yaml(job *trainingv1alpha1.ESPOJob, prov trainingv1alpha1.RunProvenance) (string, error) {
	key := client.ObjectKeyFromObject(job)
	m.mu.Lock()
	e, ok := m.byJob[key]
	m.mu.Unlock()
	if ok && e.uid == job.UID && e.generation == job.Generation {
		return e.yaml, nil
	}
	raw, err := runConfigYAML(job, prov)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byJob == nil {
		m.byJob = map[types.NamespacedName]memoizedRunConfig{}
	}
	m.byJob[key] = memoizedRunConfig{uid: job.UID, generation: job.Generation, yaml: raw}
	return raw, nil
}

// forget drops the run config of the job of key.
func (m *runConfigMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byJob, key)
}
