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

package plan

import "testing"

// TestPlanPositions checks Plan.At: a checkpoint's position is an epoch of the plan,
// a batch within it or its end, and the step count of the batches before it.
func TestPlanPositions(t *testing.T) {
	p := &Plan{Epochs: []Epoch{{Batches: 3}, {Batches: 4}}}
	cases := []struct {
		epoch, batch int
		step         int64
		want         bool
	}{
		{0, 0, 0, true},
		{0, 2, 2, true},
		{0, 3, 3, true}, // the first epoch's own checkpoint
		{1, 0, 3, true},
		{1, 4, 7, true}, // the plan's end, before the last evaluation
		{1, 2, 4, false},
		{1, 5, 8, false},
		{2, 0, 7, false}, // past the plan's epochs
		{-1, 0, 0, false},
		{0, -1, -1, false},
	}
	for _, c := range cases {
		if got := p.At(c.epoch, c.batch, c.step); got != c.want {
			t.Errorf("At(epoch %d, batch %d, step %d) = %t, want %t", c.epoch, c.batch, c.step, got, c.want)
		}
	}
}

// TestKindAt: a step belongs to the epoch whose batches hold it; a step past the
// plan's end to the last epoch, and an empty plan's to SFT.
func TestKindAt(t *testing.T) {
	p := &Plan{Epochs: []Epoch{{Kind: SFT, Batches: 2}, {Kind: SFT, Batches: 1}, {Kind: ESPO, Batches: 3}}}
	want := []Kind{SFT, SFT, SFT, ESPO, ESPO, ESPO, ESPO}
	for s, k := range want {
		if got := p.KindAt(int64(s)); got != k {
			t.Errorf("KindAt(%d) = %s, want %s", s, got, k)
		}
	}
	if got := (&Plan{}).KindAt(0); got != SFT {
		t.Errorf("an empty plan's KindAt(0) = %s, want sft", got)
	}
}
