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
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A Markdown comment right before a code block of a guide tells TestUserGuideExamples
// what the block is: "<!-- guide-test: espojob-fragment -->" for a part of an ESPOJob
// (spec: ...), applied merged into the guide's first ESPOJob; "<!-- guide-test: skip -->"
// for a block that is not to be applied.
var guideTestMarker = regexp.MustCompile(`^<!--\s*guide-test:\s*(\S+)\s*-->$`)

// The markers of guideTestMarker.
const (
	markerESPOJobFragment = "espojob-fragment"
	markerSkip            = "skip"
)

// codeBlock is a code block of a Markdown file: its text, the line it starts on, and
// the guide-test marker before it, if any.
type codeBlock struct {
	text   string
	line   int
	marker string
}

// codeBlocks returns the indented (four spaces) and fenced code blocks of a Markdown
// file, as CommonMark reads them: an indented block starts after a blank line (it
// cannot interrupt a paragraph) and runs on over blank lines to its last indented
// line.
func codeBlocks(markdown string) []codeBlock {
	lines := strings.Split(markdown, "\n")
	var blocks []codeBlock
	marker := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "```") {
				end++
			}
			blocks = append(blocks, codeBlock{text: strings.Join(lines[i+1:min(end, len(lines))], "\n"), line: i + 2, marker: marker})
			i, marker = end, ""
		case strings.HasPrefix(line, "    ") && (i == 0 || strings.TrimSpace(lines[i-1]) == ""):
			end, last := i, i
			for ; end < len(lines) && (strings.HasPrefix(lines[end], "    ") || strings.TrimSpace(lines[end]) == ""); end++ {
				if strings.TrimSpace(lines[end]) != "" {
					last = end
				}
			}
			var text []string
			for _, l := range lines[i : last+1] {
				text = append(text, strings.TrimPrefix(l, "    "))
			}
			blocks = append(blocks, codeBlock{text: strings.Join(text, "\n"), line: i + 1, marker: marker})
			i, marker = last, ""
		case strings.TrimSpace(line) == "":
			// a blank line keeps the marker for the block after it
		default:
			marker = ""
			if m := guideTestMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				marker = m[1]
			}
		}
	}
	return blocks
}

// yamlObject reads a code block as one YAML mapping; ok is false for anything else
// (a shell command, a formula, several documents).
func yamlObject(text string) (map[string]any, bool) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// mergeInto returns base with fragment's values laid over it, maps merged key by key.
func mergeInto(base, fragment map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range fragment {
		if fm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeInto(bm, fm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// guideExamples returns the objects a guide's code blocks show, to be applied: every
// block that is a Kubernetes object (apiVersion and kind), and every ESPOJob fragment
// merged into the guide's first ESPOJob. Other blocks (commands, formulas, parts of
// other tools' objects) are not objects and are left out, as are blocks marked skip.
func guideExamples(t *testing.T, path string) []example {
	t.Helper()
	data, err := os.ReadFile(repoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	var objs []example
	for _, b := range codeBlocks(string(data)) {
		obj, isYAML := yamlObject(b.text)
		where := fmt.Sprintf("%s:%d", path, b.line)
		switch b.marker {
		case markerSkip:
			continue
		case markerESPOJobFragment:
			if !isYAML || job == nil {
				t.Errorf("%s: an ESPOJob fragment that is not YAML (%v), or before the guide's first ESPOJob", where, isYAML)
				continue
			}
			obj = mergeInto(job, obj)
		case "":
			if !isYAML || obj["apiVersion"] == nil || obj["kind"] == nil {
				continue
			}
			if obj["kind"] == "ESPOJob" && job == nil {
				job = obj
			}
		default:
			t.Errorf("%s: unknown guide-test marker %q, want %s or %s", where, b.marker, markerESPOJobFragment, markerSkip)
			continue
		}
		objs = append(objs, example{where: where, obj: &unstructured.Unstructured{Object: obj}})
	}
	return objs
}

// example is an object a guide shows, and where.
type example struct {
	where string
	obj   *unstructured.Unstructured
}

// TestUserGuideExamples applies every Kubernetes object of docs/user-guide.md, and
// every part of an ESPOJob it shows (merged into its first ESPOJob), to the test
// control plane with server-side dry-run: an example that the API no longer accepts,
// or whose fields it does not know, fails here.
func TestUserGuideExamples(t *testing.T) {
	examples := guideExamples(t, "docs/user-guide.md")
	if err := env.InstallKueueCRDs(); err != nil { // the Kueue section's queues
		t.Fatal(err)
	}
	if len(examples) < 3 {
		t.Fatalf("found %d examples in the guide, want its job and its ESPOJob fragments", len(examples))
	}
	const ns = "guide-examples"
	ensureNamespace(t, ns, nil)
	for _, e := range examples {
		t.Run(e.where, func(t *testing.T) {
			if e.obj.GetNamespace() == "" {
				e.obj.SetNamespace(ns)
			}
			applyDryRun(t, []*unstructured.Unstructured{e.obj})
		})
	}
}

// TestCodeBlocks reads the kinds of Markdown code block the guide has, and its markers.
func TestCodeBlocks(t *testing.T) {
	md := strings.Join([]string{
		"Text:",
		"",
		"    kubectl get espojobs",
		"",
		"    kubectl get pods",
		"Not code:",
		"    a lazy continuation line",
		"",
		"<!-- guide-test: espojob-fragment -->",
		"",
		"    spec:",
		"      runPolicy: {suspend: true}",
		"",
		"then",
		"",
		"```yaml",
		"kind: X",
		"```",
	}, "\n")
	got := codeBlocks(md)
	want := []codeBlock{
		{text: "kubectl get espojobs\n\nkubectl get pods", line: 3},
		{text: "spec:\n  runPolicy: {suspend: true}", line: 11, marker: markerESPOJobFragment},
		{text: "kind: X", line: 17},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("codeBlocks:\n got %+v\nwant %+v", got, want)
	}
}
