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

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"
)

// espoJobCRD is the repository's ESPOJob CRD as the API server returns it right
// after creating it: a status without conditions.
func espoJobCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "crd", "bases", "training.espo.dev_espojobs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatal(err)
	}
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1alpha1"}}
	return crd
}

// established is crd with the conditions the API server writes once it serves it.
func established(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd = crd.DeepCopy()
	crd.Status.AcceptedNames = crd.Spec.Names
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
	}
	return crd
}

// discoveryOf is the API server's discovery of crd's served versions.
func discoveryOf(crd *apiextensionsv1.CustomResourceDefinition) []*metav1.APIResourceList {
	var lists []*metav1.APIResourceList
	for _, v := range crd.Spec.Versions {
		if v.Served {
			lists = append(lists, &metav1.APIResourceList{GroupVersion: crd.Spec.Group + "/" + v.Name, APIResources: []metav1.APIResource{
				{Name: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: true, Verbs: []string{"create", "get", "list"}},
				{Name: crd.Spec.Names.Plural + "/status", Kind: crd.Spec.Names.Kind, Namespaced: true, Verbs: []string{"get", "patch"}},
			}})
		}
	}
	return lists
}

// coreDiscovery is discovery without any CRD.
var coreDiscovery = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
	{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"create", "get", "list"}},
}}}

func mapperOf(t *testing.T, lists ...*metav1.APIResourceList) meta.RESTMapper {
	t.Helper()
	m, err := discoveryMapper(context.Background(), &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCRDNotServed: a CRD is ready for use only once it is Established and the API
// server's discovery maps its kind to its resource in every served version;
// Established alone, with discovery behind it, is not.
func TestCRDNotServed(t *testing.T) {
	g := NewWithT(t)
	fresh := espoJobCRD(t)
	served := discoveryOf(fresh)
	g.Expect(served).NotTo(BeEmpty())

	g.Expect(crdNotServed(fresh, mapperOf(t, append(coreDiscovery, served...)...))).To(Equal("not Established yet (no condition)"))
	notYet := established(fresh)
	notYet.Status.Conditions[1].Status, notYet.Status.Conditions[1].Reason, notYet.Status.Conditions[1].Message =
		apiextensionsv1.ConditionFalse, "Installing", "the initial names have been accepted"
	g.Expect(crdNotServed(notYet, mapperOf(t, served...))).To(Equal("not Established (Installing: the initial names have been accepted)"))

	g.Expect(crdNotServed(established(fresh), mapperOf(t, coreDiscovery...))).To(Equal(
		"Established, but the API server's discovery does not serve training.espo.dev/v1alpha1, Kind=ESPOJob yet"))
	g.Expect(crdNotServed(established(fresh), mapperOf(t, append(coreDiscovery, served...)...))).To(BeEmpty())

	// A second served version must be served too; one that is not served need not.
	two := established(fresh)
	two.Spec.Versions = append(two.Spec.Versions, *two.Spec.Versions[0].DeepCopy())
	two.Spec.Versions[1].Name, two.Spec.Versions[1].Storage = "v1beta1", false
	g.Expect(crdNotServed(two, mapperOf(t, served...))).To(ContainSubstring("training.espo.dev/v1beta1, Kind=ESPOJob"))
	two.Spec.Versions[1].Served = false
	g.Expect(crdNotServed(two, mapperOf(t, served...))).To(BeEmpty())
}

func TestAppliedCRDs(t *testing.T) {
	out := "customresourcedefinition.apiextensions.k8s.io/espojobs.training.espo.dev\n" +
		"validatingadmissionpolicy.admissionregistration.k8s.io/espo-trainer-status\n" +
		"customresourcedefinition.apiextensions.k8s.io/b.x serverside-applied\n"
	NewWithT(t).Expect(appliedCRDs(out)).To(HaveExactElements("espojobs.training.espo.dev", "b.x"))
	NewWithT(t).Expect(appliedCRDs("")).To(BeEmpty())
}

// steppingClock is the clock of a wait: its n-th After runs steps[n-1] (what the API
// server does meanwhile), then fires at once.
type steppingClock struct {
	*testingclock.FakeClock
	steps []func()
	waits int
}

func (c *steppingClock) After(d time.Duration) <-chan time.Time {
	if c.waits < len(c.steps) {
		c.steps[c.waits]()
	}
	c.waits++
	c.Step(d)
	fired := make(chan time.Time, 1)
	fired <- c.Now()
	return fired
}

// TestWaitForCRDsServedWaitsForDiscovery is the race of "espo local up" that failed
// one start in about eight on a loaded machine, played in the order the API server
// can take: the CRD is created without conditions, then Established, and only then
// does the discovery controller serve its kind. "up" goes on (to the sample job,
// "kubectl apply" of a kind discovery does not map fails) only after the last.
func TestWaitForCRDsServedWaitsForDiscovery(t *testing.T) {
	g := NewWithT(t)
	crd := espoJobCRD(t)
	crds := apiextensionsfake.NewSimpleClientset(crd).ApiextensionsV1().CustomResourceDefinitions()
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: coreDiscovery}}
	ctx := context.Background()
	clk := &steppingClock{FakeClock: testingclock.NewFakeClock(time.Now()), steps: []func(){
		func() { // the API server establishes the CRD ...
			_, err := crds.UpdateStatus(ctx, established(crd), metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		},
		func() {}, // ... its discovery does not serve the kind yet ...
		func() { disc.Resources = append(coreDiscovery, discoveryOf(crd)...) }, // ... then does
	}}
	l := &Local{Clock: clk, Out: io.Discard}
	w := &crdWaiter{crds: crds, discovery: disc}

	g.Expect(l.waitForCRDsServed(ctx, w, []string{crd.Name})).To(Succeed())
	g.Expect(clk.waits).To(Equal(3), "the wait ended before discovery served the kind, or long after")

	// A kind discovery never serves fails the wait after crdServedTimeout, saying so.
	disc.Resources = coreDiscovery
	clk.steps, clk.waits = nil, 0
	err := l.waitForCRDsServed(ctx, w, []string{crd.Name, "missing.x"})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("did not serve the CRDs within "+crdServedTimeout.String()),
		ContainSubstring("missing.x: not found"),
		ContainSubstring("espojobs.training.espo.dev: Established, but the API server's discovery does not serve training.espo.dev/v1alpha1, Kind=ESPOJob yet"))))
	g.Expect(clk.waits).To(BeNumerically(">=", int(crdServedTimeout/pollEvery)))
}

// TestInstallCRDsThenKubectlUsesThem is "up"'s path on a real API server: the
// repository's CRDs applied with kubectl, the wait, then at once "kubectl apply" of
// the sample job (a new kind to kubectl's discovery cache) and "kubectl get" of it.
func TestInstallCRDsThenKubectlUsesThem(t *testing.T) {
	g := NewWithT(t)
	l := &Local{StateDir: t.TempDir(), CRDDir: filepath.Join(repoRoot, "config", "crd", "bases"), Clock: clock.RealClock{}, Out: io.Discard}
	kc, err := cp.AdminKubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(l.path(fileKubeconfig), kc, 0o600)).To(Succeed())
	ctx := context.Background()

	g.Expect(l.installCRDs(ctx)).To(Succeed())
	sample := filepath.Join(repoRoot, "config", "samples", "training_v1alpha1_espojob_minimal.yaml")
	name, err := l.kubectl(ctx, "apply", "-f", sample, "-o", "jsonpath={.metadata.name}")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _, _ = l.kubectl(context.Background(), "delete", "-f", sample, "--wait=false") })
	table, err := l.kubectl(ctx, "get", "espojobs", strings.TrimSpace(name))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(table).To(ContainSubstring("espo-minimal"))

	// Applying them again, as a second "up" does, waits on nothing new.
	g.Expect(l.installCRDs(ctx)).To(Succeed())
}
