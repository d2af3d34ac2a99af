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

package kueue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	espokueue "github.com/espo-dev/espo-operator/controllers/kueue"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const (
	timeout = 30 * time.Second
	poll    = 50 * time.Millisecond
	// operatorUser is who the operator's manager runs as: bound to the generated
	// config/rbac/role.yaml and config/kueue/role.yaml, so that a missing RBAC marker
	// fails the test.
	operatorUser = "espo-operator-under-test"
	// poolLabel is the node label of the test's ResourceFlavor.
	poolLabel = "espo.dev/pool"
)

var installOnce sync.Once

// installKueueAndRBAC installs Kueue's CRDs, from the Kueue module the build uses, the
// operator's ClusterRoles (its controller's and its Kueue integration's) bound to
// operatorUser, and adds Kueue's API to env.Scheme.
func installKueueAndRBAC(t *testing.T) {
	installOnce.Do(func() {
		if err := env.InstallKueueCRDs(); err != nil {
			t.Fatal(err)
		}
		if err := testenv.AddKueueToScheme(env.Scheme); err != nil {
			t.Fatal(err)
		}
		if err := env.BindOperatorRole(operatorUser, "config/kueue/role.yaml"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTheShippedRolesAllowTheIntegrationsWatches: bound to the operator's ClusterRoles
// (config/rbac and config/kueue), the manager may list and watch every kind the Kueue
// integration caches (the check "espo manager --kueue" makes before it starts).
func TestTheShippedRolesAllowTheIntegrationsWatches(t *testing.T) {
	installKueueAndRBAC(t)
	operator, err := client.New(env.ImpersonatedConfig(operatorUser), client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.CheckWatchPermissions(context.Background(), operator, espokueue.WatchedKinds()); err != nil {
		t.Fatal(err)
	}
}

// startManager starts a manager until the test ends, after setup added its work.
func startManager(t *testing.T, cfg *rest.Config, opts ctrl.Options, setup func(context.Context, ctrl.Manager) error) {
	t.Helper()
	opts.Scheme = env.Scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := setup(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, mgr)
}

// startKueue runs Kueue itself in the test process, as its own binary wires it: the
// core controllers (queues, flavors, Workloads) and the scheduler that admits.
func startKueue(t *testing.T) {
	startManager(t, env.Config, ctrl.Options{}, testenv.SetupKueue)
}

// startOperator runs the ESPOJob controller and the Kueue integration as the operator
// runs them with --kueue, as operatorUser, watching namespace ns.
func startOperator(t *testing.T, ns string) {
	startController(t, ns)
	startIntegration(t, ns)
}

// podOptions are the test operator's pod options.
var podOptions = controllers.PodOptions{TrainerImage: testenv.TrainerImage, CUDAWorkerImage: testenv.CUDAWorkerImage}

// operatorManager starts a manager as operatorUser on namespace ns with the
// operator's cache and client options.
func operatorManager(t *testing.T, ns string, setup func(context.Context, ctrl.Manager) error) {
	cacheOpts := controllers.CacheOptions()
	cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	startManager(t, env.ImpersonatedConfig(operatorUser), ctrl.Options{Cache: cacheOpts, Client: controllers.ClientOptions()}, setup)
}

// startController runs the ESPOJob controller with Kueue's admission gate.
func startController(t *testing.T, ns string) {
	operatorManager(t, ns, func(_ context.Context, mgr ctrl.Manager) error {
		return controllers.NewESPOJobReconciler(mgr, controllers.Options{PodOptions: podOptions, Admission: espokueue.Admission}).SetupWithManager(mgr)
	})
}

// startIntegration runs the Kueue integration: Kueue's job reconciler for ESPOJobs.
func startIntegration(t *testing.T, ns string) {
	operatorManager(t, ns, func(ctx context.Context, mgr ctrl.Manager) error {
		return espokueue.SetupWithManager(ctx, mgr, podOptions)
	})
}

// queueWithQuota creates a ResourceFlavor whose nodes carry poolLabel=a100 and a
// taint the flavor tolerates, a ClusterQueue with cpus of it (tuned by tune when not
// nil), and a LocalQueue in ns. It returns the LocalQueue's name.
func queueWithQuota(t *testing.T, g Gomega, ns string, cpus string, tune func(*kueuev1beta2.ClusterQueueSpec)) string {
	ctx := context.Background()
	name := ns // the cluster-scoped objects are the test's own
	flavor := &kueuev1beta2.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ResourceFlavorSpec{
			NodeLabels:  map[string]string{poolLabel: "a100"},
			Tolerations: []corev1.Toleration{{Key: "espo.dev/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors: []kueuev1beta2.FlavorQuotas{{
					Name:      kueuev1beta2.ResourceFlavorReference(name),
					Resources: []kueuev1beta2.ResourceQuota{{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse(cpus)}},
				}},
			}},
		},
	}
	if tune != nil {
		tune(&cq.Spec)
	}
	lq := &kueuev1beta2.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "lq", Namespace: ns},
		Spec:       kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)},
	}
	for _, o := range []client.Object{flavor, cq, lq} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{lq, cq, flavor} {
			_ = env.Client.Delete(context.Background(), o)
		}
	})
	return lq.Name
}

// queuedJob is a suspended single-pod job that names the LocalQueue and asks for one
// cpu, with the priority class when not empty.
func queuedJob(g Gomega, ns, name, queue, priorityClass string) *trainingv1alpha1.ESPOJob {
	job := builders.MakeESPOJob(name, ns).Label(espokueue.QueueLabel, queue).Suspend(true).Replicas(1).PriorityClassName(priorityClass).
		Resources(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}).Obj()
	g.Expect(env.Client.Create(context.Background(), job)).To(Succeed())
	return job
}

func getJob(g Gomega, job *trainingv1alpha1.ESPOJob) *trainingv1alpha1.ESPOJob {
	got := &trainingv1alpha1.ESPOJob{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(job), got)).To(Succeed())
	return got
}

// running is the names of the jobs that are not suspended.
func running(g Gomega, jobs ...*trainingv1alpha1.ESPOJob) []string {
	var names []string
	for _, j := range jobs {
		if !getJob(g, j).Spec.RunPolicy.Suspend {
			names = append(names, j.Name)
		}
	}
	return names
}

// splitBySuspend splits jobs into those that run and those suspended.
func splitBySuspend(g Gomega, jobs []*trainingv1alpha1.ESPOJob) (run, suspended []*trainingv1alpha1.ESPOJob) {
	for _, j := range jobs {
		if getJob(g, j).Spec.RunPolicy.Suspend {
			suspended = append(suspended, j)
		} else {
			run = append(run, j)
		}
	}
	return run, suspended
}

// workloadOf is the job's Workload (the one it owns), or nil.
func workloadOf(g Gomega, job *trainingv1alpha1.ESPOJob) *kueuev1beta2.Workload {
	var list kueuev1beta2.WorkloadList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(job.Namespace))).To(Succeed())
	for i, wl := range list.Items {
		for _, o := range wl.OwnerReferences {
			if o.Kind == espokueue.GVK.Kind && o.Name == job.Name {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// trainerPod is rank 0's pod of the job, or nil while it does not exist.
func trainerPod(g Gomega, job *trainingv1alpha1.ESPOJob) *corev1.Pod {
	p := &corev1.Pod{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: job.Namespace, Name: job.Name + "-trainer-0"}, p)
	if err != nil || p.DeletionTimestamp != nil {
		return nil
	}
	return p
}

// expectAdmittedWithFlavor waits for the job's pod and checks that it carries the
// flavor's node label and toleration, and that the Workload is admitted with the one
// pod set of one pod.
func expectAdmittedWithFlavor(g Gomega, job *trainingv1alpha1.ESPOJob) {
	g.Eventually(func() *corev1.Pod { return trainerPod(g, job) }, timeout, poll).ShouldNot(BeNil())
	p := trainerPod(g, job)
	g.Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(poolLabel, "a100"))
	g.Expect(p.Spec.Tolerations).To(ContainElement(HaveField("Key", "espo.dev/gpu")))
	wl := workloadOf(g, job)
	g.Expect(wl).NotTo(BeNil())
	g.Expect(apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadAdmitted)).To(BeTrue())
	g.Expect(wl.Spec.PodSets).To(HaveLen(1))
	g.Expect(wl.Spec.PodSets[0].Name).To(Equal(espokueue.PodSetName))
	g.Expect(wl.Spec.PodSets[0].Count).To(Equal(int32(1)))
}

// runReady makes the job's trainer pod run and be ready, as the kubelet would report it.
func runReady(g Gomega, job *trainingv1alpha1.ESPOJob) {
	setTrainerStatus(g, job, func(p *corev1.Pod) corev1.PodStatus {
		st := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		for _, c := range p.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}})
		}
		return st
	})
}

// setTrainerStatus sets the status of the job's trainer pod to status(pod).
func setTrainerStatus(g Gomega, job *trainingv1alpha1.ESPOJob, status func(*corev1.Pod) corev1.PodStatus) {
	g.Eventually(func() error {
		p := trainerPod(g, job)
		if p == nil {
			return fmt.Errorf("no trainer pod")
		}
		p.Status = status(p)
		return env.Client.Status().Update(context.Background(), p)
	}, timeout, poll).Should(Succeed())
}

// succeed makes the job's trainer exit 0, as the kubelet would report it.
func succeed(g Gomega, job *trainingv1alpha1.ESPOJob) {
	setTrainerStatus(g, job, func(p *corev1.Pod) corev1.PodStatus {
		st := corev1.PodStatus{Phase: corev1.PodSucceeded}
		for _, c := range p.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
		}
		return st
	})
}

// setup starts Kueue and the operator on a new namespace with a queue of two cpus,
// tuned by tune when not nil, and returns the namespace and the LocalQueue's name.
func setup(t *testing.T, tune func(*kueuev1beta2.ClusterQueueSpec)) (Gomega, string, string) {
	installKueueAndRBAC(t)
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "espo-kueue-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	queue := queueWithQuota(t, g, ns.Name, "2", tune)
	startKueue(t)
	startOperator(t, ns.Name)
	return g, ns.Name, queue
}

// TestQuotaForTwoAdmitsTwoOfThreeThenTheThird: a ClusterQueue with quota for two
// trainer pods and three single-pod jobs: two are admitted and run on the flavor's
// nodes, the third stays suspended with a Workload that says why; when one of the
// two finishes, its Workload finishes and the third is admitted.
func TestQuotaForTwoAdmitsTwoOfThreeThenTheThird(t *testing.T) {
	g, ns, queue := setup(t, nil)
	jobs := []*trainingv1alpha1.ESPOJob{
		queuedJob(g, ns, "first", queue, ""), queuedJob(g, ns, "second", queue, ""), queuedJob(g, ns, "third", queue, ""),
	}
	g.Eventually(func() []string { return running(g, jobs...) }, timeout, poll).Should(HaveLen(2))
	g.Consistently(func() []string { return running(g, jobs...) }, 2*time.Second, poll).Should(HaveLen(2))
	admitted, suspended := splitBySuspend(g, jobs)
	waiting := suspended[0]
	for _, j := range admitted {
		expectAdmittedWithFlavor(g, j)
	}
	g.Expect(trainerPod(g, waiting)).To(BeNil(), "the waiting job has no pods")
	g.Eventually(func() *metav1.Condition {
		wl := workloadOf(g, waiting)
		if wl == nil {
			return nil
		}
		return apimeta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved)
	}, timeout, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Message", ContainSubstring("insufficient unused quota for cpu"))))

	runReady(g, admitted[1])
	g.Eventually(func() bool {
		return apimeta.IsStatusConditionTrue(workloadOf(g, admitted[1]).Status.Conditions, kueuev1beta2.WorkloadPodsReady)
	}, timeout, poll).Should(BeTrue(), "the Workload reports PodsReady once the trainer pod is ready")

	succeed(g, admitted[0])
	g.Eventually(func() bool {
		return apimeta.IsStatusConditionTrue(workloadOf(g, admitted[0]).Status.Conditions, kueuev1beta2.WorkloadFinished)
	}, timeout, poll).Should(BeTrue(), "the finished job's Workload finishes")
	g.Eventually(func() bool { return getJob(g, waiting).Spec.RunPolicy.Suspend }, timeout, poll).Should(BeFalse())
	expectAdmittedWithFlavor(g, waiting)
	g.Expect(getJob(g, waiting).Spec.Trainer.NodeSelector).To(HaveKeyWithValue(poolLabel, "a100"))
}

// priorityClass creates a PriorityClass of the value for the test's pods.
func priorityClass(t *testing.T, g Gomega, name string, value int32) string {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	g.Expect(env.Client.Create(context.Background(), pc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pc) })
	return name
}

// TestHigherPriorityJobPreemptsARunningOne: with the queue full of two low-priority
// jobs, a high-priority one preempts one of them: its Workload is evicted, the job is
// suspended (its pods deleted, spec.trainer restored to before admission) and the
// high-priority job runs on the flavor; when that one finishes, the preempted job is
// admitted again and its pods come back.
func TestHigherPriorityJobPreemptsARunningOne(t *testing.T) {
	g, ns, queue := setup(t, func(cq *kueuev1beta2.ClusterQueueSpec) {
		cq.Preemption = &kueuev1beta2.ClusterQueuePreemption{WithinClusterQueue: kueuev1beta2.PreemptionPolicyLowerPriority}
	})
	low := priorityClass(t, g, ns+"-low", 100)
	high := priorityClass(t, g, ns+"-high", 1000)
	lows := []*trainingv1alpha1.ESPOJob{queuedJob(g, ns, "low-a", queue, low), queuedJob(g, ns, "low-b", queue, low)}
	g.Eventually(func() []string { return running(g, lows...) }, timeout, poll).Should(HaveLen(2))
	for _, j := range lows {
		expectAdmittedWithFlavor(g, j)
	}

	urgent := queuedJob(g, ns, "urgent", queue, high)
	g.Eventually(func() []string { return running(g, lows...) }, timeout, poll).Should(HaveLen(1))
	_, suspended := splitBySuspend(g, lows)
	preempted := suspended[0]
	g.Eventually(func() bool {
		return apimeta.IsStatusConditionTrue(workloadOf(g, preempted).Status.Conditions, kueuev1beta2.WorkloadPreempted)
	}, timeout, poll).Should(BeTrue(), "the Workload says it was preempted")
	g.Eventually(func() *corev1.Pod { return trainerPod(g, preempted) }, timeout, poll).Should(BeNil())
	g.Expect(getJob(g, preempted).Spec.Trainer.NodeSelector).NotTo(HaveKey(poolLabel), "spec.trainer is restored")
	expectAdmittedWithFlavor(g, urgent)
	g.Expect(workloadOf(g, urgent).Spec.Priority).To(HaveValue(BeEquivalentTo(1000)), "the job's priority class")

	succeed(g, urgent)
	g.Eventually(func() bool { return getJob(g, preempted).Spec.RunPolicy.Suspend }, timeout, poll).Should(BeFalse())
	expectAdmittedWithFlavor(g, preempted)
}

// TestJobCreatedRunningWaitsForAdmission: a job that names a queue but is created
// running (not suspended) gets no pods from the controller until Kueue admitted it;
// here the integration starts later, so nothing suspends the job meanwhile.
func TestJobCreatedRunningWaitsForAdmission(t *testing.T) {
	installKueueAndRBAC(t)
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "espo-kueue-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	queue := queueWithQuota(t, g, ns.Name, "2", nil)
	startKueue(t)
	startController(t, ns.Name)

	eager := builders.MakeESPOJob("eager", ns.Name).Label(espokueue.QueueLabel, queue).Replicas(1).
		Resources(corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}).Obj()
	g.Expect(env.Client.Create(context.Background(), eager)).To(Succeed())
	g.Consistently(func() *corev1.Pod { return trainerPod(g, eager) }, 2*time.Second, poll).Should(BeNil())

	startIntegration(t, ns.Name)
	expectAdmittedWithFlavor(g, eager)
	g.Expect(getJob(g, eager).Annotations).To(HaveKeyWithValue(espokueue.AdmittedAnnotation, "true"))
}

// TestAdmissionCheckPodSetUpdatesReachThePods: a ClusterQueue with an admission
// check: the job's Workload reserves quota and the job stays suspended until the
// check (the test plays its controller) is Ready; its pod-set updates (a label, a
// node label, a toleration) then land in the trainer pods beside the flavor's.
func TestAdmissionCheckPodSetUpdatesReachThePods(t *testing.T) {
	installKueueAndRBAC(t)
	ctx := context.Background()
	var g Gomega = NewWithT(t)
	check := &kueuev1beta2.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{GenerateName: "espo-check-"},
		Spec: kueuev1beta2.AdmissionCheckSpec{ControllerName: "espo.dev/test-check"}}
	g.Expect(env.Client.Create(ctx, check)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), check) })
	apimeta.SetStatusCondition(&check.Status.Conditions, metav1.Condition{Type: kueuev1beta2.AdmissionCheckActive,
		Status: metav1.ConditionTrue, Reason: "Active", Message: "the test plays the check's controller"})
	g.Expect(env.Client.Status().Update(ctx, check)).To(Succeed())

	g, ns, queue := setup(t, func(cq *kueuev1beta2.ClusterQueueSpec) {
		cq.AdmissionChecksStrategy = &kueuev1beta2.AdmissionChecksStrategy{
			AdmissionChecks: []kueuev1beta2.AdmissionCheckStrategyRule{{Name: kueuev1beta2.AdmissionCheckReference(check.Name)}}}
	})
	job := queuedJob(g, ns, "checked", queue, "")
	g.Eventually(func() bool {
		wl := workloadOf(g, job)
		return wl != nil && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved) && len(wl.Status.AdmissionChecks) == 1
	}, timeout, poll).Should(BeTrue(), "quota reserved, the check pending")
	g.Expect(getJob(g, job).Spec.RunPolicy.Suspend).To(BeTrue(), "not admitted before the check is ready")

	g.Eventually(func() error {
		wl := workloadOf(g, job)
		wl.Status.AdmissionChecks[0].State = kueuev1beta2.CheckStateReady
		wl.Status.AdmissionChecks[0].Message = "provisioned"
		wl.Status.AdmissionChecks[0].LastTransitionTime = metav1.Now()
		wl.Status.AdmissionChecks[0].PodSetUpdates = []kueuev1beta2.PodSetUpdate{{
			Name:         espokueue.PodSetName,
			Labels:       map[string]string{"espo.dev/checked": "yes"},
			NodeSelector: map[string]string{"espo.dev/zone": "z1"},
			Tolerations:  []corev1.Toleration{{Key: "espo.dev/provisioned", Operator: corev1.TolerationOpExists}},
		}}
		return env.Client.Status().Update(ctx, wl)
	}, timeout, poll).Should(Succeed())

	expectAdmittedWithFlavor(g, job)
	p := trainerPod(g, job)
	g.Expect(p.Labels).To(HaveKeyWithValue("espo.dev/checked", "yes"))
	g.Expect(p.Spec.NodeSelector).To(HaveKeyWithValue("espo.dev/zone", "z1"))
	g.Expect(p.Spec.Tolerations).To(ContainElement(HaveField("Key", "espo.dev/provisioned")))
}
