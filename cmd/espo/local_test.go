//go:build !nolocal

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
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"

	"github.com/espo-dev/espo-operator/internal/localcluster"
	"github.com/espo-dev/espo-operator/test/testenv"
)

// "make run-local" runs "espo local up" in the repository's root: the CRDs and the
// sample its flags name by default are there.
func TestLocalUpDefaultsAreTheRepositorysCRDsAndSample(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	up := newLocalUpCommand(&localcluster.Local{})
	for _, flag := range []string{"crds", "sample"} {
		_, err := os.Stat(filepath.Join(root, up.Flags().Lookup(flag).DefValue))
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

// TestLocalSchedulerFlag: "up" and the "serve" it starts both take --scheduler
// (builtin by default, or kube), and refuse another value, naming the flag.
func TestLocalSchedulerFlag(t *testing.T) {
	for _, newCommand := range []func(*localcluster.Local) *cobra.Command{newLocalUpCommand, newLocalServeCommand} {
		g := NewWithT(t)
		o := &localcluster.Local{}
		cmd := newCommand(o)
		g.Expect(o.Scheduler).To(Equal(localcluster.SchedulerBuiltin), "%s: default", cmd.Name())
		g.Expect(cmd.ParseFlags([]string{"--scheduler", "kube"})).To(Succeed(), cmd.Name())
		g.Expect(o.Scheduler).To(Equal(localcluster.SchedulerKube), cmd.Name())
	}

	g := NewWithT(t)
	cmd := newRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"local", "up", "--state-dir", t.TempDir(), "--scheduler", "volcano"})
	g.Expect(cmd.Execute()).To(MatchError(And(ContainSubstring(`"--scheduler" flag`), ContainSubstring(`"volcano" is not a scheduler: use builtin or kube`))))
}
