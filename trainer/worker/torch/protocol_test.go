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

package torch

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

var updateFixtures = flag.Bool("update", false, "rewrite tests/testdata from what Go marshals")

// promptFixture is where the Go-marshalled attributedPrompt lies for the Python tests
// (tests/test_protocol.py), which parse it, build the same Prompt themselves, and
// check both ways.
var promptFixture = filepath.Join("tests", "testdata", "prompt_attributes.binpb")

// attributedPrompt is a Prompt with every map field of the protocol set: element,
// history and item attributes. tests/test_protocol.py builds the same message.
func attributedPrompt() *workerpb.Prompt {
	return &workerpb.Prompt{
		EpisodeId: "ep-attrs", StepIndex: 3, Channel: "hotel", Stage: workerpb.Stage_STAGE_RECOMMEND,
		Instruction: "a quiet hotel near the river",
		Elements: []*workerpb.Element{
			{Id: "e1", Role: "chip", Text: "4.5+", Box: []float64{0.1, 0.2, 0.3, 0.25},
				Attributes: map[string]string{"group": "rating", "selected": "true"}},
			{Id: "e2", Role: "button", Text: "Search", Box: []float64{0.5, 0.9, 0.7, 0.95}},
		},
		History: []*workerpb.Action{{Type: "click", Point: []float64{0.2, 0.22}, InputText: "no input text",
			ElementId: "e0", ElementRole: "option", ElementText: "Riverside",
			ElementAttributes: map[string]string{"group": "area", "index": "2"}}},
		Item: &workerpb.Item{Id: "h7", Title: "Riverside Inn", Attributes: map[string]string{"price": "120", "stars": "4"}},
	}
}

// TestPromptFixtureIsWhatGoMarshals: the fixture the Python tests parse is Go's
// deterministic encoding of attributedPrompt (go test ./trainer/worker/torch/ -run
// PromptFixture -args -update rewrites it).
func TestPromptFixtureIsWhatGoMarshals(t *testing.T) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(attributedPrompt())
	if err != nil {
		t.Fatal(err)
	}
	if *updateFixtures {
		if err := os.WriteFile(promptFixture, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(promptFixture)
	if err != nil {
		t.Fatalf("%v: run go test ./trainer/worker/torch/ -run PromptFixture -args -update", err)
	}
	if !bytes.Equal(got, b) {
		t.Errorf("%s is not Go's encoding of attributedPrompt: run go test ./trainer/worker/torch/ -run PromptFixture -args -update", promptFixture)
	}
}

// protobufImplementations returns the values of PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION
// that the locked protobuf offers, the pure-Python one and upb (the compiled one of
// protobuf 4 and later; cpp is gone), failing the test unless python runs each as
// asked, and logging each one's protobuf version.
func protobufImplementations(t *testing.T) []string {
	t.Helper()
	impls := []string{"python", "upb"}
	for _, impl := range impls {
		cmd := exec.Command(python, "-W", "error", "-c", "import google.protobuf as g, google.protobuf.descriptor_pb2; "+
			"from google.protobuf.internal import api_implementation as a; print(a.Type(), g.__version__)")
		cmd.Env = append(pyEnv(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="+impl)
		out, err := cmd.CombinedOutput()
		if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[0] != impl {
			t.Fatalf("%s with protobuf implementation %s: %v: %s", python, impl, err, out)
		}
		t.Logf("protobuf implementation %s: protobuf %s", impl, strings.Fields(string(out))[1])
	}
	return impls
}

// TestProtocolOnEveryProtobufRuntime runs tests/test_protocol.py (the message classes
// built from worker.binpb, map fields parsed from Go's bytes and serialized to them)
// under each protobuf implementation python offers.
func TestProtocolOnEveryProtobufRuntime(t *testing.T) {
	for _, impl := range protobufImplementations(t) {
		t.Run(impl, func(t *testing.T) {
			cmd := exec.Command(python, "-m", "pytest", "-q", "tests/test_protocol.py")
			cmd.Env = append(pyEnv(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="+impl)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python -m pytest tests/test_protocol.py: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}
