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

package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// BindOperatorRole creates the operator's ClusterRole as generated from the RBAC
// markers (config/rbac/role.yaml), and those of the roles given by their paths under
// the repository (config/kueue/role.yaml, the Kueue integration's), and binds each to
// user, so that a controller run as user (ImpersonatedConfig) also checks that the
// markers grant enough. Call it once per control plane.
func (e *Env) BindOperatorRole(user string, extra ...string) error {
	for _, rel := range append([]string{"config/rbac/role.yaml"}, extra...) {
		if err := e.bindRole(user, rel); err != nil {
			return err
		}
	}
	return nil
}

// bindRole creates the ClusterRole in the file rel (a path under the repository) and
// binds it to user.
func (e *Env) bindRole(user, rel string) error {
	raw, err := os.ReadFile(filepath.Join(e.RepoRoot, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	_, err = e.createBoundRole(user, role)
	return err
}

// createBoundRole creates role and a ClusterRoleBinding of the same name that binds
// it to user, and returns both.
func (e *Env) createBoundRole(user string, role *rbacv1.ClusterRole) ([]client.Object, error) {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	objs := []client.Object{role, binding}
	for _, o := range objs {
		if err := e.Client.Create(context.Background(), o); err != nil {
			return nil, err
		}
	}
	return objs, e.waitUntilAuthorized(user, role.Rules)
}

// rbacTimeout bounds the wait for the API server's authorizer to apply a new binding:
// it reads roles and bindings from its informers, so a request right after the
// create may still be refused, longer on a loaded machine.
const rbacTimeout = 30 * time.Second

// waitUntilAuthorized waits until the authorizer allows user every verb of rules on
// every resource (and subresource, and the first resource name) and non-resource URL
// they name, asking it with SubjectAccessReviews; wildcards are asked as they are.
func (e *Env) waitUntilAuthorized(user string, rules []rbacv1.PolicyRule) error {
	var reviews []authorizationv1.SubjectAccessReviewSpec
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, url := range r.NonResourceURLs {
				reviews = append(reviews, authorizationv1.SubjectAccessReviewSpec{User: user,
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: url, Verb: verb}})
			}
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					attrs := &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: res}
					attrs.Resource, attrs.Subresource, _ = strings.Cut(res, "/")
					if len(r.ResourceNames) > 0 {
						attrs.Name = r.ResourceNames[0]
					}
					reviews = append(reviews, authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs})
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), rbacTimeout)
	defer cancel()
	for _, spec := range reviews {
		var last string
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			review := &authorizationv1.SubjectAccessReview{Spec: spec}
			if err := e.Client.Create(ctx, review); err != nil {
				return false, err
			}
			last = review.Status.Reason
			return review.Status.Allowed, nil
		})
		if err != nil {
			return fmt.Errorf("%s was not allowed %+v%+v within %s of its binding (%s): %w",
				user, spec.ResourceAttributes, spec.NonResourceAttributes, rbacTimeout, last, err)
		}
	}
	return nil
}

// UserWithRules binds user to a ClusterRole of its own name holding rules, until the
// test ends, and returns Config acting as user.
func (e *Env) UserWithRules(t testing.TB, user string, rules ...rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	objs, err := e.createBoundRole(user, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = e.Client.Delete(context.Background(), o)
		}
	})
	return e.ImpersonatedConfig(user)
}

// ImpersonatedConfig is Config acting as user.
func (e *Env) ImpersonatedConfig(user string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}
