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
	"encoding/json"
	"os"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// health is what an Argo CD health check returns.
type health struct {
	Status  string
	Message string
}

// argoHealth runs docs/argocd-health.lua on obj the way Argo CD does: the object as
// the global table obj (decoded from its JSON), the chunk's return value the health.
func argoHealth(t *testing.T, obj any) health {
	t.Helper()
	script, err := os.ReadFile(repoPath("docs", "argocd-health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	// The libraries Argo CD opens for health scripts.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, generic))
	if err := L.DoString(string(script)); err != nil {
		t.Fatalf("argocd-health.lua: %v", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("argocd-health.lua returned %v, want a table", L.Get(-1))
	}
	return health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
}

// toLua converts decoded JSON into Lua values.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}

// TestArgoCDHealth runs the health check on status objects of every phase, as the
// controller and the trainer write them.
func TestArgoCDHealth(t *testing.T) {
	cond := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
	}
	job := func(generation int, status map[string]any) map[string]any {
		o := map[string]any{
			"apiVersion": trainingv1alpha1.GroupVersion.String(), "kind": "ESPOJob",
			"metadata": map[string]any{"name": "demo", "namespace": "ml", "generation": generation},
		}
		if status != nil {
			o["status"] = status
		}
		return o
	}
	training := map[string]any{"stage": "espo", "epoch": 2, "step": 120, "totalSteps": 600,
		"evaluation": map[string]any{"recommendationAccuracy": "0.286"}}
	for _, tc := range []struct {
		name    string
		obj     any
		want    string
		message string
	}{
		{"no status yet", job(1, nil), "Progressing", "Waiting for the controller"},
		{"empty object", map[string]any{}, "Progressing", "Waiting for the controller"},
		{"pods pending", job(1, map[string]any{"phase": "Pending", "observedGeneration": 1, "conditions": []any{
			cond("Created", "True", "ChildrenCreated", "created"),
			cond("Running", "False", "PodsPending", "0 of 2 trainer pods are running")}}),
			"Progressing", "Pending: PodsPending: 0 of 2 trainer pods are running"},
		{"unschedulable", job(1, map[string]any{"phase": "Pending", "observedGeneration": 1, "conditions": []any{
			cond("Running", "False", "PodsUnschedulable", "pod demo-trainer-0 cannot be scheduled: 0/3 nodes have nvidia.com/gpu")}}),
			"Progressing", "PodsUnschedulable: pod demo-trainer-0 cannot be scheduled"},
		{"create failed", job(1, map[string]any{"phase": "Pending", "observedGeneration": 1, "conditions": []any{
			cond("Created", "False", "CreateFailed", "ConfigMap demo-config exists and is not controlled by this ESPOJob")}}),
			"Progressing", "Pending: CreateFailed: ConfigMap demo-config exists"},
		{"running", job(1, map[string]any{"phase": "Running", "observedGeneration": 1, "training": training, "conditions": []any{
			cond("Running", "True", "PodsRunning", "all 2 trainer pods are running")}}),
			"Progressing", "Running (stage espo, epoch 2, step 120/600, recommendation accuracy 0.286)"},
		{"restarting", job(1, map[string]any{"phase": "Restarting", "observedGeneration": 1, "restarts": 1, "conditions": []any{
			cond("Restarting", "True", "PodFailed", "restart 1 of at most 3 after pod demo-trainer-1, container worker: exit code 137 (OOMKilled)")}}),
			"Progressing", "Restarting: PodFailed: restart 1 of at most 3"},
		{"suspended", job(2, map[string]any{"phase": "Suspended", "observedGeneration": 2, "conditions": []any{
			cond("Suspended", "True", "JobSuspended", "the job is suspended: its trainer pods are deleted")}}),
			"Suspended", "JobSuspended: the job is suspended"},
		{"spec change not yet seen", job(3, map[string]any{"phase": "Suspended", "observedGeneration": 2, "conditions": []any{
			cond("Suspended", "True", "JobSuspended", "the job is suspended")}}),
			"Progressing", "Waiting for the controller to observe generation 3"},
		{"succeeded", job(1, map[string]any{"phase": "Succeeded", "observedGeneration": 1, "training": training, "conditions": []any{
			cond("Succeeded", "True", "TargetReached", "recommendationAccuracy reached 0.3")}}),
			"Healthy", "TargetReached: recommendationAccuracy reached 0.3 (stage espo"},
		{"succeeded, later spec edit", job(4, map[string]any{"phase": "Succeeded", "observedGeneration": 1, "conditions": []any{
			cond("Succeeded", "True", "Completed", "")}}),
			"Healthy", "Completed"},
		{"failed", job(1, map[string]any{"phase": "Failed", "observedGeneration": 1, "conditions": []any{
			cond("Failed", "True", "BackoffLimitExceeded", "pod demo-trainer-0, container trainer: exit code 1; the job was restarted 3 times (backoffLimit 3)")}}),
			"Degraded", "BackoffLimitExceeded: pod demo-trainer-0"},
		{"failed, NaN", job(1, map[string]any{"phase": "Failed", "observedGeneration": 1, "conditions": []any{
			cond("Failed", "True", "NonFiniteLoss", "loss is NaN at step 17")}}),
			"Degraded", "NonFiniteLoss: loss is NaN at step 17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := argoHealth(t, tc.obj)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %s %q, want %s with %q", got.Status, got.Message, tc.want, tc.message)
			}
		})
	}
}
