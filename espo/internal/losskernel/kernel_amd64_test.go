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

package losskernel

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestVectorKernelFollowsCPU checks that the package chose the AVX2 kernel exactly
// where golang.org/x/sys/cpu reports AVX2 (run with GODEBUG=cpu.avx2=off to see
// the Go loop chosen on a machine that has it).
func TestVectorKernelFollowsCPU(t *testing.T) {
	if useVector != cpu.X86.HasAVX2 {
		t.Fatalf("vector kernel chosen: %v; golang.org/x/sys/cpu reports AVX2: %v", useVector, cpu.X86.HasAVX2)
	}
	t.Logf("AVX2: %v", cpu.X86.HasAVX2)
}
