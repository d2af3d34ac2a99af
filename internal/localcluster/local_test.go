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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestLocalStateDirFollowsXDGStateHome(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	NewWithT(t).Expect(DefaultStateDir()).To(Equal("/xdg/state/espo-operator/local"))
}

func TestPrintAccuraciesShowsEachStage(t *testing.T) {
	job := &trainingv1alpha1.ESPOJob{}
	job.Name = "espo-minimal"
	job.Status.Phase = trainingv1alpha1.PhaseSucceeded
	job.Status.Training = &trainingv1alpha1.TrainingStatus{Outcome: trainingv1alpha1.OutcomeCompleted,
		Evaluation: &trainingv1alpha1.EvaluationStatus{Split: "test", Epoch: 6, Step: 42,
			GUITypeAccuracy: "0.812", IntentAccuracy: "0.650", RecommendationAccuracy: "0.700"}}
	var out bytes.Buffer
	printAccuracies(&out, job)
	g := NewWithT(t)
	g.Expect(out.String()).To(ContainSubstring("Job espo-minimal Succeeded (Completed): test evaluation after epoch 6, step 42"))
	g.Expect(out.String()).To(MatchRegexp(`GUI operation\s+action type \(GUI-Acc\)\s+0\.812`))
	g.Expect(out.String()).To(MatchRegexp(`Intent\s+intent \(Intent-Acc\)\s+0\.650`))
	g.Expect(out.String()).To(MatchRegexp(`Recommendation\s+recommendation \(Rec-Acc\)\s+0\.700`))
}

func TestShowProgressPrintsTheHeaderOnceOffATerminal(t *testing.T) {
	var out bytes.Buffer
	showProgress(&out, "", "NAME  STEP\njob   1\n")
	showProgress(&out, "NAME  STEP\njob   1\n", "NAME  STEP\njob   2\n")
	NewWithT(t).Expect(out.String()).To(Equal("NAME  STEP\njob   1\njob   2\n"))
}

// serveReadyClock is the clock of an "up" waiting for serve: each After creates the
// ready file (as serve does once the cluster is up) and fires at once.
type serveReadyClock struct {
	*testingclock.FakeClock
	ready string
	waits int
}

func (c *serveReadyClock) After(time.Duration) <-chan time.Time {
	c.waits++
	if err := os.WriteFile(c.ready, nil, 0o644); err != nil {
		panic(err)
	}
	fired := make(chan time.Time, 1)
	fired <- c.Now()
	return fired
}

// localWithControlPlane is the options of an "up" on a state folder whose
// controlplane.pids records a running process, which it returns; starting a serve
// is recorded in *starts.
func localWithControlPlane(t *testing.T, starts *[][]string) (*Local, *serveReadyClock, *bytes.Buffer, *exec.Cmd) {
	t.Helper()
	state := t.TempDir()
	cp := startSleeper(t)
	comm, _, start, err := procStat(cp.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeProcs(filepath.Join(state, fileControlPlanePIDs), []proc{{cp.Process.Pid, start, comm}}); err != nil {
		t.Fatal(err)
	}
	c := &serveReadyClock{FakeClock: testingclock.NewFakeClock(time.Now()), ready: filepath.Join(state, fileReady)}
	out := &bytes.Buffer{}
	o := &Local{StateDir: state, Clock: c, Out: out, Memory: "16Gi",
		Start: func(pidPath, _ string, args ...string) (int, error) {
			*starts = append(*starts, args)
			return os.Getpid(), os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}}
	return o, c, out, cp
}

// TestLocalUpWaitsForAServeThatIsStarting: a second "up" while the first one's serve
// is still starting (running, not ready) waits for it: it neither kills its control
// plane nor starts another serve.
func TestLocalUpWaitsForAServeThatIsStarting(t *testing.T) {
	g := NewWithT(t)
	var starts [][]string
	o, c, out, cp := localWithControlPlane(t, &starts)
	serve := startSleeper(t)
	g.Expect(os.WriteFile(o.path(fileServePID), []byte(strconv.Itoa(serve.Process.Pid)), 0o644)).To(Succeed())

	g.Expect(o.ensureCluster(context.Background())).To(Succeed())
	g.Expect(starts).To(BeEmpty(), "a second serve started")
	g.Expect(o.path(fileControlPlanePIDs)).To(BeAnExistingFile(), "the serve's control plane was killed")
	g.Expect(c.waits).To(Equal(1))
	g.Expect(out.String()).To(ContainSubstring("Local cluster starting"))

	// Once ready, a third "up" finds it running.
	out.Reset()
	g.Expect(o.ensureCluster(context.Background())).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("Local cluster already running"))
	g.Expect(starts).To(BeEmpty())
	g.Expect(c.waits).To(Equal(1))
	g.Expect(killedBy(t, cp)).To(Equal(syscall.SIGTERM), "the serve's control plane was killed")
}

// TestLocalUpKillsTheControlPlaneOfAServeThatIsGone: when the serve that recorded
// the control plane no longer runs, "up" kills the control plane it left and starts
// a serve.
func TestLocalUpKillsTheControlPlaneOfAServeThatIsGone(t *testing.T) {
	g := NewWithT(t)
	var starts [][]string
	o, c, out, cp := localWithControlPlane(t, &starts)

	g.Expect(o.ensureCluster(context.Background())).To(Succeed())
	g.Expect(killedBy(t, cp)).To(Equal(syscall.SIGKILL), "the control plane left behind")
	g.Expect(o.path(fileControlPlanePIDs)).NotTo(BeAnExistingFile())
	g.Expect(starts).To(HaveLen(1))
	g.Expect(starts[0]).To(HaveExactElements("local", "serve", "--state-dir", o.StateDir, "--gpus", "0", "--memory", "16Gi", "--scheduler", "builtin"))
	g.Expect(c.waits).To(Equal(1))
	g.Expect(out.String()).To(ContainSubstring("Starting etcd, kube-apiserver"))
}

// TestLocalUpWithKubeSchedulerBuildsItBeforeServe: "up --scheduler=kube" finds (or
// builds) kube-scheduler itself, before it starts serve, whose start it waits for only
// clusterStartTimeout, and passes the flag on; a failed build starts no serve.
func TestLocalUpWithKubeSchedulerBuildsItBeforeServe(t *testing.T) {
	g := NewWithT(t)
	var starts [][]string
	o, _, out, _ := localWithControlPlane(t, &starts)
	o.Scheduler = SchedulerKube
	var built []string
	o.Assets = func(root string) (string, error) {
		built = append(built, root)
		g.Expect(starts).To(BeEmpty(), "serve started before kube-scheduler was built")
		return "/assets", nil
	}

	g.Expect(o.ensureCluster(context.Background())).To(Succeed())
	wd, _ := os.Getwd()
	g.Expect(built).To(HaveExactElements(wd))
	g.Expect(starts).To(HaveLen(1))
	i := slices.Index(starts[0], "--scheduler")
	g.Expect(i).To(BeNumerically(">", 0), "serve's arguments %q", starts[0])
	g.Expect(starts[0][i+1:]).To(And(Not(BeEmpty()), WithTransform(func(rest []string) string { return rest[0] }, Equal("kube"))),
		"serve's arguments %q", starts[0])
	g.Expect(out.String()).To(ContainSubstring("kube-scheduler"))

	o.Assets = func(string) (string, error) { return "", errors.New("hack/setup-envtest.sh: exit status 1") }
	g.Expect(os.Remove(o.path(fileServePID))).To(Succeed())
	g.Expect(o.ensureCluster(context.Background())).To(MatchError(ContainSubstring("setup-envtest.sh")))
	g.Expect(starts).To(HaveLen(1), "serve started without kube-scheduler")
}

func TestLocalUpFailsWhenTheServeItWaitsForStops(t *testing.T) {
	g := NewWithT(t)
	var starts [][]string
	o, _, _, _ := localWithControlPlane(t, &starts)
	o.Start = func(pidPath, logPath string, _ ...string) (int, error) {
		starts = append(starts, nil)
		return 0, errors.Join(os.WriteFile(pidPath, []byte("0"), 0o644), os.WriteFile(logPath, []byte("etcd: address in use\n"), 0o644))
	}
	err := o.ensureCluster(context.Background())
	g.Expect(err).To(MatchError(ContainSubstring("the local cluster stopped while starting")))
	g.Expect(err).To(MatchError(ContainSubstring("etcd: address in use")))
	g.Expect(starts).To(HaveLen(1))
}

// TestLocalUpStopsFollowingWhenTheManagerExits: a manager that exited (as one does
// that finds no trainer status policy) fails "up" at once with the end of its log,
// instead of following a job that would never start until --timeout.
func TestLocalUpStopsFollowingWhenTheManagerExits(t *testing.T) {
	g := NewWithT(t)
	o := &Local{StateDir: t.TempDir(), Clock: testingclock.NewFakeClock(time.Now()), Out: &bytes.Buffer{}, Timeout: time.Hour}
	serve := startSleeper(t)
	exited := exec.Command("true")
	g.Expect(exited.Run()).To(Succeed())
	for file, pid := range map[string]int{fileServePID: serve.Process.Pid, fileManagerPID: exited.Process.Pid} {
		g.Expect(os.WriteFile(o.path(file), []byte(strconv.Itoa(pid)), 0o644)).To(Succeed())
	}
	g.Expect(os.WriteFile(o.path(fileManagerLog), []byte("ERROR setup the trainer status policy is not installed\n"), 0o644)).To(Succeed())

	_, err := o.follow(context.Background(), "espo-minimal")
	g.Expect(err).To(MatchError(And(ContainSubstring("following job espo-minimal: the manager stopped"),
		ContainSubstring("the trainer status policy is not installed"))))

	// A cluster (serve) that is gone is said so too.
	g.Expect(serve.Process.Kill()).To(Succeed())
	_, _ = serve.Process.Wait()
	_, err = o.follow(context.Background(), "espo-minimal")
	g.Expect(err).To(MatchError(ContainSubstring("the local cluster stopped")))
}
