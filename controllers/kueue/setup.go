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

package kueue

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// The integration reads the queues and flavors Kueue admits to, writes the Workloads
// of the jobs, and suspends, unsuspends and updates the jobs' spec.trainer.
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses;localqueues;clusterqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=limitranges;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=training.espo.dev,resources=espojobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=training.espo.dev,resources=espojobs/finalizers,verbs=update

// WatchedKinds are the kinds the integration's reconciler caches, each in every
// namespace (the list and watch rules above): the Workloads, and what Kueue's job
// framework reads to build them.
func WatchedKinds() []client.Object {
	return []client.Object{
		&kueuev1beta2.Workload{}, &kueuev1beta2.LocalQueue{}, &kueuev1beta2.ClusterQueue{}, &kueuev1beta2.ResourceFlavor{},
		&kueuev1beta2.WorkloadPriorityClass{}, &schedulingv1.PriorityClass{}, &corev1.LimitRange{}, &corev1.Namespace{},
		&nodev1.RuntimeClass{},
	}
}

// ExternalFramework is the entry to add to Kueue's configuration
// (integrations.externalFrameworks) so that Kueue knows ESPOJob owns Workloads.
var ExternalFramework = fmt.Sprintf("%s.%s.%s", GVK.Kind, GVK.Version, GVK.Group)

// AddToScheme adds Kueue's API (kueue.x-k8s.io/v1beta2) to a scheme: the manager
// needs it before SetupWithManager.
func AddToScheme(s *runtime.Scheme) error { return kueuev1beta2.AddToScheme(s) }

// SetupWithManager registers with mgr Kueue's generic job reconciler for ESPOJobs: it
// creates a Workload for each job that names a LocalQueue, suspends such a job until
// Kueue admits its Workload, reports the Workload's PodsReady condition, and finishes
// the Workload when the job finishes. The
// Workloads' pod template is built with o, the options of the ESPOJob controller.
// mgr's scheme must hold Kueue's API (AddToScheme).
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, o controllers.PodOptions) error {
	if _, err := mgr.GetRESTMapper().RESTMapping(kueuev1beta2.GroupVersion.WithKind("Workload").GroupKind(), kueuev1beta2.GroupVersion.Version); err != nil {
		return fmt.Errorf("the Kueue integration needs Kueue's CRDs (kueue.x-k8s.io/%s Workload) installed: %w", kueuev1beta2.GroupVersion.Version, err)
	}
	if err := jobframework.SetupWorkloadOwnerIndex(ctx, mgr.GetFieldIndexer(), GVK); err != nil {
		return fmt.Errorf("indexing Workloads by their ESPOJob: %w", err)
	}
	newJob := func() jobframework.GenericJob {
		return &Job{ESPOJob: &trainingv1alpha1.ESPOJob{}, PodOptions: o}
	}
	//lint:ignore SA1019 Kueue's jobframework takes the old events API's recorder
	recorder := mgr.GetEventRecorderFor("kueue-espojob-controller")
	r, err := jobframework.NewGenericReconcilerFactory(newJob, named)(ctx, mgr.GetClient(), mgr.GetFieldIndexer(), recorder,
		// The PodsReady condition, for a Kueue configured with waitForPodsReady (one
		// without ignores it). Kueue's reconciler asks its scheduler cache only
		// whether to record local-queue metrics: an empty one says no.
		jobframework.WithWaitForPodsReady(&kueueconfig.WaitForPodsReady{}),
		jobframework.WithCache(schdcache.New(mgr.GetClient())))
	if err != nil {
		return err
	}
	return r.SetupWithManager(mgr)
}

// ControllerName names the integration's controller: Kueue's reconciler would take
// the kind's name, which the ESPOJob controller already has.
const ControllerName = "espojob-kueue"

// named gives Kueue's reconciler for ESPOJobs ControllerName.
func named(b *builder.Builder, _ client.Client) *builder.Builder { return b.Named(ControllerName) }
