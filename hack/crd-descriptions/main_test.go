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

	"sigs.k8s.io/yaml"
)

func TestUnwrap(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"one line":                   {"Keep is how many checkpoints are kept.", "Keep is how many checkpoints are kept."},
		"a sentence wrapped":         {"Keep is how many of the newest\ncheckpoints are retained. Default 3.", "Keep is how many of the newest checkpoints are retained. Default 3."},
		"paragraphs stay":            {"First\nline.\n\nSecond\nparagraph.", "First line.\n\nSecond paragraph."},
		"list items stay":            {"Modes:\n- episode: one\n  per episode\n- rollout\n1. first\n2) second", "Modes:\n- episode: one\n  per episode\n- rollout\n1. first\n2) second"},
		"indented lines stay":        {"Run:\n    espo trainer\n    --config F\nthen\nwait.", "Run:\n    espo trainer\n    --config F\nthen wait."},
		"fenced code stays":          {"See\nthis:\n```\na\nb\n```\nafter\nit.", "See this:\n```\na\nb\n```\nafter it."},
		"a number inside a sentence": {"a table of 8 rows and\n2 columns", "a table of 8 rows and 2 columns"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Unwrap(tc.in); got != tc.want {
				t.Errorf("Unwrap(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// crd is a small controller-gen CRD document whose description breaks mid-sentence.
const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  versions:
  - schema:
      openAPIV3Schema:
        properties:
          description:
            description: |-
              A property named description is a schema; its own
              description is unwrapped.
            maximum: 9007199254740993
            type: integer
`

func TestRewriteUnwrapsAndKeepsTheRest(t *testing.T) {
	out, err := rewrite([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Description string `json:"description"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil || len(got.Spec.Versions) != 1 {
		t.Fatalf("reading the rewritten CRD: %v\n%s", err, out)
	}
	want := "A property named description is a schema; its own description is unwrapped."
	if d := got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["description"].Description; d != want {
		t.Errorf("description %q, want %q", d, want)
	}
	if !bytes.Contains(out, []byte("maximum: 9007199254740993\n")) || !bytes.HasPrefix(out, []byte("---\n")) {
		t.Errorf("rewrite lost the exact number or the document start:\n%s", out)
	}
	again, err := rewrite(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("a second rewrite changed the file (%v):\n%s", err, again)
	}
	if _, err := rewrite([]byte("kind: X\n")); err == nil {
		t.Error("a file without controller-gen's document start was accepted")
	}
}

// TestGeneratedCRDsReadAsSentences checks the committed CRDs, and the Helm chart's
// copies: no description breaks a line inside a paragraph, so `kubectl explain`
// wraps each paragraph to the terminal. `make manifests` runs this command after
// controller-gen; a CRD written by controller-gen alone fails here.
func TestGeneratedCRDsReadAsSentences(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	charts, _ := filepath.Glob(filepath.Join("..", "..", "charts", "*", "crds", "*.yaml"))
	descriptions := 0
	for _, f := range append(files, charts...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		eachDescription(obj, "", func(path, d string) {
			descriptions++
			if u := Unwrap(d); u != d {
				i := len(commonPrefix(d, u)) // the line break Unwrap joins
				t.Errorf("%s: the description of %s breaks a line mid-paragraph, between %q and %q: run make manifests",
					f, path, d[max(0, i-30):i], d[i+1:min(len(d), i+31)])
			}
		})
	}
	if descriptions < 100 {
		t.Errorf("found %d descriptions, want the CRD's hundreds", descriptions)
	}
}

// eachDescription calls f with every description string under v and its path.
func eachDescription(v any, path string, f func(path, d string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "description" {
				f(path, s)
				continue
			}
			eachDescription(e, path+"."+k, f)
		}
	case []any:
		for _, e := range v {
			eachDescription(e, path+"[]", f)
		}
	}
}

// commonPrefix is the longest common prefix of a and b.
func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}
