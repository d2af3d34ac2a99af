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

package trainer

import (
	"strings"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
)

// TestWorkerOptionsArchitecture: spec.model.cpu.architecture reaches the CPU
// policy as its arch option, and a policy configured with it describes that
// architecture; unset, the policy keeps its default (features).
func TestWorkerOptionsArchitecture(t *testing.T) {
	for arch, want := range map[trainingv1alpha1.CPUArchitecture]string{"": "arch=features", trainingv1alpha1.CPUFeatures: "arch=features", trainingv1alpha1.CPUTokens: "arch=tokens"} {
		m := &trainingv1alpha1.ModelSpec{CPU: &trainingv1alpha1.CPUPolicySpec{Architecture: arch, HiddenSize: 8, FeatureBits: 10, MaxIntentWords: 20}}
		o := workerOptions(m)
		p := cpu.New(1)
		if err := p.Configure(1, o); err != nil {
			t.Fatalf("architecture %q: options %v: %v", arch, o, err)
		}
		if got := p.Describe().Model; !strings.Contains(got, want) {
			t.Errorf("architecture %q: the policy describes itself as %q, want %s", arch, got, want)
		}
	}
}
