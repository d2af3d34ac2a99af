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

package worker

import (
	"reflect"
	"testing"
)

// TestSamplesRoundTrip: candidatesMsgs and samplesOf are inverses, every field of a
// Sample (the sampler's log-probs too) kept, an unset one left unset.
func TestSamplesRoundTrip(t *testing.T) {
	in := [][]Sample{
		{
			{Answer: Answer{Text: "a", Tokens: []int32{4, 5}}, LogProbs: []float64{-0.5, -1}, SamplerLogProbs: []float64{-0.4, -1.25}},
			{Answer: Answer{Text: "b", Tokens: []int32{6}}, LogProbs: []float64{-2}},
		},
		{},
	}
	got := samplesOf(candidatesMsgs(in))
	if !reflect.DeepEqual(got, in) {
		t.Errorf("round trip gives %+v, want %+v", got, in)
	}
}
