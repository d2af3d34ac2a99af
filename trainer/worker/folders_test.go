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

package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
)

// TestServerSaveAndLoadStayInTheAllowedFolder: over gRPC, Save, Load and
// Configure's load path refuse every path that leads out of the allowed folder (../,
// absolute paths elsewhere, links inside it that point out, dangling links) with
// PermissionDenied, naming the path and the folder, and write nothing outside.
func TestServerSaveAndLoadStayInTheAllowedFolder(t *testing.T) {
	l := workertest.NewLayout(t)
	workertest.CheckConfined(t, serve(t, l.Allowed).Client(), l, smallModel)
}

// TestLocalSaveAndLoadStayInTheAllowedFolder: an in-process member refuses the same
// paths with ErrPathNotAllowed; its allowed folder may be reached through a link,
// and paths through that link work.
func TestLocalSaveAndLoadStayInTheAllowedFolder(t *testing.T) {
	ctx := context.Background()
	l := workertest.NewLayout(t)
	linkToAllowed := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(l.Allowed, linkToAllowed); err != nil {
		t.Fatal(err)
	}
	m := worker.NewLocal(cpu.New(1), linkToAllowed)
	configure := worker.Setup{Seed: 2, Options: smallModel}
	if _, err := m.Configure(ctx, configure); err != nil {
		t.Fatal(err)
	}
	for name, p := range l.Escapes() {
		workertest.CheckRefused(t, "save", name, p, m.Save(ctx, p))
		_, err := m.Configure(ctx, worker.Setup{Seed: 2, Options: smallModel, LoadPath: p})
		workertest.CheckRefused(t, "configure with load path", name, p, err)
	}
	l.CheckUntouched(t)
	if _, err := m.Configure(ctx, configure); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(l.Allowed, "state"), filepath.Join(linkToAllowed, "via-link")} {
		if err := m.Save(ctx, p); err != nil {
			t.Errorf("save %s inside the allowed folder: %v", p, err)
		} else if _, err := m.Configure(ctx, worker.Setup{LoadPath: p}); err != nil {
			t.Errorf("load %s inside the allowed folder: %v", p, err)
		}
	}
}

// TestNoAllowedFolderRefusesEverySaveAndLoad: a worker given no folders saves and
// loads nothing, and says how to allow some.
func TestNoAllowedFolderRefusesEverySaveAndLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for kind, m := range map[string]worker.Member{"remote": serve(t), "local": worker.NewLocal(cpu.New(1))} {
		if _, err := m.Configure(ctx, worker.Setup{Seed: 2, Options: smallModel}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, kind)
		if err := m.Save(ctx, p); err == nil || !strings.Contains(err.Error(), "no allowed folders") ||
			!strings.Contains(err.Error(), worker.EnvAllowedPaths) {
			t.Errorf("%s: save with no allowed folder: %v, want a refusal naming %s", kind, err, worker.EnvAllowedPaths)
		}
		if _, err := m.Configure(ctx, worker.Setup{LoadPath: p}); err == nil || !strings.Contains(err.Error(), "no allowed folders") {
			t.Errorf("%s: load with no allowed folder: %v, want a refusal", kind, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a worker without allowed folders wrote %v", entries)
	}
}

// TestSplitFolders splits $ESPO_WORKER_PATHS.
func TestSplitFolders(t *testing.T) {
	got := worker.SplitFolders("/checkpoints::/initial-checkpoint:/var/run/espo/output:")
	if want := []string{"/checkpoints", "/initial-checkpoint", "/var/run/espo/output"}; !slices.Equal(got, want) {
		t.Errorf("SplitFolders = %q, want %q", got, want)
	}
	if got := worker.SplitFolders(""); len(got) != 0 {
		t.Errorf("SplitFolders(\"\") = %q, want none", got)
	}
}
