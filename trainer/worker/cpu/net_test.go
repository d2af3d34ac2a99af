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

package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddSignedAddsOrSubtractsEachValue checks the unrolled addSigned against one
// addition per value, for lengths around the unrolling's step and both signs.
func TestAddSignedAddsOrSubtractsEachValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 11 {
		for _, f := range []feat{0, 1} {
			dst, x := make([]float64, n), make([]float64, n)
			for i := range n {
				dst[i], x[i] = r.NormFloat64(), r.NormFloat64()
			}
			want := slices.Clone(dst)
			for i := range want {
				if f&1 == 0 {
					want[i] += x[i]
				} else {
					want[i] -= x[i]
				}
			}
			addSigned(dst, x, f)
			if !slices.Equal(dst, want) {
				t.Errorf("n=%d, sign bit %d: got %v, want %v", n, f&1, dst, want)
			}
		}
	}
}
