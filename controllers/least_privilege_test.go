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

package controllers_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/trainer/kubereporter"
)

// TestTheTrainerIdentityPatchesItsStatusOnly acts as the trainer identity with the
// token of a job's trainer pod, against the API server's own RBAC and the trainer
// status admission policy: the progress report lands, and every other request is
// refused — a read of its own job, a change of its own spec (the deadline, the
// restart budget, the suspension), a write of the whole job or status, another job's
// status, other verbs, the job's Secret, the identity's Role. A token bound to no
// pod, or to a pod that is not a trainer pod of the job, cannot report either; the
// other job's own pod can.
func TestTheTrainerIdentityPatchesItsStatusOnly(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("mine", ns).Obj())
	other := create(g, builders.MakeESPOJob("theirs", ns).Obj())
	created(g, job)
	created(g, other)
	asPod := func(pod string) client.Client {
		c, err := trainerPodClient(ns, pod)
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	trainer := asPod("mine-trainer-0")
	reportAs := func(c client.Client, to *trainingv1alpha1.ESPOJob, step int64) error {
		r := &kubereporter.Reporter{Client: c, Job: trainingv1alpha1.JobRef{Namespace: ns, Name: to.Name}}
		return r.Report(ctx, &trainingv1alpha1.TrainingStatus{Stage: trainingv1alpha1.StageESPO, Step: step})
	}

	g.Eventually(func() error { return reportAs(trainer, job, 7) }, reconcileTimeout, poll).
		Should(Succeed(), "the trainer reports once the identity's RoleBinding exists")
	g.Expect(getJob(g, job).Status.Training).To(HaveField("Step", int64(7)), "the progress report lands")
	g.Expect(reportAs(asPod("theirs-trainer-0"), other, 3)).To(Succeed(), "the other job's pod reports to its own job")

	mergePatch := func(obj client.Object, patch string) func() error {
		return func() error { return trainer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))) }
	}
	own := getJob(g, job)
	refused := map[string]func() error{
		"raise its restart budget and deadline": mergePatch(own.DeepCopy(),
			`{"spec":{"runPolicy":{"backoffLimit":999,"activeDeadlineSeconds":999999}}}`),
		"suspend or unsuspend itself": mergePatch(own.DeepCopy(), `{"spec":{"suspend":true}}`),
		"patch its labels":            mergePatch(own.DeepCopy(), `{"metadata":{"labels":{"queue":"vip"}}}`),
		"update the whole job":        func() error { return trainer.Update(ctx, own.DeepCopy()) },
		"update the whole status":     func() error { return trainer.Status().Update(ctx, own.DeepCopy()) },
		"delete the job":              func() error { return trainer.Delete(ctx, own.DeepCopy()) },
		"create a job":                func() error { return trainer.Create(ctx, builders.MakeESPOJob("spawned", ns).Obj()) },
		"list jobs":                   func() error { return trainer.List(ctx, &trainingv1alpha1.ESPOJobList{}, client.InNamespace(ns)) },
		"read its own job": func() error {
			return trainer.Get(ctx, client.ObjectKeyFromObject(job), &trainingv1alpha1.ESPOJob{})
		},
		"read another job": func() error {
			return trainer.Get(ctx, client.ObjectKeyFromObject(other), &trainingv1alpha1.ESPOJob{})
		},
		"report to another job's status":                  func() error { return reportAs(trainer, other, 1) },
		"report with a token bound to no pod":             func() error { return reportAs(asPod(""), job, 1) },
		"report from a pod that is not the job's":         func() error { return reportAs(asPod("theirs-trainer-0"), job, 1) },
		"report from a pod named like the job's, no rank": func() error { return reportAs(asPod("mine-trainer-x"), job, 1) },
		"read the worker token": func() error {
			return trainer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mine-worker-token"}, &corev1.Secret{})
		},
		"list pods": func() error { return trainer.List(ctx, &corev1.PodList{}, client.InNamespace(ns)) },
		"edit the identity's Role": func() error {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controllers.TrainerIdentityName}}
			return trainer.Patch(ctx, role, client.RawPatch(types.MergePatchType, []byte(`{"rules":[]}`)))
		},
	}
	for what, request := range refused {
		g.Expect(apierrors.IsForbidden(request())).To(BeTrue(), "the trainer may not %s", what)
	}
	g.Expect(getJob(g, job).Spec.RunPolicy).To(Equal(own.Spec.RunPolicy), "the spec is as the author wrote it")
	g.Expect(getJob(g, job).Status.Training).To(HaveField("Step", int64(7)), "no refused report landed")
	g.Expect(getJob(g, other).Status.Training).To(HaveField("Step", int64(3)), "no refused report landed")
}

// TestTheWorkerTokenIsTheJobsAlone: every job has a Secret of its own with a random
// token, owned by the job, kept across reconciles, made anew when deleted, and in no
// ConfigMap, event or status of the job.
func TestTheWorkerTokenIsTheJobsAlone(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	startManager(t, ns, nil)
	a := create(g, builders.MakeESPOJob("alpha", ns).Replicas(2).Obj())
	b := create(g, builders.MakeESPOJob("beta", ns).Obj())
	created(g, a)
	created(g, b)
	token := func(job *trainingv1alpha1.ESPOJob) string {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-worker-token"}}
		fetch(g, s)()
		g.Expect(metav1.IsControlledBy(s, job)).To(BeTrue())
		g.Expect(s.Immutable).To(Equal(new(true)))
		return string(s.Data[controllers.WorkerTokenKey])
	}
	ta, tb := token(a), token(b)
	_, err := hex.DecodeString(ta)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ta).To(HaveLen(64))
	g.Expect(ta).NotTo(Equal(tb), "each job has a token of its own")

	runAll(g, a)
	g.Eventually(phase(g, a), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	g.Expect(token(a)).To(Equal(ta), "the token is kept while the job runs")
	for _, p := range pods(g, a) {
		for _, c := range p.Spec.Containers {
			g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: controllers.EnvWorkerTokenFile,
				Value: controllers.WorkerTokenDir + "/" + controllers.WorkerTokenKey}), "%s/%s", p.Name, c.Name)
		}
	}

	var cms corev1.ConfigMapList
	g.Expect(env.Client.List(ctx, &cms, client.InNamespace(ns))).To(Succeed())
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			g.Expect(v).NotTo(ContainSubstring(ta), "ConfigMap %s key %s", cm.Name, k)
		}
	}
	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		g.Expect(e.Message).NotTo(ContainSubstring(ta))
	}
	raw, err := json.Marshal(getJob(g, a))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring(ta), "the job (spec and status) holds no token")

	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha-worker-token"}}
	oldUID := fetch(g, old)().UID
	g.Expect(env.Client.Delete(ctx, old)).To(Succeed())
	g.Eventually(func() types.UID {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), s); err != nil {
			return oldUID
		}
		return s.UID
	}, reconcileTimeout, poll).ShouldNot(Equal(oldUID), "a deleted token Secret is made again")
	g.Expect(token(a)).NotTo(Equal(ta), "with a new token: deleting the Secret rotates it")
}

// TestEachJobGetsANetworkPolicy: the trainer pods admit the job's own pods on the
// worker and driver ports, and nobody on the metrics port when no namespace is named.
func TestEachJobGetsANetworkPolicy(t *testing.T) {
	g, ns := NewWithT(t), newNamespace(t)
	startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("fenced", ns).Replicas(2).Obj())
	created(g, job)
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fenced-trainer"}}
	g.Eventually(func() error { return env.Client.Get(context.Background(), client.ObjectKeyFromObject(np), np) },
		reconcileTimeout, poll).Should(Succeed())
	g.Expect(metav1.IsControlledBy(np, job)).To(BeTrue())
	jobPods := map[string]string{controllers.LabelJobName: "fenced", controllers.LabelJobUID: string(job.UID)}
	g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(jobPods))
	g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
	g.Expect(np.Spec.Ingress).To(HaveLen(1))
	g.Expect(np.Spec.Ingress[0].From).To(HaveExactElements(HaveField("PodSelector.MatchLabels", jobPods)))
	var ports []int32
	for _, p := range np.Spec.Ingress[0].Ports {
		ports = append(ports, p.Port.IntVal)
	}
	g.Expect(ports).To(ConsistOf(int32(controllers.WorkerPort), int32(controllers.DriverPort)))
}

// TestTheInstalledTrainerStatusPolicyIsInLine: the shipped policy and binding, as the
// API server stores them (with its defaults), are what the manager checks for.
func TestTheInstalledTrainerStatusPolicyIsInLine(t *testing.T) {
	NewWithT(t).Expect(controllers.CheckTrainerStatusPolicy(context.Background(), env.Client)).To(Succeed())
}
