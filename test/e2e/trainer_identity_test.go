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

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/internal/localcluster"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/trainer/kubereporter"
)

// TestATrainerPodsTokenReportsToItsOwnJobOnly uses the service-account token a
// running trainer pod has (the ServiceAccount admission plugin's token volume, which
// the process node fills from the TokenRequest API, bound to the pod, as a kubelet
// does) as its trainer does: its job's reports land, and the
// admission policy espo-trainer-status refuses a report to another job of the
// namespace, which the namespace's shared trainer identity's Role alone would allow.
func TestATrainerPodsTokenReportsToItsOwnJobOnly(t *testing.T) {
	t.Parallel()
	ctx, g := context.Background(), NewWithT(t)
	ns := newNamespace(t, "e2e-identity")
	name := apply(g, ns, testdata("job-small.yaml"))
	other := applyObject(t, g, ns, builders.MakeESPOJob("e2e-other", ns).Suspend(true).Obj())
	pod := runningPods(t, ns, name, 1)[0]
	g.Expect(pod.Spec.ServiceAccountName).To(Equal(controllers.TrainerIdentityName))
	g.Eventually(func(g Gomega) int64 { return training(pollJob(g, ns, name)).Step }).
		WithTimeout(trainingStarts).WithPolling(poll).Should(BeNumerically(">", 0), "the trainer's own reports land")

	token, err := os.ReadFile(filepath.Join(podDir(&pod), "root", filepath.FromSlash(localcluster.ServiceAccountMountPath), "token"))
	g.Expect(err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(controlPlane.Config)
	cfg.BearerToken = string(token)
	asTrainer, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())

	theirs := &kubereporter.Reporter{Client: asTrainer, Job: trainingv1alpha1.JobRef{Namespace: ns, Name: other}}
	err = theirs.Report(ctx, &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Step: 99})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a report to another job: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(controllers.TrainerStatusPolicyName))
	g.Expect(getJob(g, ns, other).Status.Training).To(BeNil(), "no report reached the other job")
	mustKubectl(g, "delete", "espojob", name, "-n", ns, "--wait=false") // the rest of its training proves nothing here
}

// applyObject applies obj with kubectl, as a user would, and returns its name.
func applyObject(t *testing.T, g Gomega, ns string, obj client.Object) string {
	raw, err := yaml.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	manifest := filepath.Join(t.TempDir(), obj.GetName()+".yaml")
	g.Expect(os.WriteFile(manifest, raw, 0o644)).To(Succeed())
	return apply(g, ns, manifest)
}
