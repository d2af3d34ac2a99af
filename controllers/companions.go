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
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// A job's companions are the objects its trainer pods need besides themselves: the
// ConfigMap with the run config, the headless Service, the worker token's Secret, the
// NetworkPolicy around the pods (unless disabled) and, unless the job names a service
// account of its own, the namespace's trainer identity (ServiceAccount, Role and
// RoleBinding), which the namespace's jobs share.
// The controller declares each as an apply configuration that holds only the fields
// it owns, and server-side applies it whenever the live object's fields under
// FieldManager differ: a companion someone edited or deleted is put back.

// companionConfig is the apply configuration of a companion.
type companionConfig interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
	GetKind() *string
}

// companion is one companion of a job: its desired state and how to compare a live
// object of its kind with it.
type companion struct {
	// desired holds the companion's name, namespace, labels, the job as its
	// controller, and the fields the controller owns; nothing else.
	desired companionConfig
	// newObject returns an empty object of the companion's kind.
	newObject func() client.Object
	// applied extracts from a live object of the kind the fields FieldManager
	// applied, as an apply configuration of desired's type.
	applied func(client.Object) (companionConfig, error)
	// keep, when set, is the desired state given the live object of the
	// companion's name that the job controls: the worker token's Secret keeps the
	// token it holds.
	keep func(live client.Object) companionConfig
	// uncached says the companion's kind has no informer (the operator does not
	// watch it): it is read from the API server, and written without waiting for a
	// cache to see the write.
	uncached bool
	// shared says the companion is the namespace's, shared by its jobs (the trainer
	// identity): it has no owner, and an object of its name is the operator's when
	// it carries LabelManagedBy or FieldManager applied fields of it, not when the
	// job controls it.
	shared bool
	// createOnly, set for the cached kinds, returns a copy of desired that creates
	// the companion where none of its name exists and is refused (a conflict) where
	// one does: its resourceVersion is one no object can have (createOnlyVersion).
	createOnly func() (companionConfig, error)
}

// createOnlyVersion is the resourceVersion of an apply that may only create: the
// API server treats an apply's resourceVersion as a precondition on an object that
// exists (refused with a conflict unless equal) and drops it when the apply creates
// the object. An object's resourceVersion is an etcd revision, an int64 that never
// reaches this, its largest value.
const createOnlyVersion = "9223372036854775807"

// companionOf makes a companion of desired, whose applied fields are read from a
// live *T by extract (one of client-go's Extract<Kind> functions).
func companionOf[T any, O interface {
	*T
	client.Object
}, C any, A interface {
	*C
	companionConfig
	WithResourceVersion(string) A
}](desired A, extract func(O, string) (A, error)) companion {
	return companion{
		desired:   desired,
		newObject: func() client.Object { return O(new(T)) },
		applied: func(live client.Object) (companionConfig, error) {
			return extract(live.(O), FieldManager)
		},
		createOnly: func() (companionConfig, error) {
			raw, err := json.Marshal(desired)
			if err != nil {
				return nil, err
			}
			guarded := A(new(C))
			if err := json.Unmarshal(raw, guarded); err != nil {
				return nil, err
			}
			return guarded.WithResourceVersion(createOnlyVersion), nil
		},
	}
}

// key is the companion's namespace and name.
func (c companion) key() client.ObjectKey {
	return client.ObjectKey{Namespace: *c.desired.GetNamespace(), Name: *c.desired.GetName()}
}

// object is an empty object of the companion's kind, namespace and name.
func (c companion) object() client.Object {
	obj := c.newObject()
	obj.SetNamespace(c.key().Namespace)
	obj.SetName(c.key().Name)
	return obj
}

// String is the companion's kind and name, for messages: "ConfigMap demo-config".
func (c companion) String() string { return *c.desired.GetKind() + " " + *c.desired.GetName() }

// sharedCompanion marks c as the namespace's (companion.shared).
func sharedCompanion(c companion) companion {
	c.shared = true
	return c
}

// belongsTo returns nil if live, the object of c's name, is the one c describes for
// job: the job's own, or for a shared companion the operator's (labelled
// LabelManagedBy, or with fields FieldManager applied); else an error that says
// whose it is not.
func (c companion) belongsTo(live client.Object, job *trainingv1alpha1.ESPOJob) error {
	if c.shared {
		if live.GetLabels()[LabelManagedBy] != ManagedByValue && !ownsFields(live, metav1.ManagedFieldsOperationApply, "") {
			return fmt.Errorf("%s exists and is not managed by %s: it has neither the label %s=%s nor fields %s applied",
				c, ManagedByValue, LabelManagedBy, ManagedByValue, FieldManager)
		}
		return nil
	}
	if !metav1.IsControlledBy(live, job) {
		return fmt.Errorf("%s exists and is not controlled by this ESPOJob", c)
	}
	return nil
}

// desiredCompanions builds every companion of job as the controller wants it, with
// runConfig as the run config (runConfigYAML) and token as the worker token of a new
// Secret (an existing one keeps its own), in waves. The first holds what the pods
// cannot be created or started without, which must exist as the job's own (or the
// operator's, for the shared trainer identity) before they are created: the
// ServiceAccount they run as (the ServiceAccount admission plugin refuses a pod whose
// service account does not exist) and the ConfigMap and Secret they mount (a name
// another object holds must stop the job before a pod mounts that object). The others
// are written alongside the pods, each wave once the one before it is: the Service
// (the pods' names resolve once it exists; the trainer waits for its workers), the
// NetworkPolicy, and the trainer identity's Role, then its RoleBinding (the API server
// checks a RoleBinding against the Role it binds, and waits about 100 ms for a Role
// created just before; the trainer's first reports may be refused until both exist,
// and a later report carries the whole status). The identity is written once per
// namespace; a job that finds it in line writes nothing for it, so only a namespace's
// first job waits for its ServiceAccount.
func desiredCompanions(job *trainingv1alpha1.ESPOJob, runConfig, token string, np NetworkPolicyOptions) [][]companion {
	beforePods := []companion{
		companionOf(desiredConfigMap(job, runConfig), corev1ac.ExtractConfigMap),
		workerTokenCompanion(job, token),
	}
	withPods := []companion{companionOf(desiredService(job), corev1ac.ExtractService)}
	if !np.Disabled {
		withPods = append(withPods, companionOf(desiredNetworkPolicy(job, np), networkingv1ac.ExtractNetworkPolicy))
	}
	if !ownsIdentity(job) {
		return [][]companion{beforePods, withPods}
	}
	beforePods = append(beforePods, sharedCompanion(companionOf(desiredServiceAccount(job.Namespace), corev1ac.ExtractServiceAccount)))
	withPods = append(withPods, sharedCompanion(companionOf(desiredRole(job.Namespace), rbacv1ac.ExtractRole)))
	return [][]companion{beforePods, withPods, {sharedCompanion(companionOf(desiredRoleBinding(job.Namespace), rbacv1ac.ExtractRoleBinding))}}
}

// controllerRef is the owner reference every child carries: the job, as its
// controller, so that deleting the job deletes the child and the child's events
// requeue the job.
func controllerRef(job *trainingv1alpha1.ESPOJob) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(trainingv1alpha1.GroupVersion.String()).WithKind("ESPOJob").
		WithName(job.Name).WithUID(job.UID).
		WithController(true).WithBlockOwnerDeletion(true)
}
