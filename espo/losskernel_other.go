//go:build !amd64 || purego

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

// useAVX2 is false: without the assembly, lossTokens runs the Go loop.
const useAVX2 = false

func lossTokensVec(w, lp, old, ref *float64, n int, l *lossLanes) {
	panic("espo: no AVX2 kernel in this build")
}
