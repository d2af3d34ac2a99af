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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// Options configure the ESPOJob reconciler.
type Options struct {
	PodOptions
	// OperatorVersion is the operator's version, recorded in each run's provenance.
	OperatorVersion string
	// NetworkPolicy says whether each job's pods get a NetworkPolicy and who may
	// scrape their metrics.
	NetworkPolicy NetworkPolicyOptions
	// Clock is read once per reconcile. Default: the real clock.
	Clock clock.Clock
	// MaxConcurrentReconciles is how many jobs are reconciled at once. Default 16:
	// a reconcile mostly waits on the API server.
	MaxConcurrentReconciles int
	// PodEventBatchPeriod is how long a pod event waits before its job is
	// reconciled, so that the events of a gang within it give one reconcile and one
	// status write (events of the job itself do not wait). 0 reconciles on every
	// pod event; the manager's default is DefaultPodEventBatchPeriod.
	PodEventBatchPeriod time.Duration
	// Admission, when set, says whether a job that is not suspended may have pods
	// yet, and if not why: a queue (Kueue) that suspends such jobs until it admits
	// them. Nil: every job that is not suspended may.
	Admission func(*trainingv1alpha1.ESPOJob) (admitted bool, why string)
}

// ESPOJobReconciler turns ESPOJobs into trainer pods and their companions, and the
// pods' fate back into the jobs' status.
type ESPOJobReconciler struct {
	client    client.Client
	apiReader client.Reader // uncached, to look at a name another object holds
	recorder  events.EventRecorder
	opts      Options
	// runConfigs keeps the jobs' run configs between reconciles.
	runConfigs runConfigMemo
	// inLine remembers the companions found in line.
	inLine inLineMemo
	// races spaces the retries of jobs whose status writes lose races.
	races statusRaces
}

// NewESPOJobReconciler returns a reconciler that uses mgr's client, cache and event
// recorder.
func NewESPOJobReconciler(mgr ctrl.Manager, o Options) *ESPOJobReconciler {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 16
	}
	return &ESPOJobReconciler{
		client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder("espojob-controller"), opts: o,
	}
}

// +kubebuilder:rbac:groups=training.espo.dev,resources=espojobs,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=training.espo.dev,resources=espojobs/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts;secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile brings one ESPOJob's children in line with its spec and writes its
// status, once, when it changed; the events of the change follow the write. An
// error sends the job back through the work queue's rate limiter; a status write
// that lost a race (a conflict) is tried again soon (retryLostStatusRace).
func (r *ESPOJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &trainingv1alpha1.ESPOJob{}
	if err := r.client.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			r.races.won(req.NamespacedName) // not in forget: a finished job's writes may still lose races
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() || job.IsFinished() {
		r.forget(req.NamespacedName)
	}
	if !job.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its children go with it
	}
	if err := client.IgnoreNotFound(r.adoptUpdatedFields(ctx, job, "status")); err != nil {
		return ctrl.Result{}, fmt.Errorf("taking over the status fields: %w", err)
	}
	u := newStatusUpdate(job, r.opts.Clock.Now())
	result, err := r.reconcile(ctx, u)
	err = errors.Join(err, findMissingReference(ctx, r.apiReader, u))
	summarize(u)
	if werr := r.writeStatus(ctx, job, u.job); werr != nil {
		if err == nil && apierrors.IsConflict(werr) {
			return r.retryLostStatusRace(ctx, req.NamespacedName), nil
		}
		return ctrl.Result{}, errors.Join(err, werr)
	}
	r.races.won(req.NamespacedName)
	r.emit(job, u)
	if err != nil {
		return ctrl.Result{}, err
	}
	return result, nil
}

// retryLostStatusRace is the result of a reconcile whose status write conflicted
// with a newer version of the job (mostly the trainer's report): the job is read and
// reconciled again when the cache should hold the newer version, soon after one lost
// race and later after each more in a row (statusRaces). It is not returned as an
// error: the work queue's rate limiter would back the job off exponentially without
// a bound that suits it and, the watch ignoring the trainer's progress-only updates,
// nothing else would wake it (a job could show Pending for minutes while its pod
// ran).
func (r *ESPOJobReconciler) retryLostStatusRace(ctx context.Context, key types.NamespacedName) ctrl.Result {
	after := r.races.lost(key)
	log.FromContext(ctx).V(1).Info("the status write lost a race with another writer; reconciling again", "after", after)
	return ctrl.Result{RequeueAfter: after}
}

// reconcile runs the steps of one reconcile, recording the job's new status in u.
func (r *ESPOJobReconciler) reconcile(ctx context.Context, u *statusUpdate) (_ ctrl.Result, err error) {
	job := u.job

	// 1. List the job's pods (by the owner index, from the cache).
	if err := r.listPods(ctx, u); err != nil {
		return ctrl.Result{}, err
	}
	pods := splitPods(job, u.pods)

	// 2. A finished job: delete the pods still running, and the job after its TTL.
	if job.IsFinished() {
		return r.cleanUpFinished(ctx, u, pods)
	}

	// 3. Apply the companions that are missing or changed: the ConfigMap with the
	//    current run config, the headless Service, the worker token's Secret, the
	//    NetworkPolicy, and the namespace's trainer identity (TrainerIdentityName). The
	//    pods wait only for those they cannot be created without (desiredCompanions);
	//    the rest are applied alongside the steps below, and awaited at the end.
	writes, err := r.applyCompanions(ctx, job)
	if err != nil {
		u.setCondition(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonCreateFailed, err.Error())
		return ctrl.Result{}, err
	}
	defer func() { err = errors.Join(err, awaitCompanions(u, writes)) }()

	// 4. Suspended: no pods. Resumed: recreate them below from the current spec.
	if job.IsSuspended() {
		u.setCondition(trainingv1alpha1.ConditionSuspended, true, trainingv1alpha1.ReasonSuspended, "the job is suspended: its trainer pods are deleted")
		return ctrl.Result{}, r.deletePods(ctx, append(pods.ranks(), pods.stale...))
	}
	u.clearCondition(trainingv1alpha1.ConditionSuspended, trainingv1alpha1.ReasonResumed, "the job was resumed")
	if r.holdUnadmitted(ctx, job) {
		return ctrl.Result{}, nil
	}

	// 4b. The PodGroup of a gang-scheduled job, before its pods (gang.go).
	if result, done, err := r.reconcilePodGroup(ctx, u); done {
		return result, err
	}

	// 5. Delete the pods of earlier restart attempts.
	if err := r.deletePods(ctx, pods.stale); err != nil {
		return ctrl.Result{}, err
	}

	// 6. Judge the current attempt: finished (success policy), or a pod failed and
	//    the gang restarts or the job fails (failure policy). The pods are deleted
	//    by the next reconcile, once the decision is written.
	if applySuccessPolicy(u, pods) {
		return ctrl.Result{}, nil
	}
	if f := firstFailure(u, pods); f != nil {
		applyFailurePolicy(u, f)
		return ctrl.Result{}, nil
	}

	// 7. Past its deadline the job fails; before, wake up at the deadline. A running
	//    attempt without progress for progressDeadlineSeconds is taken as hung and
	//    restarts as a failed one (progress_deadline.go); before, wake up then.
	wake := applyDeadlinePolicy(u)
	if job.IsFinished() {
		return ctrl.Result{}, nil
	}
	stall, stalled := applyProgressDeadlinePolicy(u)
	if stalled {
		return ctrl.Result{}, nil
	}
	wake = sooner(wake, stall)

	// 8. A gang built from an older spec (a suspend and resume too quick to observe):
	//    delete it, without counting a restart; the next reconciles recreate it from
	//    the current spec, and the trainer resumes from its newest checkpoint.
	if replaced, err := r.replaceOutdatedGang(ctx, u, pods); replaced || err != nil {
		return ctrl.Result{RequeueAfter: wake}, err
	}

	// 9. Create the missing pods of the current attempt once the stale ones are gone
	//    and the restart backoff has passed (woken when it has), and while the service
	//    account they run as exists (the API server refuses them otherwise; checked
	//    again every missingReferenceRecheck).
	if left := restartWaitLeft(u); len(pods.stale) > 0 || left > 0 {
		return ctrl.Result{RequeueAfter: sooner(wake, left)}, nil
	}
	if len(pods.missingRanks(job)) > 0 {
		if u.missing, err = missingServiceAccount(ctx, r.apiReader, job); err != nil || u.missing != nil {
			return ctrl.Result{RequeueAfter: sooner(wake, missingReferenceRecheck)}, err
		}
	}
	return ctrl.Result{RequeueAfter: wake}, r.createPods(ctx, u, pods)
}

// forget drops what the reconciler keeps between reconciles of the job of key: it
// finished, or is gone.
func (r *ESPOJobReconciler) forget(key types.NamespacedName) {
	r.runConfigs.forget(key)
	r.inLine.forget(key)
}

// awaitCompanions waits for the companion writes in progress; if one failed, the job
// is not Created, and the error says why.
func awaitCompanions(u *statusUpdate, writes *companionWrites) error {
	err := writes.wait()
	if err != nil {
		u.setCondition(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonCreateFailed, err.Error())
	}
	return err
}

// emit sends the events of the status change just written and counts it in the
// operator's metrics.
func (r *ESPOJobReconciler) emit(old *trainingv1alpha1.ESPOJob, u *statusUpdate) {
	for _, e := range u.events {
		e.send(r.recorder, u.job)
	}
	recordMetrics(old, u.job, u.now)
}

// listPods lists the pods the job controls into u.pods.
func (r *ESPOJobReconciler) listPods(ctx context.Context, u *statusUpdate) error {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(u.job.Namespace),
		client.MatchingFields{ownerUIDKey: string(u.job.UID)}); err != nil {
		return fmt.Errorf("listing the trainer pods: %w", err)
	}
	u.pods, u.listed = list.Items, true
	return nil
}

// cleanUpFinished deletes a finished job's pods that still run (the workers, which
// never exit by themselves; finished pods stay for their logs), and deletes the job
// once its ttlSecondsAfterFinished has passed.
func (r *ESPOJobReconciler) cleanUpFinished(ctx context.Context, u *statusUpdate, pods *podSet) (ctrl.Result, error) {
	var running []*corev1.Pod
	for _, p := range append(pods.ranks(), pods.stale...) {
		if !terminated(p) {
			running = append(running, p)
		}
	}
	if err := r.deletePods(ctx, running); err != nil {
		return ctrl.Result{}, err
	}
	left, ok := timeToExpiry(u.job, u.now)
	switch {
	case !ok:
		return ctrl.Result{}, nil
	case left > 0:
		return ctrl.Result{RequeueAfter: left}, nil
	}
	log.FromContext(ctx).Info("deleting the job: its ttlSecondsAfterFinished has passed")
	err := r.client.Delete(ctx, u.job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &u.job.UID})
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// createPods creates the missing pods of the current attempt, in parallel. Once every
// pod exists the job is Created, and a restart in progress is over.
func (r *ESPOJobReconciler) createPods(ctx context.Context, u *statusUpdate, pods *podSet) error {
	missing := pods.missingRanks(u.job)
	created := make([]*corev1.Pod, len(missing))
	errs := make([]error, len(missing))
	workqueue.ParallelizeUntil(ctx, 16, len(missing), func(i int) {
		p := buildPod(u.job, missing[i], r.opts.PodOptions)
		if errs[i] = r.createPod(ctx, u.job, p); errs[i] == nil {
			created[i] = p
		}
	})
	have := len(pods.current)
	for _, p := range created {
		if p != nil && p.UID != "" {
			u.pods = append(u.pods, *p) // counted in this status already
			have++
		}
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil { // a cancelled ctx skips pieces
		u.setCondition(trainingv1alpha1.ConditionCreated, false, trainingv1alpha1.ReasonCreateFailed, err.Error())
		return err
	}
	n := replicas(u.job)
	if int32(have) < n {
		return nil // pods being deleted hold some names; their deletion requeues the job
	}
	u.setCondition(trainingv1alpha1.ConditionCreated, true, trainingv1alpha1.ReasonChildrenCreated,
		"created the run config, the headless Service and "+trainerPods(n))
	if c := meta.FindStatusCondition(u.status().Conditions, trainingv1alpha1.ConditionRestarting); c != nil {
		u.clearCondition(trainingv1alpha1.ConditionRestarting, trainingv1alpha1.ReasonRestarted, fmt.Sprintf("recreated the %s for %s", trainerPods(n), c.Message))
	}
	return nil
}

// createPod creates a trainer pod. If its name is taken, the holder is looked up past
// the cache: the job's own pod of the current attempt that the cache has not seen yet
// is fine; a pod of an earlier attempt, or anything else, is an error.
func (r *ESPOJobReconciler) createPod(ctx context.Context, job *trainingv1alpha1.ESPOJob, pod *corev1.Pod) error {
	err := r.client.Create(ctx, pod, client.FieldOwner(FieldManager))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating Pod %s: %w", pod.Name, err)
		}
		return nil
	}
	holder := &corev1.Pod{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), holder); err != nil {
		return fmt.Errorf("creating Pod %s: %w", pod.Name, client.IgnoreNotFound(err))
	}
	if !metav1.IsControlledBy(holder, job) {
		return fmt.Errorf("pod %s exists and is not controlled by this ESPOJob", pod.Name)
	}
	if holder.Labels[LabelRestartAttempt] != pod.Labels[LabelRestartAttempt] || holder.DeletionTimestamp != nil {
		// A pod of an earlier attempt the cache has not shown yet: it goes first.
		return fmt.Errorf("creating Pod %s: the pod of an earlier attempt still exists", pod.Name)
	}
	return nil
}

// replaceOutdatedGang deletes every current pod when one of them was built from
// another spec than the job's (the pod template policy) and reports whether it did;
// the event PodTemplateChanged is queued once the deletions were accepted. The
// restart attempt stays: the pods are recreated as on a resume.
func (r *ESPOJobReconciler) replaceOutdatedGang(ctx context.Context, u *statusUpdate, pods *podSet) (bool, error) {
	want := podTemplateHash(u.job)
	old, outdated := outdatedPodTemplate(pods, want)
	if !outdated {
		return false, nil
	}
	log.FromContext(ctx).Info("recreating the trainer pods: the spec changed under them", "from", old, "to", want)
	if err := r.deletePods(ctx, pods.ranks()); err != nil {
		return true, err
	}
	podTemplateChanged(u, old, want)
	return true, nil
}

// deletePods deletes pods, in parallel, each only if it is still the pod that was
// listed (UID precondition); pods already gone or being deleted are skipped.
func (r *ESPOJobReconciler) deletePods(ctx context.Context, pods []*corev1.Pod) error {
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, 16, len(pods), func(i int) {
		p := pods[i]
		if p.DeletionTimestamp != nil {
			return
		}
		err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err = client.IgnoreNotFound(err); err != nil && !apierrors.IsConflict(err) {
			errs[i] = fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
	})
	return errors.Join(errs...)
}

// ownerUIDKey indexes the cached children of ESPOJobs by their controller's UID.
const ownerUIDKey = ".metadata.controller.uid"

// indexByOwner is the index function of ownerUIDKey.
func indexByOwner(obj client.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.APIVersion != trainingv1alpha1.GroupVersion.String() || ref.Kind != "ESPOJob" {
		return nil
	}
	return []string{string(ref.UID)}
}

// SetupWithManager registers the owner index, the gauge espo_jobs (served while mgr
// runs) and the controller with mgr: it watches
// ESPOJobs, the pods (batched, see Options.PodEventBatchPeriod), the ConfigMaps,
// Services, Secrets and NetworkPolicies they own, and the namespaces' trainer
// identities (identityEventHandler); a second watch of ESPOJobs announces the
// trainer's resumes on another size (resumeEventHandler).
func (r *ESPOJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, ownerUIDKey, indexByOwner); err != nil {
		return fmt.Errorf("indexing pods by owner: %w", err)
	}
	gauge := registeredWhileRunning{registry: crmetrics.Registry, collector: phaseCollector{reader: mgr.GetCache()}}
	if err := mgr.Add(gauge); err != nil {
		return fmt.Errorf("adding the espo_jobs gauge: %w", err)
	}
	identity, ofIdentity := identityEventHandler(mgr.GetCache())
	return ctrl.NewControllerManagedBy(mgr).
		For(&trainingv1alpha1.ESPOJob{}, builder.WithPredicates(ignoreTrainingProgress())).
		Watches(&trainingv1alpha1.ESPOJob{}, resumeEventHandler(r.recorder)).
		Watches(&corev1.Pod{}, podEventHandler(mgr, r.opts.PodEventBatchPeriod)).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.Secret{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.ServiceAccount{}, identity, ofIdentity).
		Watches(&rbacv1.Role{}, identity, ofIdentity).
		Watches(&rbacv1.RoleBinding{}, identity, ofIdentity).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Complete(r)
}
