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

package apitest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestInvalidCorpus sends every manifest under test/testdata/invalid to the API server
// and expects it refused as invalid, with every message fragment named on the file's
// leading "# expect:" lines (a second line names the field where the first names a
// message that several fields share). Each file breaks one rule, and no two files
// expect the same words.
func TestInvalidCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "test", "testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("the corpus has %d manifests, want at least 30", len(files))
	}
	ns := namespace(t)
	seen := map[string]string{}
	for _, f := range files {
		name := filepath.Base(f)
		expect := expectations(t, f)
		key := strings.Join(expect, "\n")
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s expect the same message %q", name, other, key)
		}
		seen[key] = name
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			u := readManifest(t, f)
			u.SetNamespace(ns)
			err := env.Client.Create(context.Background(), u, strict)
			switch {
			case err == nil:
				t.Fatalf("accepted; want refused with %q", expect)
			case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
				t.Fatalf("refused for another reason: %v", err)
			}
			for _, e := range expect {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("refused with\n  %v\nwant the message to contain\n  %s", err, e)
				}
			}
		})
	}
}

// expectations returns the text after "# expect: " on each of the file's leading
// lines that begin so; the first line must.
func expectations(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var expect []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		e, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# expect: ")
		if !ok || e == "" {
			break
		}
		expect = append(expect, e)
	}
	if len(expect) == 0 {
		t.Fatalf("%s: the first line must be \"# expect: <message fragment>\"", path)
	}
	return expect
}
