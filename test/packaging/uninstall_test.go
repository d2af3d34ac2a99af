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

package packaging

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
)

// uninstallHeading is the user guide's section whose commands TestUninstallCommands runs.
const uninstallHeading = "### Uninstall"

// TestUninstallCommands runs the commands of the user guide's Uninstall section, in
// their order, after a job of the real controller has made its namespace's trainer
// identity: each kubectl command as written, and in place of `helm uninstall` the
// controller is stopped. Afterwards the job and the identity's ServiceAccount, Role
// and RoleBinding are gone, and what is not the operator's trainer identity stays: the
// operator's own ServiceAccount, and a user's ServiceAccount named espo-trainer in
// another namespace.
func TestUninstallCommands(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := "uninstall", "uninstall-other"
	ensureNamespace(t, ns, nil)
	ensureNamespace(t, other, nil)
	stopOperator, operator := startOperator(t, ns)
	users := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: controllers.TrainerIdentityName,
		Labels: map[string]string{controllers.LabelComponent: controllers.ComponentTrainerIdentity}}}
	g.Expect(env.Client.Create(ctx, users)).To(Succeed())

	sample := readSample(t, "training_v1alpha1_espojob_minimal.yaml")
	sample.SetNamespace(ns)
	g.Expect(env.Client.Create(ctx, sample)).To(Succeed())
	identity := []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}}
	key := client.ObjectKey{Namespace: ns, Name: controllers.TrainerIdentityName}
	for _, o := range identity {
		g.Eventually(func() error { return env.Client.Get(ctx, key, o) }, stepTimeout, poll).Should(Succeed(), "the job's trainer identity, %T", o)
	}

	kubeconfig := writeKubeconfig(t, env.Config)
	commands := uninstallCommands(t)
	g.Expect(commands).NotTo(BeEmpty(), "the guide's %q section has no commands", uninstallHeading)
	for _, args := range commands {
		switch args[0] {
		case "kubectl":
			if out, err := startKubectl(t, kubeconfig, args[1:]...)(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
		case "helm":
			stopOperator()
		default:
			t.Fatalf("the guide's %q section runs %q, which this test does not know: %s", uninstallHeading, args[0], strings.Join(args, " "))
		}
	}

	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(sample), &trainingv1alpha1.ESPOJob{}))).To(BeTrue(), "the job is deleted")
	for _, o := range identity {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key, o))).To(BeTrue(), "the trainer identity's %T is deleted", o)
	}
	g.Expect(env.Client.Get(ctx, operator, &corev1.ServiceAccount{})).To(Succeed(), "the operator's own ServiceAccount stays")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(users), &corev1.ServiceAccount{})).To(Succeed(), "a user's espo-trainer ServiceAccount stays")
}

// uninstallCommands returns the commands of the guide's Uninstall section's code
// blocks, in order, each split into its words (a line ending in a backslash goes on
// on the next). The commands quote nothing, which the test checks.
func uninstallCommands(t *testing.T) [][]string {
	t.Helper()
	_, section, found := strings.Cut(strings.Join(guideLines(t), "\n"), "\n"+uninstallHeading+"\n")
	if !found {
		t.Fatalf("docs/user-guide.md has no %q section", uninstallHeading)
	}
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	var commands [][]string
	for _, b := range codeBlocks(section) {
		for _, line := range strings.Split(strings.ReplaceAll(b.text, "\\\n", " "), "\n") {
			if strings.ContainsAny(line, `"'$`) {
				t.Fatalf("the guide's %q section: %q quotes or expands, which this test does not: keep its commands plain words", uninstallHeading, line)
			}
			if words := strings.Fields(line); len(words) > 0 {
				commands = append(commands, words)
			}
		}
	}
	return commands
}
