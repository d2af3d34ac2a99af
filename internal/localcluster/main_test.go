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
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/espo-dev/espo-operator/internal/controlplane"
	"github.com/espo-dev/espo-operator/internal/localcluster/podnet"
)

// The shared cluster of this package's tests: a control plane, one process node with
// two fake GPUs and the scheduler.
var (
	cp       *controlplane.ControlPlane
	client   kubernetes.Interface
	testNode *Node
	stateDir string
	repoRoot string
)

// helperEnv makes the test binary act as a pod's program (see runHelper).
const helperEnv = "LOCALNODE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	klog.SetLogger(logr.Discard()) // virtual-kubelet's informers log through klog
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var err error
	if repoRoot, err = filepath.Abs(filepath.Join("..", "..")); err != nil { // go test runs in internal/localcluster
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := controlplane.Assets(repoRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cp, err = controlplane.Start(assets); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	stateDir, _ = os.MkdirTemp("", "localnode-test-")
	defer os.RemoveAll(stateDir)
	client = kubernetes.NewForConfigOrDie(cp.Config)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	testNode, err = NewNode(Config{
		NodeName: "process-node", StateDir: stateDir, GPUs: 2, CPU: resource.MustParse("4"),
		PodCIDR: testPodCIDR(), Clock: clock.RealClock{}, Log: logr.Discard(),
	}, cp.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { defer close(stopped); _ = testNode.Run(ctx) }()
	go func() { _ = NewScheduler(client, testNode.Name(), clock.RealClock{}, logr.Discard()).Run(ctx) }()
	if err := testNode.WaitReady(ctx, 30*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "node not ready:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-stopped
	return code
}

// testPodCIDR is a /24 of 127.0.0.0/8 picked from the process id, so that test
// packages running at the same time do not share pod addresses.
func testPodCIDR() string {
	pid := os.Getpid()
	return fmt.Sprintf("127.%d.%d.0/24", 100+pid%100, (pid/100)%250+1)
}

// runHelper is the program of the tests' pods, by mode:
//
//	serve   answer "hello from $HOSTNAME" on the pod network (podnet.FromEnv().Listen)
//	dial    print what $TARGET (dialed through podnet.FromEnv()) answers
//	whoami  with the kubeconfig ctrl.GetConfig finds, print the user the API server
//	        authenticates, and whether it may list secrets
func runHelper(mode string) int {
	var err error
	switch mode {
	case "serve":
		err = serveHello()
	case "dial":
		err = dialHello(os.Getenv("TARGET"))
	case "whoami":
		err = whoami()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

func serveHello() error {
	l, err := podnet.FromEnv().Listen("tcp", ":8080")
	if err != nil {
		return err
	}
	fmt.Println("listening on", l.Addr())
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s", os.Getenv("HOSTNAME"))
	}))
}

func dialHello(target string) error {
	pods := podnet.FromEnv()
	var remote string
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := pods.DialContext(ctx, network, addr)
		if err == nil {
			remote = conn.RemoteAddr().String()
		}
		return conn, err
	}}}
	resp, err := c.Get("http://" + target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	fmt.Printf("%s answered: %s\n", remote, b)
	return err
}

func whoami() error {
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Println("user:", r.Status.UserInfo.Username)
	_, err = c.CoreV1().Secrets(os.Getenv("NAMESPACE")).List(ctx, metav1.ListOptions{})
	fmt.Println("list secrets:", err)
	_, err = c.CoreV1().ConfigMaps(os.Getenv("NAMESPACE")).List(ctx, metav1.ListOptions{})
	fmt.Println("list configmaps:", err)
	return nil
}

// helperContainer runs the test binary as runHelper's mode.
func helperContainer(name, mode string, env ...corev1.EnvVar) corev1.Container {
	self, _ := os.Executable()
	return corev1.Container{
		Name: name, Image: "test", Command: []string{self},
		Env: append([]corev1.EnvVar{{Name: helperEnv, Value: mode}}, env...),
	}
}
