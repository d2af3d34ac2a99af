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

package torch

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// modelsDir holds the random models of the test binary (TestMain makes and removes it).
var modelsDir string

var (
	modelsMu sync.Mutex
	built    = map[string]error{}
)

// packageArchs are the architectures this package's tests train: randomModel builds
// them all in one process, on the first call for any of them (a process of its own
// for each imported torch and transformers again, about four CPU-seconds).
var packageArchs = []string{"qwen3", "qwen2", "qwen2_5_vl"}

// randomModel returns the folder of a tiny random Hugging Face model of arch (an
// architecture of tests/random_models.py: qwen3, qwen2, qwen2_vl, qwen2_5_vl), built
// by save_pretrained once per test binary and loaded by the worker through its own
// local-files-only path.
func randomModel(t *testing.T, arch string) string {
	t.Helper()
	modelsMu.Lock()
	defer modelsMu.Unlock()
	err, ok := built[arch]
	if !ok {
		archs := []string{arch}
		if slices.Contains(packageArchs, arch) {
			archs = packageArchs
		}
		cmd := exec.Command(python, append([]string{"-c", "import sys; from tests import random_models; " +
			"random_models.build_each(sys.argv[1], sys.argv[2:])", modelsDir}, archs...)...)
		cmd.Env = pyEnv()
		if out, cerr := cmd.CombinedOutput(); cerr != nil {
			err = &buildError{archs: archs, err: cerr, out: string(out)}
		}
		for _, a := range archs {
			built[a] = err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(modelsDir, arch)
}

type buildError struct {
	archs []string
	out   string
	err   error
}

func (e *buildError) Error() string {
	return "tests.random_models.build_each " + strings.Join(e.archs, " ") + ": " + e.err.Error() + "\n" + e.out
}

// screenshot writes the k-th of a set of distinct 112x168 screenshots (a light screen
// with a dark box whose place and shade depend on k) under the test's temporary folder
// and returns its path.
func screenshot(t *testing.T, k int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 112, 168))
	for y := 0; y < 168; y++ {
		for x := 0; x < 112; x++ {
			c := color.RGBA{230, 230, 230, 255}
			if x >= 10+30*k && x < 50+30*k && y >= 20 && y < 60 {
				c = color.RGBA{uint8(200 - 60*k), 40, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	path := filepath.Join(t.TempDir(), "screen-"+strconv.Itoa(k)+".png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	return path
}
