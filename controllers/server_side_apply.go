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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// FieldManager is the field manager of the controller's writes: it server-side
// applies the companions and the job's status under it, and creates the pods.
const FieldManager = "espo-operator"

// applyCompanions brings every companion of the job in line with its desired state
// (desiredCompanions). It reads the first wave's companions at once, creating those
// that do not exist yet, which fails if an object the job does not control holds a
// companion's name; then starts applying those out of line and, wave after wave, the
// others, which the pods do not wait for: the returned companionWrites says when that
// is done. A companion in line costs no write, a missing one a write and no read.
func (r *ESPOJobReconciler) applyCompanions(ctx context.Context, job *trainingv1alpha1.ESPOJob) (*companionWrites, error) {
	if r.opts.NetworkPolicy.Disabled {
		if err := r.removeNetworkPolicy(ctx, job); err != nil {
			return nil, err
		}
	}
	runConfig, err := r.runConfigs.yaml(job, runProvenance(job, r.opts))
	if err != nil {
		return nil, err
	}
	token, err := newWorkerToken()
	if err != nil {
		return nil, err
	}
	waves := desiredCompanions(job, runConfig, token, r.opts.NetworkPolicy)
	outOfLine, err := r.companionsOutOfLine(ctx, job, waves[0])
	if err != nil {
		return nil, err
	}
	w := &companionWrites{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if w.err = r.writeCompanions(ctx, waves[0], outOfLine); w.err != nil {
			return
		}
		for _, wave := range waves[1:] {
			if outOfLine, w.err = r.companionsOutOfLine(ctx, job, wave); w.err != nil {
				return
			}
			if w.err = r.writeCompanions(ctx, wave, outOfLine); w.err != nil {
				return
			}
		}
	}()
	return w, nil
}

// companionsOutOfLine runs companionOutOfLine on every companion at once.
func (r *ESPOJobReconciler) companionsOutOfLine(ctx context.Context, job *trainingv1alpha1.ESPOJob, companions []companion) ([]bool, error) {
	outOfLine := make([]bool, len(companions))
	err := parallel(ctx, len(companions), func(i int) (err error) {
		outOfLine[i], err = r.companionOutOfLine(ctx, job, &companions[i])
		return err
	})
	return outOfLine, err
}

// companionWrites are companion applies in progress.
type companionWrites struct {
	done chan struct{}
	err  error
}

// wait waits until the writes are done and returns their error.
func (w *companionWrites) wait() error {
	<-w.done
	return w.err
}

// writeCompanions applies, at once, the companions whose outOfLine is true.
func (r *ESPOJobReconciler) writeCompanions(ctx context.Context, companions []companion, outOfLine []bool) error {
	return parallel(ctx, len(companions), func(i int) error {
		if !outOfLine[i] {
			return nil
		}
		return r.writeCompanion(ctx, companions[i])
	})
}

// parallel calls f for 0 to n-1 at once and joins the errors.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, n, n, func(i int) { errs[i] = f(i) })
	return errors.Join(errs...)
}

// applyCompanion applies c's desired state if it is out of line
// (companionOutOfLine).
func (r *ESPOJobReconciler) applyCompanion(ctx context.Context, job *trainingv1alpha1.ESPOJob, c companion) error {
	outOfLine, err := r.companionOutOfLine(ctx, job, &c)
	if err != nil || !outOfLine {
		return err
	}
	return r.writeCompanion(ctx, c)
}

// companionOutOfLine reads the live companion (liveOrCreated: a missing companion is
// created there) and reports whether c's desired state must be applied: the
// companion is missing, or the fields the controller applied to it differ (someone
// changed, removed or took over one); fields others added do not count. An object
// of the companion's name that is not the job's (companion.belongsTo) is an error:
// the job will neither use nor overwrite someone else's object. A live companion
// settles c's desired state where c.keep says so. A companion found in line is
// remembered (inLineMemo) until it or its desired state changes.
func (r *ESPOJobReconciler) companionOutOfLine(ctx context.Context, job *trainingv1alpha1.ESPOJob, c *companion) (bool, error) {
	live, created, err := r.liveOrCreated(ctx, *c)
	if err != nil || created {
		return false, err
	}
	if live == nil {
		return true, nil
	}
	if err := c.belongsTo(live, job); err != nil {
		return false, err
	}
	if c.keep != nil {
		c.desired = c.keep(live)
	}
	jobKey := client.ObjectKeyFromObject(job)
	desired, memo := fingerprint(c.desired)
	if memo && r.inLine.has(jobKey, live, desired) {
		return false, nil
	}
	if err := r.adoptUpdatedFields(ctx, live, ""); err != nil {
		return false, fmt.Errorf("taking over the fields of %s: %w", c, err)
	}
	applied, err := c.applied(live)
	if err != nil {
		return false, fmt.Errorf("reading the fields %s applied to %s: %w", FieldManager, c, err)
	}
	if !equality.Semantic.DeepEqual(applied, c.desired) {
		return true, nil
	}
	if memo {
		r.inLine.put(jobKey, live, desired)
	}
	return false, nil
}

// writeCompanion server-side applies c's desired state, taking over the fields it
// holds from other managers.
func (r *ESPOJobReconciler) writeCompanion(ctx context.Context, c companion) error {
	opts := []client.ApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}
	if c.uncached {
		opts = append(opts, client.DisableReadYourWritesConsistency)
	}
	if err := r.client.Apply(ctx, applyConfigurationOf(c.desired), opts...); err != nil {
		return fmt.Errorf("applying %s: %w", c, err)
	}
	return nil
}

// applyConfigurationOf is desired as the client applies it: itself, or, for an
// unstructured companion, controller-runtime's wrapper of the object.
func applyConfigurationOf(desired companionConfig) runtime.ApplyConfiguration {
	if u, ok := desired.(unstructuredConfig); ok {
		return u.applyConfiguration()
	}
	return desired
}

// liveOrCreated reads the live companion from the cache or, if its kind is uncached,
// from the API server, and returns it, or nil if there is none. A companion of a
// cached kind that the cache does not hold is created with a create-only apply
// (companion.createOnly), and created is true; where the API server refuses that
// because an object of the name exists (someone else's, or the job's own stripped of
// LabelManagedBy, which the cache does not hold), that object is read from the API
// server. So a new job's companions cost one write each and no read.
func (r *ESPOJobReconciler) liveOrCreated(ctx context.Context, c companion) (live client.Object, created bool, err error) {
	if c.uncached {
		live, err := r.liveCompanion(ctx, c)
		return live, false, err
	}
	obj := c.object()
	switch err := r.client.Get(ctx, c.key(), obj); {
	case err == nil:
		return obj, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("getting %s: %w", c, err)
	}
	if err := r.createCompanion(ctx, c); !apierrors.IsConflict(err) {
		return nil, err == nil, err
	}
	live, err = r.liveCompanion(ctx, c)
	return live, false, err
}

// createCompanion applies c's desired state if no object of its name exists; an
// error for which apierrors.IsConflict is true says that one does.
func (r *ESPOJobReconciler) createCompanion(ctx context.Context, c companion) error {
	guarded, err := c.createOnly()
	if err == nil {
		err = r.client.Apply(ctx, guarded, client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", c, err)
	}
	return nil
}

// liveCompanion reads the companion from the API server, past the cache; it returns
// nil if there is none.
func (r *ESPOJobReconciler) liveCompanion(ctx context.Context, c companion) (client.Object, error) {
	obj := c.object()
	if err := r.apiReader.Get(ctx, c.key(), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting %s: %w", c, err)
	}
	return obj, nil
}

// adoptUpdatedFields turns the fields FieldManager owns in obj (or its subresource)
// by update, as versions of the controller before server-side apply wrote them, into
// fields it owns by apply, so that an apply that leaves such a field out removes it
// instead of leaving the old value behind. It writes only when there are such fields,
// and then refreshes obj.
func (r *ESPOJobReconciler) adoptUpdatedFields(ctx context.Context, obj client.Object, subresource string) error {
	if !ownsFields(obj, metav1.ManagedFieldsOperationUpdate, subresource) {
		return nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldManager), FieldManager, csaupgrade.Subresource(subresource))
	if err != nil || patch == nil {
		return err
	}
	return r.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}

// ownsFields reports whether FieldManager owns fields of obj's subresource ("" for
// the object itself) by the operation op: an update, as versions of the controller
// before server-side apply wrote, or an apply.
func ownsFields(obj client.Object, op metav1.ManagedFieldsOperationType, subresource string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == FieldManager && f.Operation == op && f.Subresource == subresource {
			return true
		}
	}
	return false
}

// jobStatusApplyConfiguration is the controller's part of an ESPOJob's status as a
// server-side apply configuration: the whole status but status.training, which the
// trainer applies under its own field manager (trainingv1alpha1.TrainerFieldManager),
// so neither removes the other's fields. A field the status leaves out (a zero
// count, say) is removed.
type jobStatusApplyConfiguration struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Status                                 *trainingv1alpha1.ESPOJobStatus `json:"status,omitempty"`
}

// IsApplyConfiguration marks jobStatusApplyConfiguration as an apply configuration.
func (jobStatusApplyConfiguration) IsApplyConfiguration() {}

// controllerStatus is the apply configuration of job's status without
// status.training, guarded by the job's resourceVersion: it is applied only to the
// version of the job the status was computed from.
func controllerStatus(job *trainingv1alpha1.ESPOJob) *jobStatusApplyConfiguration {
	st := job.Status.DeepCopy()
	st.Training = nil
	return &jobStatusApplyConfiguration{
		TypeMetaApplyConfiguration: *metav1ac.TypeMeta().
			WithAPIVersion(trainingv1alpha1.GroupVersion.String()).WithKind("ESPOJob"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().
			WithName(job.Name).WithNamespace(job.Namespace).WithResourceVersion(job.ResourceVersion),
		Status: st,
	}
}

// writeStatus applies the recomputed status if it differs from the job's. A job
// changed since it was read (a conflict) is not written: Reconcile retries it soon
// (retryLostStatusRace), and the next reconcile computes the status from the newer
// job.
func (r *ESPOJobReconciler) writeStatus(ctx context.Context, old, updated *trainingv1alpha1.ESPOJob) error {
	if equality.Semantic.DeepEqual(old.Status, updated.Status) {
		return nil
	}
	err := r.client.Status().Apply(ctx, controllerStatus(updated), client.FieldOwner(FieldManager), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}
