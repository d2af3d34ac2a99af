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

package dataset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzStream feeds arbitrary bytes to the loader: it must never panic, never pass
// an episode that fails Validate, and report every refusal as a *Problems.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	broken, _ := filepath.Glob(filepath.Join("testdata", "broken", "*.jsonl"))
	for _, p := range append(files, broken...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("{}\n[]\nnull\n\"x\"\n1e999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Options{MaxLineBytes: 1 << 16}.Stream(bytes.NewReader(data), func(ep Episode) error {
			if ps := Validate(&ep); len(ps) > 0 {
				t.Fatalf("passed an invalid episode: %v", ps)
			}
			return nil
		})
		var ps *Problems
		if err != nil && (!errors.As(err, &ps) || ps.Total == 0) {
			t.Fatalf("error %v is not a *Problems", err)
		}
	})
}
