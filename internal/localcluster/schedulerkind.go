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

package localcluster

import "fmt"

// SchedulerKind is which scheduler binds the local cluster's pods (the --scheduler
// flag of "espo local up"). It is a pflag.Value.
type SchedulerKind string

const (
	// SchedulerBuiltin is this package's Scheduler: no build, one node's filters, no
	// gangs.
	SchedulerBuiltin SchedulerKind = "builtin"
	// SchedulerKube is a real kube-scheduler of the control plane's release, built on
	// first use, with Kubernetes' PodGroup API and its gang scheduling on.
	SchedulerKube SchedulerKind = "kube"
)

// String is the kind; the zero kind is builtin.
func (k *SchedulerKind) String() string {
	if *k == "" {
		return string(SchedulerBuiltin)
	}
	return string(*k)
}

// Set accepts builtin or kube.
func (k *SchedulerKind) Set(v string) error {
	switch SchedulerKind(v) {
	case SchedulerBuiltin, SchedulerKube:
		*k = SchedulerKind(v)
		return nil
	}
	return fmt.Errorf("%q is not a scheduler: use %s or %s", v, SchedulerBuiltin, SchedulerKube)
}

// Type names the flag's values in the help.
func (k *SchedulerKind) Type() string { return "builtin|kube" }
