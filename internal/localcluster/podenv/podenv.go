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

// Package podenv names the variables the process node (internal/localcluster) puts
// into the environment of every process it starts, for the process to read. It
// imports nothing, so that a command reading them (espo trainer) does not link the
// process node.
package podenv

// PodRoot names the pod's file tree in every process's environment.
const PodRoot = "ESPO_POD_ROOT"

// TerminationMessagePath names, in every process's environment, the file the
// container's termination message goes to: its own, created empty before each run
// as kubelet creates the file it mounts at the container's terminationMessagePath.
const TerminationMessagePath = "ESPO_TERMINATION_MESSAGE_PATH"
