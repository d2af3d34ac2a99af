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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
)

// TestCheckWatchPermissions: the generated ClusterRole (config/rbac/role.yaml) lets
// the manager list and watch every kind it caches, and ask whether it may (on its
// own, without system:basic-user); a role that lacks one verb of one
// kind is refused, with an error that names the user, that verb and kind only, and
// the ClusterRole to bind.
func TestCheckWatchPermissions(t *testing.T) {
	ctx, g := context.Background(), NewWithT(t)
	operator, err := client.New(operatorConfig(t, nil), client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controllers.CheckWatchPermissions(ctx, operator, controllers.WatchedKinds())).To(Succeed(), "as the generated ClusterRole allows")
	for _, r := range []authorizationv1.ResourceAttributes{
		{Group: authorizationv1.GroupName, Resource: "selfsubjectaccessreviews", Verb: "create"},
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews", Verb: "create"},
	} {
		// Asked for the user alone, without system:authenticated (and so without
		// system:basic-user, which a cluster may narrow): the generated role allows it.
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: operatorUser, ResourceAttributes: &r}}
		g.Expect(env.Client.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Allowed).To(BeTrue(), "the generated ClusterRole allows the check's %s of %s", r.Verb, r.Resource)
	}

	rules, err := controllers.WatchRules(env.Client, controllers.WatchedKinds())
	g.Expect(err).NotTo(HaveOccurred())
	for i, r := range rules {
		if r.Resources[0] == "secrets" {
			rules[i].Verbs = []string{"list"}
		}
	}
	lacking, err := client.New(env.UserWithRules(t, "espo-no-secret-watch", rules...), client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controllers.CheckWatchPermissions(ctx, lacking, controllers.WatchedKinds())).To(MatchError(
		"the manager (espo-no-secret-watch) may not watch secrets in every namespace; its caches need them, and without them it would wait for them forever: " +
			"bind it to the operator's ClusterRole (config/rbac/role.yaml; the Helm chart installs and binds it with rbac.create=true)"))
}

// TestTheControllerRunsWithTheWatchPermissionsOnly runs the controller as a user that
// may list and watch exactly controllers.WatchedKinds, and patch job status: its
// caches sync (within a short timeout) and it reports on a job. A watch added to
// SetupWithManager without its kind in WatchedKinds leaves a cache unsynced, and this
// test fails.
func TestTheControllerRunsWithTheWatchPermissionsOnly(t *testing.T) {
	g, ns := NewWithT(t), newNamespace(t)
	rules, err := controllers.WatchRules(env.Client, controllers.WatchedKinds())
	g.Expect(err).NotTo(HaveOccurred())
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{trainingv1alpha1.GroupVersion.Group}, Resources: []string{"espojobs/status"}, Verbs: []string{"patch"}})
	cfg := env.UserWithRules(t, "espo-watches-only", rules...)
	env.StartManager(t, cfg, ns, func(o *ctrl.Options, _ *controllers.Options) {
		o.Controller.CacheSyncTimeout = 10 * time.Second
	})
	job := create(g, builders.MakeESPOJob("watches-only", ns).Obj())
	g.Eventually(condition(g, job, trainingv1alpha1.ConditionCreated), reconcileTimeout, poll).
		Should(HaveField("Status", metav1.ConditionFalse), "the controller runs, and says it may not create the job's children")
}
