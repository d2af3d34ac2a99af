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

package tensorboard

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/espo-dev/espo-operator/test/pyenv"
)

// readByTensorBoard is a Python script that reads the log folder argv[1] with
// TensorBoard's own readers and prints, as JSON:
//   - scalars: each tag's [step, value, wall_time] as EventAccumulator reads them;
//   - dashboard: each tag of the scalars and text plugins as the plugin accumulator,
//     which TensorBoard's dashboards read through, holds it: a scalar's [step, value],
//     a text's [step, the HTML that the Text dashboard shows].
const readByTensorBoard = `
import json, sys
from tensorboard.backend.event_processing import event_accumulator, plugin_event_accumulator
from tensorboard.plugins.text import text_plugin
from tensorboard.util import tensor_util

logdir = sys.argv[1]
acc = event_accumulator.EventAccumulator(logdir, size_guidance={"scalars": 0})
acc.Reload()
scalars = {tag: [[e.step, e.value, e.wall_time] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}

dashboard = plugin_event_accumulator.EventAccumulator(logdir, size_guidance={"tensors": 0})
dashboard.Reload()
def read(tag, show):
    return [[e.step, show(tensor_util.make_ndarray(e.tensor_proto))] for e in dashboard.Tensors(tag)]
shown = {
    "scalars": {tag: read(tag, lambda a: float(a.item())) for tag in dashboard.PluginTagToContent("scalars")},
    "text": {tag: read(tag, lambda a: text_plugin.text_array_to_html(a, True)) for tag in dashboard.PluginTagToContent("text")},
}
print(json.dumps({"scalars": scalars, "dashboard": shown}))
`

// readByTensorBoardOutput is what readByTensorBoard prints.
type readByTensorBoardOutput struct {
	Scalars   map[string][][3]float64
	Dashboard struct {
		Scalars map[string][][2]float64
		Text    map[string][][2]any
	}
}

// TestTensorBoardReadsAResumedRun writes a run as a trainer that crashes and resumes
// does, and reads it with TensorBoard: every tag has each step once, in order, with
// its value and time, and the parameter table shows once, as a table.
func TestTensorBoardReadsAResumedRun(t *testing.T) {
	python := pyenv.Require(t)
	dir := filepath.Join(t.TempDir(), "tensorboard")
	params := map[string]string{"lr": "0.001", "model": "Qwen/Qwen2.5-0.5B"}
	cycle(t, newWriter(dir), params, stepPoints(1, 5, "train/loss", "train/lr"))
	// The pod dies writing step 6: half of its record reaches the file.
	torn := appendRecord(nil, appendSummaryEvent(nil, 0, 6, appendScalarValue(nil, "train/loss", 1)))
	appendTo(t, filepath.Join(dir, "events.out.tfevents.1772366400.trainer-0.7.0"), torn[:len(torn)/2])

	// The run resumes from its checkpoint of step 3, on a clock that reads the same
	// second, logs its parameters again and steps 4 to 8, with a tag it did not log before.
	w := newWriter(dir)
	ctx := context.Background()
	opened, err := w.Open(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.LogParams(ctx, params); err != nil {
		t.Fatal(err)
	}
	again := append(stepPoints(4, 8, "train/loss", "train/lr"), stepPoints(8, 8, "eval/accuracy")...)
	if err := w.Log(ctx, resend(opened, again)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, "Succeeded"); err != nil {
		t.Fatal(err)
	}

	got := runReadByTensorBoard(t, python, dir)
	want := wantScalars(1, 8, "train/loss", "train/lr")
	want["eval/accuracy"] = wantScalars(8, 8, "eval/accuracy")["eval/accuracy"]
	wantRead := map[string][][3]float64{}
	wantShown := map[string][][2]float64{}
	for tag, scalars := range want {
		for _, s := range scalars {
			wantRead[tag] = append(wantRead[tag], [3]float64{float64(s.Step), float64(s.Value), s.WallTime})
			wantShown[tag] = append(wantShown[tag], [2]float64{float64(s.Step), float64(s.Value)})
		}
	}
	if d := cmp.Diff(wantRead, got.Scalars); d != "" {
		t.Errorf("EventAccumulator's scalars (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantShown, got.Dashboard.Scalars); d != "" {
		t.Errorf("the scalars dashboard's (-want +got):\n%s", d)
	}
	texts := got.Dashboard.Text["params"]
	if len(got.Dashboard.Text) != 1 || len(texts) != 1 || texts[0][0] != 0.0 {
		t.Fatalf("the text dashboard shows %v, want one table of params at step 0", got.Dashboard.Text)
	}
	html, _ := texts[0][1].(string)
	for _, cell := range []string{"<table>", "<td><p>lr</p></td>\n<td><p>0.001</p></td>", "<td><p>model</p></td>\n<td><p>Qwen/Qwen2.5-0.5B</p></td>"} {
		if !strings.Contains(html, cell) {
			t.Errorf("the params table's HTML lacks %q:\n%s", cell, html)
		}
	}
}

func runReadByTensorBoard(t *testing.T, python, dir string) readByTensorBoardOutput {
	t.Helper()
	cmd := exec.Command(python, "-c", readByTensorBoard, dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TensorBoard's reader: %v\n%s", err, stderr.String())
	}
	var got readByTensorBoardOutput
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("TensorBoard's reader printed %q: %v\n%s", out, err, stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Logf("TensorBoard's reader said:\n%s", s)
	}
	return got
}
