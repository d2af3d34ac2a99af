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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDesiredService(t *testing.T) {
	cases := map[string]struct {
		name, uid string
		want      corev1.ServiceSpec
	}{
		"headless, publishes pods before they are ready, selects this job's pods by UID": {
			name: "demo", uid: "uid-1",
			want: corev1.ServiceSpec{
				ClusterIP:                "None",
				Selector:                 map[string]string{LabelJobName: "demo", LabelJobUID: "uid-1"},
				PublishNotReadyAddresses: true,
				Ports: []corev1.ServicePort{
					{Name: "worker", Port: 50051, TargetPort: intstr.FromInt32(50051), Protocol: corev1.ProtocolTCP},
					{Name: "driver", Port: 29500, TargetPort: intstr.FromInt32(29500), Protocol: corev1.ProtocolTCP},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := typed[corev1.Service](t, desiredService(makeJob().UID(tc.uid).Obj()))
			if got.Name != tc.name || len(got.OwnerReferences) != 1 || got.Labels[LabelManagedBy] != ManagedByValue {
				t.Errorf("metadata: %+v", got.ObjectMeta)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("desiredService spec (-want +got):\n%s", diff)
			}
		})
	}
}
