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
	"k8s.io/apimachinery/pkg/api/meta"
)

// IsSuspended reports whether the job's spec asks for it to be suspended.
func (j *ESPOJob) IsSuspended() bool { return j.Spec.RunPolicy.Suspend }

// IsFinished reports whether the job has succeeded or failed: its Succeeded or Failed
// condition is True.
func (j *ESPOJob) IsFinished() bool {
	return meta.IsStatusConditionTrue(j.Status.Conditions, ConditionSucceeded) ||
		meta.IsStatusConditionTrue(j.Status.Conditions, ConditionFailed)
}
