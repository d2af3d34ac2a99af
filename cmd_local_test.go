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
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

func TestLocalStateDirFollowsXDGStateHome(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	NewWithT(t).Expect(defaultStateDir()).To(Equal("/xdg/state/espo-operator/local"))
}

// "make run-local" runs "espo local up" in the repository's root (as go test runs this
// package): the CRDs and the sample its flags name by default are there.
func TestLocalUpDefaultsAreTheRepositorysCRDsAndSample(t *testing.T) {
	g := NewWithT(t)
	up := newLocalUpCommand(&localOptions{})
	for _, flag := range []string{"crds", "sample"} {
		_, err := os.Stat(up.Flags().Lookup(flag).DefValue)
		g.Expect(err).NotTo(HaveOccurred(), "--%s", flag)
	}
}

func TestLocalDownWithNothingRunningSucceedsTwice(t *testing.T) {
	g := NewWithT(t)
	state := filepath.Join(t.TempDir(), "state")
	for range 2 {
		var out bytes.Buffer
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"local", "down", "--state-dir", state})
		g.Expect(cmd.Execute()).To(Succeed())
		g.Expect(out.String()).To(ContainSubstring("Local cluster stopped"))
	}
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
