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
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// edit changes an object as a user would (an update under another field manager),
// retrying when a controller write comes between the read and the update.
func edit[T client.Object](g Gomega, obj T, change func(T)) {
	g.Eventually(func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return env.Client.Update(context.Background(), obj, client.FieldOwner("someone-else"))
	}, reconcileTimeout, poll).Should(Succeed())
}

// fetch is a function for Eventually: obj as the API server has it now.
func fetch[T client.Object](g Gomega, obj T) func() T {
	return func() T {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj
	}
}

// created waits for the job's Created condition to be True.
func created(g Gomega, job *trainingv1alpha1.ESPOJob) {
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).
		Should(trueWithReason(trainingv1alpha1.ReasonChildrenCreated))
}

func TestEditedCompanionsAreRestored(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	var writes atomic.Int64
	startManager(t, ns, &writes)
	job := create(g, builders.MakeESPOJob("drift", ns).Replicas(2).Obj())
	created(g, job)
	key := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

	role := &rbacv1.Role{ObjectMeta: key(controllers.TrainerIdentityName)}
	wantRules := fetch(g, role)().Rules
	edit(g, role, func(r *rbacv1.Role) { r.Rules[0].Verbs = []string{"get", "list", "delete"} })
	g.Eventually(func() []rbacv1.PolicyRule { return fetch(g, role)().Rules }, reconcileTimeout, poll).Should(Equal(wantRules))

	svc := &corev1.Service{ObjectMeta: key("drift")}
	edit(g, svc, func(s *corev1.Service) {
		s.Spec.Selector[controllers.LabelJobUID] = "someone-elses-uid"
		s.Annotations = map[string]string{"example.com/note": "added by someone else"}
	})
	g.Eventually(func() map[string]string { return fetch(g, svc)().Spec.Selector }, reconcileTimeout, poll).
		Should(HaveKeyWithValue(controllers.LabelJobUID, string(job.UID)))
	g.Expect(svc.Annotations).To(HaveKeyWithValue("example.com/note", "added by someone else"), "a field the controller does not own is left alone")

	// Without its managed-by label the ServiceAccount leaves the controller's cache;
	// the fields the controller applied to it still say it is the operator's.
	sa := &corev1.ServiceAccount{ObjectMeta: key(controllers.TrainerIdentityName)}
	edit(g, sa, func(s *corev1.ServiceAccount) {
		delete(s.Labels, controllers.LabelManagedBy)
		s.AutomountServiceAccountToken = new(false)
	})
	g.Eventually(func() map[string]string { return fetch(g, sa)().Labels }, reconcileTimeout, poll).
		Should(HaveKeyWithValue(controllers.LabelManagedBy, controllers.ManagedByValue))
	g.Expect(sa.AutomountServiceAccountToken).To(Equal(new(false)), "a field the controller does not own is left alone")

	cm := &corev1.ConfigMap{ObjectMeta: key("drift-config")}
	wantConfig := fetch(g, cm)().Data[trainingv1alpha1.RunConfigKey]
	edit(g, cm, func(c *corev1.ConfigMap) { c.Data[trainingv1alpha1.RunConfigKey] = "job: {}\n" })
	g.Eventually(func() string { return fetch(g, cm)().Data[trainingv1alpha1.RunConfigKey] }, reconcileTimeout, poll).Should(Equal(wantConfig))

	rb := &rbacv1.RoleBinding{ObjectMeta: key(controllers.TrainerIdentityName)}
	oldUID := fetch(g, rb)().UID
	g.Expect(env.Client.Delete(ctx, rb)).To(Succeed())
	g.Eventually(func() error {
		got := &rbacv1.RoleBinding{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rb), got); err != nil {
			return err
		}
		if got.UID == oldUID {
			return apierrors.NewConflict(rbacv1.Resource("rolebindings"), rb.Name, nil)
		}
		return nil
	}, reconcileTimeout, poll).Should(Succeed(), "the deleted RoleBinding is created again")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: controllers.TrainerIdentityName, Namespace: ns}}))
	g.Expect(rb.OwnerReferences).To(BeEmpty(), "the trainer identity is the namespace's, owned by no job")

	settled := writes.Load()
	g.Consistently(writes.Load, quietPeriod, poll).Should(Equal(settled), "repaired companions are left alone")
}

// reconciles is the number of reconciles the ESPOJob controller has finished in
// this test process, from controller-runtime's metrics.
func reconciles(g Gomega) float64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "espojob" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestANewJobsCompanionsCostNoReads: the companions of a new job are created by
// create-only applies, without first reading from the API server whether an object
// of their names exists (the cache, holding only the operator's objects, cannot
// tell).
func TestANewJobsCompanionsCostNoReads(t *testing.T) {
	g, ns := NewWithT(t), newNamespace(t)
	var reads objectReads
	env.StartManager(t, reads.config(t), ns, nil)
	job := create(g, builders.MakeESPOJob("fresh", ns).Replicas(2).Obj())
	created(g, job)
	g.Eventually(func() []corev1.Pod { return pods(g, job) }, reconcileTimeout, poll).Should(HaveLen(2))
	g.Expect(reads.byPath()).To(BeEmpty(), "the operator's reads of single objects from the API server")
}

// TestDisablingNetworkPoliciesRemovesThem: a manager run with NetworkPolicies
// disabled deletes the one a job has from before, and finds it in its cache: no
// reconcile reads a single object from the API server.
func TestDisablingNetworkPoliciesRemovesThem(t *testing.T) {
	g, ns := NewWithT(t), newNamespace(t)
	m := startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("unfenced", ns).Obj())
	created(g, job)
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unfenced-trainer"}}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(np), np)).To(Succeed())
	m.stop()

	var reads objectReads
	env.StartManager(t, reads.config(t), ns, func(_ *ctrl.Options, o *controllers.Options) { o.NetworkPolicy.Disabled = true })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(np), np))
	}, reconcileTimeout, poll).Should(BeTrue(), "the job's NetworkPolicy is deleted")
	other := create(g, builders.MakeESPOJob("never-fenced", ns).Obj())
	created(g, other)
	g.Eventually(func() []corev1.Pod { return pods(g, other) }, reconcileTimeout, poll).Should(HaveLen(1))
	g.Expect(reads.byPath()).To(BeEmpty(), "the operator's reads of single objects from the API server")
}

// objectReads counts, by path, the reads of single namespaced objects
// (.../namespaces/NS/KIND/NAME) that a client of its config sends.
type objectReads struct{ counts sync.Map } // path -> *atomic.Int64

// oneObjectPath matches the path of a namespaced object's read.
var oneObjectPath = regexp.MustCompile(`/namespaces/[^/]+/[^/]+/[^/]+$`)

// config is the operator's config (operatorConfig), its reads counted.
func (r *objectReads) config(t *testing.T) *rest.Config {
	cfg := operatorConfig(t, nil)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && oneObjectPath.MatchString(req.URL.Path) {
				n, _ := r.counts.LoadOrStore(req.URL.Path, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// byPath is the reads counted so far.
func (r *objectReads) byPath() map[string]int64 {
	got := map[string]int64{}
	r.counts.Range(func(path, n any) bool { got[path.(string)] = n.(*atomic.Int64).Load(); return true })
	return got
}

func TestSteadyStateReconcilesWriteNothing(t *testing.T) {
	g, ns := NewWithT(t), newNamespace(t)
	var writes atomic.Int64
	startManager(t, ns, &writes)
	job := create(g, builders.MakeESPOJob("steady", ns).Replicas(2).Obj())
	runAll(g, job)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseRunning))
	quiet(g, job)

	before, done := writes.Load(), reconciles(g)
	const touches = 3
	for i := range touches {
		edit(g, getJob(g, job), func(j *trainingv1alpha1.ESPOJob) {
			j.Annotations = map[string]string{"example.com/touch": fmt.Sprint(i)}
		})
		g.Eventually(func() float64 { return reconciles(g) }, reconcileTimeout, poll).Should(BeNumerically(">", done))
		done = reconciles(g)
	}
	g.Expect(writes.Load()).To(Equal(before), "writes by %d reconciles of a job in line", touches)
}

func TestACompanionNameHeldByAnotherObjectIsReported(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	// Someone else's ConfigMap of the job's config name, without the managed-by
	// label (the controller's cache never holds it), and someone else's Service of
	// the job's service name with the label (the cache holds it).
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-config"},
		Data: map[string]string{"run.yaml": "theirs"}}
	g.Expect(env.Client.Create(ctx, theirs)).To(Succeed())
	startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("taken", ns).Obj())

	createFailed(g, job, "ConfigMap taken-config exists and is not controlled by this ESPOJob")
	g.Expect(pods(g, job)).To(BeEmpty())
	g.Expect(fetch(g, theirs)().Data).To(Equal(map[string]string{"run.yaml": "theirs"}), "their ConfigMap is not overwritten")
	g.Expect(theirs.OwnerReferences).To(BeEmpty())

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other",
		Labels: map[string]string{controllers.LabelManagedBy: controllers.ManagedByValue}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "x", Port: 80}}}}
	g.Expect(env.Client.Create(ctx, svc)).To(Succeed())
	other := create(g, builders.MakeESPOJob("other", ns).Obj())
	g.Eventually(condition(g, other, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).Should(
		HaveField("Message", "Service other exists and is not controlled by this ESPOJob"))
	g.Expect(fetch(g, svc)().Spec.Selector).To(BeEmpty(), "their Service is not overwritten")
}

// createFailed waits for the job's Created condition to be False, for CreateFailed
// and with message.
func createFailed(g Gomega, job *trainingv1alpha1.ESPOJob, message string) {
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", trainingv1alpha1.ReasonCreateFailed),
		HaveField("Message", message)))
}

// TestARoleBindingNameHeldByAnotherObjectDoesNotStopThePods: the trainer identity's
// RoleBinding is created alongside the pods, which do not use it by name; another
// object of its name is reported, and left as it is.
func TestARoleBindingNameHeldByAnotherObjectDoesNotStopThePods(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	theirs := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controllers.TrainerIdentityName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "someone", Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, theirs)).To(Succeed())
	startManager(t, ns, nil)
	job := create(g, builders.MakeESPOJob("bound", ns).Obj())

	createFailed(g, job, "RoleBinding espo-trainer exists and is not managed by espo-operator: "+
		"it has neither the label app.kubernetes.io/managed-by=espo-operator nor fields espo-operator applied")
	g.Expect(pods(g, job)).To(HaveLen(1))
	g.Expect(fetch(g, theirs)().Subjects).To(HaveExactElements(HaveField("Name", "someone")), "their RoleBinding is not overwritten")
	g.Expect(theirs.OwnerReferences).To(BeEmpty())
}

// TestFieldsAnOlderControllerUpdatedAreTakenOver: a job and ConfigMap written as the
// controller wrote them before server-side apply (updates under FieldManager) are
// taken over by apply, so that a status field the controller no longer sets (the
// pod counts of a suspended job) is removed rather than left behind.
func TestFieldsAnOlderControllerUpdatedAreTakenOver(t *testing.T) {
	ctx, g, ns := context.Background(), NewWithT(t), newNamespace(t)
	job := create(g, builders.MakeESPOJob("older", ns).Suspend(true).Obj())
	old := job.DeepCopy()
	job.Status.Active, job.Status.Ready, job.Status.Phase = 2, 2, trainingv1alpha1.PhaseRunning
	g.Expect(env.Client.Status().Patch(ctx, job, client.MergeFrom(old), client.FieldOwner(controllers.FieldManager))).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "older-config",
		Labels:          map[string]string{controllers.LabelManagedBy: controllers.ManagedByValue, "example.com/dropped": "by-a-newer-controller"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, trainingv1alpha1.GroupVersion.WithKind("ESPOJob"))}},
		Data: map[string]string{trainingv1alpha1.RunConfigKey: "stale"}}
	g.Expect(env.Client.Create(ctx, cm, client.FieldOwner(controllers.FieldManager))).To(Succeed())

	startManager(t, ns, nil)
	g.Eventually(phase(g, job), reconcileTimeout, poll).Should(Equal(trainingv1alpha1.PhaseSuspended))
	st := getJob(g, job).Status
	g.Expect([]int32{st.Active, st.Ready}).To(Equal([]int32{0, 0}))
	g.Eventually(func() map[string]string { return fetch(g, cm)().Labels }, reconcileTimeout, poll).
		ShouldNot(HaveKey("example.com/dropped"))
	g.Expect(cm.Data[trainingv1alpha1.RunConfigKey]).NotTo(Equal("stale"))
	for _, o := range []client.Object{getJob(g, job), cm} {
		for _, f := range o.GetManagedFields() {
			if f.Manager == controllers.FieldManager {
				g.Expect(f.Operation).To(Equal(metav1.ManagedFieldsOperationApply), "%s %s", o.GetName(), f.Subresource)
			}
		}
	}
}
