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

package controllers

import (
	"fmt"
	"path"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// modelSummary is status.model, the Model column: what spec.model trains, in a few
// words. The cpu policy is named with its architecture ("cpu policy (features)", the
// default when the cpu section is left out); any other worker by the last element of
// pretrained, else by the folder of the initial checkpoint, else (external) by its
// endpoint, followed by " (LoRA r=<rank>)" when spec.model.lora is set. It is
// bounded as a condition message is (BoundMessage), within the field's MaxLength.
func modelSummary(m *trainingv1alpha1.ModelSpec) string {
	if m.Worker == "" || m.Worker == trainingv1alpha1.WorkerCPU {
		arch := trainingv1alpha1.CPUFeatures
		if m.CPU != nil && m.CPU.Architecture != "" {
			arch = m.CPU.Architecture
		}
		return fmt.Sprintf("cpu policy (%s)", arch)
	}
	var name string
	switch {
	case m.Pretrained != "":
		name = lastElement(m.Pretrained, m.Pretrained)
	case m.InitialCheckpoint != nil:
		name = "checkpoint " + lastElement(m.InitialCheckpoint.Path, m.InitialCheckpoint.ClaimName)
	case m.Endpoint != "":
		name = "external worker at " + string(m.Endpoint)
	default:
		name = string(m.Worker) + " worker"
	}
	if m.LoRA != nil {
		name += fmt.Sprintf(" (LoRA r=%d)", m.LoRA.Rank)
	}
	return trainingv1alpha1.BoundMessage(name)
}

// lastElement is the last element of the slash-separated path p ("Qwen2.5-VL-3B-Instruct"
// of "Qwen/Qwen2.5-VL-3B-Instruct/"), or whole when p has none (empty, ".", "/").
func lastElement(p, whole string) string {
	switch b := path.Base(path.Clean(p)); b {
	case ".", "/":
		return whole
	default:
		return b
	}
}
