//go:build !purego

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

package espo

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAVX2DetectionAgreesWithXSysCPU checks the package's own CPUID check against
// golang.org/x/sys/cpu (a dependency of the tests only).
func TestAVX2DetectionAgreesWithXSysCPU(t *testing.T) {
	if got, want := hasAVX2(), cpu.X86.HasAVX2; got != want {
		t.Fatalf("hasAVX2() = %v, golang.org/x/sys/cpu says %v", got, want)
	}
	if useAVX2 != cpu.X86.HasAVX2 {
		t.Fatalf("useAVX2 = %v, golang.org/x/sys/cpu says %v", useAVX2, cpu.X86.HasAVX2)
	}
	_, _, ecx, _ := cpuid(1, 0)
	if got := ecx&(1<<28) != 0; got != cpu.X86.HasAVX {
		t.Errorf("CPUID.1:ECX.AVX = %v, golang.org/x/sys/cpu says %v", got, cpu.X86.HasAVX)
	}
	if got := ecx&(1<<27) != 0; got != cpu.X86.HasOSXSAVE {
		t.Errorf("CPUID.1:ECX.OSXSAVE = %v, golang.org/x/sys/cpu says %v", got, cpu.X86.HasOSXSAVE)
	}
	t.Logf("AVX2: %v", hasAVX2())
}
