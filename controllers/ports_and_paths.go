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

// Ports, mount paths and file names shared by the pod and the run config.
const (
	// WorkerPort is the port a worker container serves the worker protocol on.
	WorkerPort = 50051
	// DriverPort is the port rank 0 listens on for its workers and tools.
	DriverPort = 29500
	// TrainerMetricsPort is where "espo trainer" serves its Prometheus metrics
	// (its --metrics-bind-address default), declared on the trainer container as
	// "metrics" so a PodMonitor can name it.
	TrainerMetricsPort = 9090
	// ConfigDir is where the job's ConfigMap is mounted.
	ConfigDir = "/etc/espo"
	// DataRoot is where each dataset source is mounted, one folder per source name.
	DataRoot = "/data"
	// CheckpointMountPath is where the checkpoint claim is mounted (rank 0 only).
	CheckpointMountPath = "/checkpoints"
	// ExportMountPath is where the claim of spec.export is mounted (rank 0 only).
	ExportMountPath = "/export"
	// OutputDir is the writable folder for the trainer's final report.
	OutputDir = "/var/run/espo/output"
)
