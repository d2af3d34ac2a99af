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

// GangPolicy names the gang scheduler the trainer pods are a gang of.
// +kubebuilder:validation:Enum=none;podGroup;coscheduling;volcano
type GangPolicy string

const (
	// GangNone schedules each trainer pod on its own.
	GangNone GangPolicy = "none"
	// GangPodGroup uses Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1, the
	// GenericWorkload feature, off by default): the controller creates the PodGroup
	// with a gang policy of minCount replicas and sets each pod's
	// spec.schedulingGroup.podGroupName.
	GangPodGroup GangPolicy = "podGroup"
	// GangCoscheduling uses the scheduler-plugins coscheduling plugin: a PodGroup
	// (scheduling.x-k8s.io/v1alpha1) with minMember replicas and minResources the sum
	// of the pods' requests, named by each pod's label scheduling.x-k8s.io/pod-group.
	// Set schedulerName to the scheduler that runs the plugin.
	GangCoscheduling GangPolicy = "coscheduling"
	// GangVolcano uses Volcano: a PodGroup (scheduling.volcano.sh/v1beta1) with
	// minMember replicas, minResources the sum of the pods' requests, the queue and
	// the priority class, named by each pod's annotation scheduling.k8s.io/group-name;
	// the pods' schedulerName defaults to volcano.
	GangVolcano GangPolicy = "volcano"
)

// SchedulingSpec says how the trainer pods are scheduled together. Like the rest of
// spec.trainer it may change only while the job is suspended; the PodGroup is then
// recreated from the new spec on resume.
// +kubebuilder:validation:XValidation:rule="has(self.gang) && self.gang == 'volcano' || !has(self.queue)",message="queue may be set only when gang is volcano: it names a Volcano queue",fieldPath=".queue"
type SchedulingSpec struct {
	// Gang is the gang scheduler whose PodGroup makes the trainer pods a gang of
	// minimum size spec.trainer.replicas: none (default), podGroup (Kubernetes'
	// scheduling.k8s.io PodGroup), coscheduling (scheduler-plugins) or volcano.
	// The cluster must serve the PodGroup kind of the policy; if it does not, the
	// job reports Created=False with the reason PodGroupUnavailable and creates no
	// pods.
	// +optional
	// +kubebuilder:default=none
	Gang GangPolicy `json:"gang,omitempty"`

	// Queue is the Volcano queue of the PodGroup (gang volcano only). Default:
	// Volcano's default queue.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self != ''",message="queue must not be empty: name a Volcano queue, or remove queue for Volcano's default queue"
	Queue string `json:"queue,omitempty"`
}

// Gang is the job's gang policy: none when spec.trainer.scheduling is unset.
func (t *TrainerSpec) Gang() GangPolicy {
	if t.Scheduling == nil || t.Scheduling.Gang == "" {
		return GangNone
	}
	return t.Scheduling.Gang
}
