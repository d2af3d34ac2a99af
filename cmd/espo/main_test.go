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

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/controllers"
	"github.com/espo-dev/espo-operator/test/builders"
	"github.com/espo-dev/espo-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func TestVersionCommandPrintsVersionCommitAndGo(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	g.Expect(cmd.Execute()).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`^espo dev \(commit unknown, go1\.\d+`))
}

func TestManagerRejectsUnknownLogFormat(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetArgs([]string{"manager", "--log-format", "xml"})
	err := cmd.Execute()
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring(`--log-format "xml": must be json or text`)))
}

func TestCRDIsInstalledAndAcceptsAnESPOJob(t *testing.T) {
	g := NewWithT(t)
	job := builders.MakeESPOJob("first", "default").Obj()
	g.Expect(env.Client.Create(context.Background(), job)).To(Succeed())
	got := &trainingv1alpha1.ESPOJob{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(job), got)).To(Succeed())
	g.Expect(got.UID).NotTo(BeEmpty())
}

// TestManagerSetsItsGCPercentUnlessGOGCIsSet checks that the manager's garbage
// collection target is managerGCPercent without GOGC, and GOGC's with it.
func TestManagerSetsItsGCPercentUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if !setManagerGCPercent(func(string) string { return "" }) || debug.SetGCPercent(100) != managerGCPercent {
		t.Errorf("without GOGC the target is not %d", managerGCPercent)
	}
	debug.SetGCPercent(80) // as GOGC=80 would have set it at start
	if setManagerGCPercent(func(k string) string { return map[string]string{"GOGC": "80"}[k] }) || debug.SetGCPercent(100) != 80 {
		t.Error("with GOGC=80 the target is not left at 80")
	}
}

// TestManagerServesProbesAndAuthenticatedMetrics starts the real manager against the
// test API server and checks its health endpoints (not ready while the trainer status
// policy's binding is gone), that /metrics answers only to callers the API server
// authenticates and authorizes, and that it releases its leader Lease when it stops,
// so that a standby need not wait for the Lease to run out.
func TestManagerServesProbesAndAuthenticatedMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	o := managerOptions{
		metricsAddr: freeAddr(t), secureMetrics: true, probeAddr: freeAddr(t), pprofAddr: freeAddr(t),
		leaderElect: true, leaderElectionNamespace: "default", gracefulShutdown: 5 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- runManager(ctx, env.Config, o) }()
	lease := &coordinationv1.Lease{}
	leaseKey := client.ObjectKey{Namespace: o.leaderElectionNamespace, Name: controllers.LeaderElectionID}
	defer func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(BeNil()), "graceful shutdown")
		g.Expect(env.Client.Get(context.Background(), leaseKey, lease)).To(Succeed())
		g.Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).To(BeEmpty(), "the stopped manager released its Lease")
	}()

	probe := "http://" + o.probeAddr
	g.Eventually(func() (int, error) { return statusOf(probe+"/readyz", "") }, 30*time.Second).Should(Equal(http.StatusOK))
	g.Expect(statusOf(probe+"/healthz", "")).To(Equal(http.StatusOK))
	g.Expect(statusOf("http://"+o.pprofAddr+"/debug/pprof/heap", "")).To(Equal(http.StatusOK), "--pprof-bind-address")

	metrics := "https://" + o.metricsAddr + "/metrics"
	g.Eventually(func() (int, error) { return statusOf(metrics, "") }, 30*time.Second).Should(Equal(http.StatusUnauthorized))
	g.Expect(statusOf(metrics, serviceAccountToken(t, "no-metrics", false))).To(Equal(http.StatusForbidden))
	reader := serviceAccountToken(t, "metrics-reader", true)
	g.Expect(statusOf(metrics, reader)).To(Equal(http.StatusOK))
	body, err := get(metrics, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(ContainSubstring("leader_election_master_status"))
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, leaseKey, lease)).To(Succeed())
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}, 30*time.Second).Should(Not(BeEmpty()), "the manager leads")

	restore := deletePolicyBinding(t)
	g.Eventually(func() (int, error) { return statusOf(probe+"/readyz", "") }, 30*time.Second).Should(Equal(http.StatusInternalServerError))
	restore()
	g.Eventually(func() (int, error) { return statusOf(probe+"/readyz", "") }, 30*time.Second).Should(Equal(http.StatusOK))
}

// TestManagerRefusesToStartWithoutWatchPermissions: run as a user that may read the
// trainer status policy and nothing else, the manager exits at once, naming the user,
// what it may not list and watch, and the ClusterRole to bind, instead of waiting for
// caches that never fill.
func TestManagerRefusesToStartWithoutWatchPermissions(t *testing.T) {
	g := NewWithT(t)
	const user = "espo-policy-reader-only"
	cfg := env.UserWithRules(t, user, rbacv1.PolicyRule{APIGroups: []string{admissionregistrationv1.GroupName},
		Resources:     []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
		ResourceNames: []string{controllers.TrainerStatusPolicyName}, Verbs: []string{"get"}})
	done := make(chan error, 1)
	go func() {
		o := managerOptions{metricsAddr: "0", probeAddr: "0", gracefulShutdown: time.Second}
		done <- runManager(context.Background(), cfg, o)
	}()
	var err error
	g.Eventually(done, 30*time.Second).Should(Receive(&err), "the manager exits")
	g.Expect(err).To(MatchError(And(
		ContainSubstring("the manager ("+user+") may not list and watch espojobs.training.espo.dev, list and watch pods"),
		ContainSubstring("list and watch networkpolicies.networking.k8s.io"),
		ContainSubstring("bind it to the operator's ClusterRole (config/rbac/role.yaml"))))
}

// TestManagerRefusesToStartWithoutTheTrainerStatusPolicy: without the policy's
// binding the manager exits at once, naming what is missing and how to install it.
func TestManagerRefusesToStartWithoutTheTrainerStatusPolicy(t *testing.T) {
	restore := deletePolicyBinding(t)
	defer restore()
	o := managerOptions{metricsAddr: "0", probeAddr: "0", gracefulShutdown: time.Second}
	err := runManager(context.Background(), env.Config, o)
	NewWithT(t).Expect(err).To(MatchError(And(
		ContainSubstring("the ValidatingAdmissionPolicyBinding espo-trainer-status, which holds each trainer to its own job's status, is not installed"),
		ContainSubstring("kubectl apply -f config/policy/trainer_status_policy.yaml"))))
}

// deletePolicyBinding deletes the trainer status policy's binding and returns a
// function that installs it again (also run when the test ends).
func deletePolicyBinding(t *testing.T) (restore func()) {
	t.Helper()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	binding.Name = controllers.TrainerStatusPolicyName
	if err := env.Client.Delete(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := testenv.InstallTrainerStatusPolicy(env.Config, env.Client); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// serviceAccountToken creates a service account, optionally allowed to GET /metrics,
// and returns a token for it.
func serviceAccountToken(t *testing.T, name string, allowMetrics bool) string {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if allowMetrics {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}},
		}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var insecureClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed serving cert
}

func do(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return insecureClient.Do(req)
}

func statusOf(url, token string) (int, error) {
	resp, err := do(url, token)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func get(url, token string) (string, error) {
	resp, err := do(url, token)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
