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

package mlflow

import (
	"fmt"
	"testing"
)

// TestBatchesKeepCountAndBytes checks the split of log-batch requests: at most
// perBatch items, at most maxBatchBytes of them, and an item larger than that alone.
func TestBatchesKeepCountAndBytes(t *testing.T) {
	for _, tc := range []struct {
		sizes    []int
		perBatch int
		want     string
	}{
		{nil, 100, "[]"},
		{[]int{1, 1, 1, 1, 1}, 2, "[[0 2] [2 4] [4 5]]"},
		{[]int{400_000, 400_000, 400_000, 1}, 100, "[[0 2] [2 4]]"},
		{[]int{1, 2_000_000, 1}, 100, "[[0 1] [1 2] [2 3]]"},
	} {
		got := fmt.Sprint(batches(len(tc.sizes), tc.perBatch, func(i int) int { return tc.sizes[i] }))
		if got != tc.want {
			t.Errorf("batches of sizes %v, %d a batch: %s, want %s", tc.sizes, tc.perBatch, got, tc.want)
		}
	}
}
