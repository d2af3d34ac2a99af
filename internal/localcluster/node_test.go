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

package localcluster

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/espo-dev/espo-operator/internal/controlplane"
)

// Named timeouts of the tests that wait on the cluster.
const (
	podStartTimeout = 20 * time.Second
	podStopTimeout  = 20 * time.Second
	pollInterval    = 50 * time.Millisecond
	gcTimeout       = 10 * time.Second
	// namespaceDefaultsTimeout bounds the wait for a new namespace's default service
	// account and root CA ConfigMap, which the control plane makes asynchronously.
	namespaceDefaultsTimeout = 30 * time.Second
)

// newNamespace creates a namespace for one test and waits until it has its default
// service account and root CA ConfigMap, as a cluster's end-to-end tests do.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "localnode-"}}
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func() error {
		ctx := context.Background()
		if _, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, controlplane.DefaultServiceAccount, metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := client.CoreV1().ConfigMaps(ns.Name).Get(ctx, controlplane.RootCAConfigMap, metav1.GetOptions{})
		return err
	}, namespaceDefaultsTimeout, pollInterval).Should(Succeed())
	return ns.Name
}

// shPod is a pod with one container running script with /bin/sh.
func shPod(ns, name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "main", Image: "none", Command: []string{"/bin/sh", "-c", script},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

func create[T any](g Gomega, obj T, create func(context.Context, T, metav1.CreateOptions) (T, error)) T {
	out, err := create(context.Background(), obj, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

func getPod(ns, name string) func() (*corev1.Pod, error) {
	return func() (*corev1.Pod, error) {
		return client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	}
}

func phase(p *corev1.Pod) corev1.PodPhase { return p.Status.Phase }

func TestNodeRegisters(t *testing.T) {
	g := NewWithT(t)
	n, err := client.CoreV1().Nodes().Get(context.Background(), testNode.Name(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Status.Allocatable).To(HaveKeyWithValue(GPUResource, resource.MustParse("2")))
	g.Expect(n.Status.Allocatable).To(HaveKeyWithValue(corev1.ResourceCPU, resource.MustParse("4")))
	g.Expect(n.Labels).To(HaveKeyWithValue(LabelProcessNode, "true"))
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	g.Expect(ready).To(BeTrue(), "node Ready condition")
}

func TestPodFailsWithExitCodeAndLogs(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create(g, shPod(ns, "hello", "echo hello; exit 3"), client.CoreV1().Pods(ns).Create)

	g.Eventually(getPod(ns, "hello"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodFailed)))
	pod, _ := getPod(ns, "hello")()
	g.Expect(pod.Spec.NodeName).To(Equal(testNode.Name()))
	term := pod.Status.ContainerStatuses[0].State.Terminated
	g.Expect(term).NotTo(BeNil())
	g.Expect(term.ExitCode).To(BeEquivalentTo(3))
	g.Expect(term.Message).To(Equal("hello\n"), "termination message falls back to the log")

	rc, err := testNode.provider.GetContainerLogs(context.Background(), ns, "hello", "main", api.ContainerLogOpts{})
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := io.ReadAll(rc)
	g.Expect(string(b)).To(Equal("hello\n"))

	out, err := kubectl(t, "logs", "-n", ns, "hello")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("hello\n"))
}

// Each container writes its own termination message, as under kubelet: one at its
// terminationMessagePath (rewritten to its own file), one at
// $ESPO_TERMINATION_MESSAGE_PATH; the log is the fallback only when the file is empty.
func TestEachContainerHasItsOwnTerminationMessage(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "messages", `echo "serving metrics"; printf 'dataset: bad JSON' > /dev/termination-log; exit 1`)
	pod.Spec.Containers = append(pod.Spec.Containers,
		corev1.Container{Name: "env", Image: "none", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Command: []string{"/bin/sh", "-c", `echo noise; printf 'worker: out of memory' > "$ESPO_TERMINATION_MESSAGE_PATH"; exit 2`}},
		corev1.Container{Name: "custom", Image: "none", TerminationMessagePath: "/var/log/why",
			Command: []string{"/bin/sh", "-c", `printf 'custom path' > /var/log/why; exit 3`}},
		corev1.Container{Name: "silent", Image: "none", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Command: []string{"/bin/sh", "-c", `echo "the log's tail"; exit 4`}})
	create(g, pod, client.CoreV1().Pods(ns).Create)

	g.Eventually(getPod(ns, "messages"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodFailed)))
	pod, _ = getPod(ns, "messages")()
	messages := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		g.Expect(cs.State.Terminated).NotTo(BeNil(), cs.Name)
		messages[cs.Name] = cs.State.Terminated.Message
	}
	g.Expect(messages).To(Equal(map[string]string{
		"main": "dataset: bad JSON", "env": "worker: out of memory", "custom": "custom path", "silent": "the log's tail\n",
	}))
}

// kubectl runs the real kubectl against the test cluster as an administrator.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	kc, err := cp.AdminKubeconfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", path}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func TestEnvConfigMapAndClaimAreVisible(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Data: map[string]string{"run.yaml": "output: /data/out\n", "greeting": "hi"}}, client.CoreV1().ConfigMaps(ns).Create)
	create(g, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}},
		client.CoreV1().PersistentVolumeClaims(ns).Create)
	pod := shPod(ns, "env", `set -e
out=$(sed -n 's/^output: //p' /etc/espo/run.yaml)
mkdir -p "$out"
echo "$POD_NAME $POD_NAMESPACE $POD_IP $GREETING" > "$out/env.txt"
echo scratch > /scratch/file && cat /scratch/file >> "$out/env.txt"
pwd >> "$out/env.txt"`)
	pod.Spec.Containers[0].WorkingDir = "/data"
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "greeting"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/espo"}, {Name: "data", MountPath: "/data"}, {Name: "scratch", MountPath: "/scratch"},
	}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	create(g, pod, client.CoreV1().Pods(ns).Create)

	g.Eventually(getPod(ns, "env"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))
	pod, _ = getPod(ns, "env")()
	b, err := os.ReadFile(filepath.Join(ClaimDir(stateDir, ns, "claim"), "out", "env.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	g.Expect(lines).To(HaveLen(3))
	g.Expect(lines[0]).To(Equal(strings.Join([]string{"env", ns, pod.Status.PodIP, "hi"}, " ")))
	g.Expect(pod.Status.PodIP).To(HavePrefix("127."))
	g.Expect(lines[1]).To(Equal("scratch"))
	g.Expect(lines[2]).To(HaveSuffix("/root/data"), "the working directory is under the pod's root")
}

func TestMissingClaimKeepsPodPending(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	withClaim := func(name string) *corev1.Pod {
		pod := shPod(ns, name, "exit 0")
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"}}}}
		return pod
	}
	create(g, withClaim("unbound"), client.CoreV1().Pods(ns).Create)
	bound := withClaim("bound")
	bound.Spec.NodeName = testNode.Name() // skips the scheduler: the node itself must wait
	create(g, bound, client.CoreV1().Pods(ns).Create)

	g.Eventually(getPod(ns, "unbound"), podStartTimeout, pollInterval).Should(WithTransform(
		condition(corev1.PodScheduled), And(
			HaveField("Reason", corev1.PodReasonUnschedulable),
			HaveField("Message", `0/1 nodes are available: persistentvolumeclaim "missing" not found.`))))
	g.Eventually(getPod(ns, "bound"), podStartTimeout, pollInterval).Should(WithTransform(
		condition(corev1.PodReadyToStartContainers), And(
			HaveField("Status", corev1.ConditionFalse),
			HaveField("Reason", reasonFailedMount),
			HaveField("Message", ContainSubstring(`persistentvolumeclaims "missing" not found`)))))
	g.Expect(getPod(ns, "bound")()).To(WithTransform(phase, Equal(corev1.PodPending)))

	create(g, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}},
		client.CoreV1().PersistentVolumeClaims(ns).Create)
	for _, name := range []string{"unbound", "bound"} {
		g.Eventually(getPod(ns, name), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)), name)
	}
}

// condition extracts a pod condition (the zero condition when absent).
func condition(t corev1.PodConditionType) func(*corev1.Pod) corev1.PodCondition {
	return func(p *corev1.Pod) corev1.PodCondition {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return c
			}
		}
		return corev1.PodCondition{}
	}
}

func TestDeletingPodKillsItsProcesses(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "stubborn", "trap '' TERM; echo started; sleep 1000")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) // SIGTERM is ignored: SIGKILL after 1s
	pod = create(g, pod, client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "stubborn"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodRunning)))
	pidFile := filepath.Join(stateDir, "pods", ns, "stubborn-"+string(pod.UID), "containers", "main", "pid")
	b, err := os.ReadFile(pidFile)
	g.Expect(err).NotTo(HaveOccurred())
	pid, _ := strconv.Atoi(string(b))
	g.Expect(syscall.Kill(-pid, 0)).To(Succeed(), "the process group is alive")

	g.Expect(client.CoreV1().Pods(ns).Delete(context.Background(), "stubborn", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() error { return syscall.Kill(-pid, 0) }, podStopTimeout, pollInterval).Should(MatchError(syscall.ESRCH))
	g.Eventually(func() bool { _, err := getPod(ns, "stubborn")(); return apierrors.IsNotFound(err) },
		podStopTimeout, pollInterval).Should(BeTrue(), "the pod object is removed")
	g.Eventually(func() bool {
		_, err := os.Stat(filepath.Dir(filepath.Dir(filepath.Dir(pidFile))))
		return os.IsNotExist(err)
	},
		podStopTimeout, pollInterval).Should(BeTrue(), "the pod's folder is removed")
}

func TestDeletedPodIsRemovedOnceItsProcessesExit(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "polite", "exec sleep 1000") // sleep ends on SIGTERM
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	create(g, pod, client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "polite"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodRunning)))

	g.Expect(client.CoreV1().Pods(ns).Delete(context.Background(), "polite", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool { _, err := getPod(ns, "polite")(); return apierrors.IsNotFound(err) },
		podStopTimeout, pollInterval).Should(BeTrue(), "the pod object is removed, long before its grace period ends")
}

func TestPodsReachEachOtherByName(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: ns},
		Spec: corev1.PodSpec{Hostname: "server", Subdomain: "net", AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{helperContainer("serve", "serve")}},
	}
	create(g, server, client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "server"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodRunning)))

	target := "server.net." + ns + ".svc:8080"
	dialer := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dialer", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{helperContainer("dial", "dial", corev1.EnvVar{Name: "TARGET", Value: target})}},
	}
	create(g, dialer, client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "dialer"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))

	s, _ := getPod(ns, "server")()
	d, _ := getPod(ns, "dialer")()
	g.Expect(s.Status.PodIP).NotTo(Equal(d.Status.PodIP))
	out, err := kubectl(t, "logs", "-n", ns, "dialer")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(s.Status.PodIP + ":8080 answered: hello from server"))
}

func TestServiceAccountKubeconfigAuthenticatesAsThePod(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	create(g, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: ns}}, client.CoreV1().ServiceAccounts(ns).Create)
	create(g, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}},
		client.RbacV1().Roles(ns).Create)
	create(g, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-configmaps"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "runner", Namespace: ns}}},
		client.RbacV1().RoleBindings(ns).Create)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "whoami", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: "runner",
			Containers: []corev1.Container{helperContainer("whoami", "whoami", corev1.EnvVar{Name: "NAMESPACE", Value: ns})}},
	}
	create(g, pod, client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "whoami"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))

	rc, err := testNode.provider.GetContainerLogs(ctx, ns, "whoami", "whoami", api.ContainerLogOpts{})
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := io.ReadAll(rc)
	g.Expect(string(b)).To(ContainSubstring("user: system:serviceaccount:" + ns + ":runner\n"))
	g.Expect(string(b)).To(ContainSubstring(`list secrets: secrets is forbidden`))
	g.Expect(string(b)).To(ContainSubstring("list configmaps: <nil>\n"))
}

// TestPodOfAMissingServiceAccountIsRefused: the API server runs the ServiceAccount
// admission plugin, as a real one does, so a pod naming a service account that does
// not exist is refused at creation, naming it.
func TestPodOfAMissingServiceAccountIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "nosa", "exit 0")
	pod.Spec.ServiceAccountName = "absent"
	_, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a pod of a missing service account: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`serviceaccount "absent" not found`))
}

// TestAdmittedPodMountsItsServiceAccountVolume: the admission plugin gives a pod the
// projected token volume (token, the namespace's kube-root-ca.crt as ca.crt, the
// namespace), and the node materialises it at the service-account path: the files
// are there, the CA is the API server's, and the token authenticates as the pod's
// service account (TestServiceAccountKubeconfigAuthenticatesAsThePod).
func TestAdmittedPodMountsItsServiceAccountVolume(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "mounted", "cd /var/run/secrets/kubernetes.io/serviceaccount && test -s token && cat namespace ca.crt")
	pod.Spec.AutomountServiceAccountToken = nil
	pod = create(g, pod, client.CoreV1().Pods(ns).Create)
	g.Expect(pod.Spec.ServiceAccountName).To(Equal(controlplane.DefaultServiceAccount))
	g.Expect(pod.Spec.Volumes).To(ContainElement(HaveField("Projected", Not(BeNil()))), "the admission plugin added no token volume")

	g.Eventually(getPod(ns, "mounted"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))
	out, err := kubectl(t, "logs", "-n", ns, "mounted")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal(ns + string(cp.Config.CAData)))
}

// TestProjectedAndDownwardAPIVolumes: a projected volume of a ConfigMap item, a
// Secret and the pod's annotations, and a downwardAPI volume of its name, are files as
// kubelet writes them.
func TestProjectedAndDownwardAPIVolumes(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	create(g, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: ns}, Data: map[string]string{"a": "from-configmap", "b": "left-out"}},
		client.CoreV1().ConfigMaps(ns).Create)
	create(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cred", Namespace: ns}, Data: map[string][]byte{"key": []byte("from-secret")}},
		client.CoreV1().Secrets(ns).Create)
	pod := shPod(ns, "projected", "cd /etc/all && cat conf/a cred/key && echo && cat annotations && echo && cat /etc/name/name")
	pod.Annotations = map[string]string{"z": "last", "app": `say "hi"`}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Items: []corev1.KeyToPath{{Key: "a", Path: "conf/a"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cred"}, Items: []corev1.KeyToPath{{Key: "key", Path: "cred/key"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}},
		}}}},
		{Name: "name", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "all", MountPath: "/etc/all"}, {Name: "name", MountPath: "/etc/name"}}
	create(g, pod, client.CoreV1().Pods(ns).Create)

	g.Eventually(getPod(ns, "projected"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))
	out, err := kubectl(t, "logs", "-n", ns, "projected")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("from-configmapfrom-secret\napp=\"say \\\"hi\\\"\"\nz=\"last\"\nprojected"))
}

// TestMissingSecretKeyIsACreateContainerConfigError: a container whose environment
// names a Secret that does not exist waits, as under a kubelet, with reason
// CreateContainerConfigError and the cause in its message; another container of the
// pod keeps waiting in ContainerCreating. Once the Secret is there, the pod runs.
func TestMissingSecretKeyIsACreateContainerConfigError(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	pod := shPod(ns, "nosecret", `test "$KEY" = s3cret`)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "key"}}}}
	other := pod.Spec.Containers[0]
	other.Name, other.Env, other.Command = "other", nil, []string{"/bin/sh", "-c", "exit 0"}
	pod.Spec.Containers = append(pod.Spec.Containers, other)
	create(g, pod, client.CoreV1().Pods(ns).Create)
	waiting := func(name string) func(*corev1.Pod) *corev1.ContainerStateWaiting {
		return func(p *corev1.Pod) *corev1.ContainerStateWaiting {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == name {
					return cs.State.Waiting
				}
			}
			return nil
		}
	}
	g.Eventually(getPod(ns, "nosecret"), podStartTimeout, pollInterval).Should(And(
		WithTransform(waiting(pod.Spec.Containers[0].Name), And(Not(BeNil()),
			HaveField("Reason", "CreateContainerConfigError"), HaveField("Message", ContainSubstring(`"absent" not found`)))),
		WithTransform(waiting("other"), And(Not(BeNil()), HaveField("Reason", "ContainerCreating")))))
	create(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns},
		Data: map[string][]byte{"key": []byte("s3cret")}}, client.CoreV1().Secrets(ns).Create)
	g.Eventually(getPod(ns, "nosecret"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodSucceeded)))
}

func TestGPURequestsAreScheduledWithinAllocatable(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	gpuPod := func(name, gpus string) *corev1.Pod {
		pod := shPod(ns, name, "sleep 1000")
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: resource.MustParse(gpus)}
		return pod
	}
	create(g, gpuPod("two", "2"), client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "two"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodRunning)))
	create(g, gpuPod("one-more", "1"), client.CoreV1().Pods(ns).Create)
	g.Eventually(getPod(ns, "one-more"), podStartTimeout, pollInterval).Should(WithTransform(
		condition(corev1.PodScheduled), HaveField("Message", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")))

	g.Expect(client.CoreV1().Pods(ns).Delete(context.Background(), "two", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(getPod(ns, "one-more"), podStartTimeout, pollInterval).Should(WithTransform(phase, Equal(corev1.PodRunning)))
	g.Expect(client.CoreV1().Pods(ns).Delete(context.Background(), "one-more", metav1.DeleteOptions{})).To(Succeed())
}

// TestANewPodUnderAnOldPodsNameRunsAfresh: the node still runs a failed pod that
// Kubernetes deleted without the node hearing of it (as while the API server was away),
// and a new pod of the same name comes (virtual-kubelet sends it as an update, the
// name being known): the new pod gets a run of its own, with its own status, and the
// old run's folder goes.
func TestANewPodUnderAnOldPodsNameRunsAfresh(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	p := testNode.provider
	ctx := context.Background()
	old := shPod(ns, "reused", "exit 3")
	old.UID = "old-uid"
	g.Expect(p.CreatePod(ctx, old)).To(Succeed())
	g.Eventually(func() (*corev1.Pod, error) { return p.GetPod(ctx, ns, "reused") }, podStartTimeout, pollInterval).
		Should(WithTransform(phase, Equal(corev1.PodFailed)))
	oldDir := filepath.Join(stateDir, "pods", ns, "reused-old-uid")
	g.Expect(oldDir).To(BeADirectory())

	renewed := shPod(ns, "reused", "exec sleep 1000")
	renewed.UID = "new-uid"
	g.Expect(p.UpdatePod(ctx, renewed)).To(Succeed())
	g.Eventually(func() (*corev1.Pod, error) { return p.GetPod(ctx, ns, "reused") }, podStartTimeout, pollInterval).
		Should(And(WithTransform(phase, Equal(corev1.PodRunning)),
			WithTransform(func(p *corev1.Pod) string { return string(p.UID) }, Equal("new-uid"))))
	g.Eventually(func() string { return oldDir }, podStopTimeout, pollInterval).ShouldNot(BeADirectory())
	g.Expect(p.CreatePod(ctx, renewed)).To(Succeed(), "the same pod again is no news")

	g.Expect(p.DeletePod(ctx, renewed)).To(Succeed())
	g.Eventually(func() *podRun { return p.lookup(ns, "reused") }, podStopTimeout, pollInterval).Should(BeNil())
}
