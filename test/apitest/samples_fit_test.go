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
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// A small node, less what its system daemons (kubelet, runtime, kube-proxy, a CNI
// agent) typically reserve: the most that every CPU sample's pods may request in all.
var smallNodeForJobs = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("1500m"), // of 2 cores
	corev1.ResourceMemory: resource.MustParse("3Gi"),   // of 4Gi
}

// TestCPUSamplesFitASmallNode checks that the pods of every sample that runs the CPU
// policy request, all together, no more than a small node offers, so that each can be
// tried on a laptop cluster.
func TestCPUSamplesFitASmallNode(t *testing.T) {
	for _, name := range sampleFiles {
		u := readManifest(t, filepath.Join(env.RepoRoot, "config", "samples", name))
		data, _ := yaml.Marshal(u.Object)
		var job trainingv1alpha1.ESPOJob
		if err := yaml.UnmarshalStrict(data, &job); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		job.Spec.Default()
		if job.Spec.Model.Worker != trainingv1alpha1.WorkerCPU {
			continue
		}
		for res, most := range smallNodeForJobs {
			per := job.Spec.Trainer.Resources.Requests[res]
			total := resource.NewMilliQuantity(per.MilliValue()*int64(job.Spec.Trainer.Replicas), per.Format)
			if total.Cmp(most) > 0 {
				t.Errorf("%s: %d pods request %s of %s in all, more than the %s a small node leaves for jobs",
					name, job.Spec.Trainer.Replicas, total, res, &most)
			}
		}
	}
}
