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
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// WatchedKinds are the kinds the ESPOJob controller watches (SetupWithManager), each
// in every namespace: its caches list and watch them all before it reconciles.
// TestTheControllerRunsWithTheWatchPermissionsOnly fails when a watch is added
// without its kind here.
func WatchedKinds() []client.Object {
	return []client.Object{
		&trainingv1alpha1.ESPOJob{}, &corev1.Pod{}, &corev1.ConfigMap{}, &corev1.Service{}, &corev1.Secret{},
		&networkingv1.NetworkPolicy{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{},
	}
}

// The check asks the API server, which every authenticated user may (the role
// system:basic-user); the operator's own role allows it too, for clusters that
// narrowed that role.
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// WatchRules returns, for each of kinds, the RBAC rule that lets a cache list and
// watch it: its API group and resource as the API server serves them (c's scheme
// and REST mapper), verbs list and watch.
func WatchRules(c client.Client, kinds []client.Object) ([]rbacv1.PolicyRule, error) {
	rules := make([]rbacv1.PolicyRule, 0, len(kinds))
	for _, obj := range kinds {
		gvk, err := apiutil.GVKForObject(obj, c.Scheme())
		if err != nil {
			return nil, err
		}
		mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("the API server does not serve %s: %w", gvk, err)
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{mapping.Resource.Group},
			Resources: []string{mapping.Resource.Resource}, Verbs: []string{"list", "watch"}})
	}
	return rules, nil
}

// CheckWatchPermissions asks the API server (SelfSubjectAccessReview) whether c's
// identity may do what WatchRules of kinds allow, in every namespace. Without it the
// manager's caches never fill: it would wait for them, time out after two minutes and
// then spin without exiting. The error names the identity, what it may not do and the
// ClusterRole that grants it.
func CheckWatchPermissions(ctx context.Context, c client.Client, kinds []client.Object) error {
	rules, err := WatchRules(c, kinds)
	if err != nil {
		return err
	}
	var missing []string
	for _, rule := range rules {
		group, resource := rule.APIGroups[0], rule.Resources[0]
		var denied []string
		for _, verb := range rule.Verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb}}}
			if err := c.Create(ctx, review); err != nil {
				return fmt.Errorf("asking the API server whether the manager may %s %s: %w", verb, qualified(group, resource), err)
			}
			if !review.Status.Allowed {
				denied = append(denied, verb)
			}
		}
		if len(denied) > 0 {
			missing = append(missing, fmt.Sprintf("%s %s", strings.Join(denied, " and "), qualified(group, resource)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the manager%s may not %s in every namespace; its caches need them, and without them it would wait for them forever: "+
		"bind it to the operator's ClusterRole (config/rbac/role.yaml; the Helm chart installs and binds it with rbac.create=true)",
		identityOf(ctx, c), strings.Join(missing, ", "))
}

// qualified writes a resource as RBAC rules and kubectl name it: "pods",
// "networkpolicies.networking.k8s.io".
func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// identityOf returns " (<user name>)", the user the API server takes c for
// (SelfSubjectReview), or "" when it does not say.
func identityOf(ctx context.Context, c client.Client) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil || review.Status.UserInfo.Username == "" {
		return ""
	}
	return " (" + review.Status.UserInfo.Username + ")"
}
