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
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// noNetworkPolicy leaves the NetworkPolicy out of the companions.
var noNetworkPolicy = NetworkPolicyOptions{Disabled: true}

// testToken is a worker token of the form newWorkerToken makes.
const testToken = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func TestDesiredCompanions(t *testing.T) {
	cases := map[string]struct {
		job   *trainingv1alpha1.ESPOJob
		np    NetworkPolicyOptions
		waves [][]string
	}{
		"the namespace's trainer identity: its ServiceAccount before the pods, its Role alongside, then its RoleBinding": {
			job: makeJob().Obj(),
			waves: [][]string{
				{"ConfigMap demo-config", "Secret demo-worker-token", "ServiceAccount espo-trainer"},
				{"Service demo", "NetworkPolicy demo-trainer", "Role espo-trainer"},
				{"RoleBinding espo-trainer"},
			},
		},
		"a service account the job names: no identity": {
			job:   makeJob().ServiceAccountName("mine").Obj(),
			waves: [][]string{{"ConfigMap demo-config", "Secret demo-worker-token"}, {"Service demo", "NetworkPolicy demo-trainer"}},
		},
		"network policies disabled: none": {
			job: makeJob().ServiceAccountName("mine").Obj(), np: NetworkPolicyOptions{Disabled: true},
			waves: [][]string{{"ConfigMap demo-config", "Secret demo-worker-token"}, {"Service demo"}},
		},
	}
	owner := metav1.OwnerReference{APIVersion: "training.espo.dev/v1alpha1", Kind: "ESPOJob", Name: "demo", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			waves := companionsOf(t, tc.job, tc.np)
			var got [][]string
			for _, wave := range waves {
				var names []string
				for _, c := range wave {
					names = append(names, c.String())
					meta := typed[metav1.PartialObjectMetadata](t, c.desired)
					labels, owners := jobLabels(tc.job), []metav1.OwnerReference{owner}
					if c.shared {
						labels, owners = identityLabels(), nil
					}
					if meta.Namespace != "ns" || !cmp.Equal(meta.Labels, labels) || !cmp.Equal(meta.OwnerReferences, owners) {
						t.Errorf("%s: metadata %+v", c, meta.ObjectMeta)
					}
					if live := reflect.TypeOf(c.newObject()).Elem().Name(); live != *c.desired.GetKind() {
						t.Errorf("%s: newObject returns a %s", c, live)
					}
				}
				got = append(got, names)
			}
			if diff := cmp.Diff(tc.waves, got); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
}

// appliedCompanions applies the companions of job with a fake client that implements
// server-side apply, and returns them with the live objects it then holds. The fake
// client cannot apply NetworkPolicies (its type converter has no schema for them):
// TestSteadyStateReconcilesWriteNothing checks that one against the API server.
func appliedCompanions(tb testing.TB, job *trainingv1alpha1.ESPOJob) ([]companion, []client.Object) {
	tb.Helper()
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithReturnManagedFields().Build()
	waves := companionsOf(tb, job, noNetworkPolicy)
	var companions []companion
	var live []client.Object
	for _, wave := range waves {
		for _, comp := range wave {
			if err := c.Apply(context.Background(), comp.desired, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				tb.Fatal(err)
			}
			obj := comp.newObject()
			if err := c.Get(context.Background(), comp.key(), obj); err != nil {
				tb.Fatal(err)
			}
			live = append(live, obj)
		}
	}
	fresh := companionsOf(tb, job, noNetworkPolicy) // Apply overwrote the applied ones with its response
	for _, wave := range fresh {
		companions = append(companions, wave...)
	}
	return companions, live
}

// TestAppliedFieldsMatchTheDesiredState: what FieldManager applied, read back from
// the live objects, equals the desired state, so a companion in line costs no write;
// the desired state of a job with another UID (other labels and owner) differs, but
// for the namespace's trainer identity, which every job finds in line.
func TestAppliedFieldsMatchTheDesiredState(t *testing.T) {
	companions, live := appliedCompanions(t, makeJob().Obj())
	for i, c := range companions {
		applied, err := c.applied(live[i])
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(applied, c.desired) {
			t.Errorf("%s: applied fields differ from the desired state:\n%s", c, cmp.Diff(c.desired, applied))
		}
	}
	other := companionsOf(t, makeJob().UID("uid-2").Obj(), noNetworkPolicy)
	for i, c := range other[0] {
		applied, err := c.applied(live[i])
		if err != nil {
			t.Fatal(err)
		}
		if inLine := equality.Semantic.DeepEqual(applied, c.desired); inLine != c.shared {
			t.Errorf("%s: the fields applied for uid-1 in line with those desired for uid-2: %v, want %v", c, inLine, c.shared)
		}
	}
}

// BenchmarkCompanionsInLine is the cost of the drift check of a job whose companions
// are in line: building their desired state and comparing it with what was applied.
func BenchmarkCompanionsInLine(b *testing.B) {
	job := makeJob().Replicas(4).Obj()
	_, live := appliedCompanions(b, job)
	b.ReportAllocs()
	for b.Loop() {
		waves := companionsOf(b, job, noNetworkPolicy)
		i := 0
		for _, wave := range waves {
			for _, c := range wave {
				applied, err := c.applied(live[i])
				if err != nil || !equality.Semantic.DeepEqual(applied, c.desired) {
					b.Fatalf("%s not in line: %v", c, err)
				}
				i++
			}
		}
	}
}

// companionsOf are the desired companions of job, with testToken as a new token.
func companionsOf(tb testing.TB, job *trainingv1alpha1.ESPOJob, np NetworkPolicyOptions) [][]companion {
	tb.Helper()
	runConfig, err := runConfigYAML(job, trainingv1alpha1.RunProvenance{})
	if err != nil {
		tb.Fatal(err)
	}
	return desiredCompanions(job, runConfig, testToken, np)
}

// TestTheWorkerTokenSecretKeepsItsToken: the desired Secret holds the token of a
// live Secret with a valid one, else the new token it was built with.
func TestTheWorkerTokenSecretKeepsItsToken(t *testing.T) {
	const newToken = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	job := makeJob().Obj()
	for name, tc := range map[string]struct {
		live []byte
		want string
	}{
		"a valid token is kept":      {live: []byte(testToken), want: testToken},
		"an invalid one is replaced": {live: []byte("short"), want: newToken},
	} {
		t.Run(name, func(t *testing.T) {
			c := workerTokenCompanion(job, newToken)
			live := &corev1.Secret{Data: map[string][]byte{WorkerTokenKey: tc.live}}
			got := typed[corev1.Secret](t, c.keep(live))
			if string(got.Data[WorkerTokenKey]) != tc.want {
				t.Errorf("token %q, want %q", got.Data[WorkerTokenKey], tc.want)
			}
		})
	}
}
