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
	"testing"

	"github.com/google/go-cmp/cmp"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestPodLabels(t *testing.T) {
	cases := map[string]struct {
		job  *trainingv1alpha1.ESPOJob
		rank int32
		want map[string]string
	}{
		"rank 0 of the first attempt": {
			job: makeJob().Obj(), rank: 0,
			want: map[string]string{LabelJobName: "demo", LabelJobUID: "uid-1", LabelManagedBy: ManagedByValue,
				LabelRank: "0", LabelRole: RoleTrainer, LabelRestartAttempt: "0"},
		},
		"a worker after two restarts; the job's own labels win over the pod labels": {
			job: makeJob().Replicas(4).Restarts(2).PodLabel("team", "rec").PodLabel(LabelJobName, "spoof").Obj(), rank: 3,
			want: map[string]string{"team": "rec", LabelJobName: "demo", LabelJobUID: "uid-1", LabelManagedBy: ManagedByValue,
				LabelRank: "3", LabelRole: RoleWorker, LabelRestartAttempt: "2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want[LabelPodTemplateHash] = podTemplateHash(tc.job)
			if diff := cmp.Diff(tc.want, podLabels(tc.job, tc.rank)); diff != "" {
				t.Errorf("podLabels (-want +got):\n%s", diff)
			}
			if got := podName(tc.job, tc.rank); len(got) > 63 {
				t.Errorf("pod name %q is not a DNS label", got)
			}
		})
	}
}
