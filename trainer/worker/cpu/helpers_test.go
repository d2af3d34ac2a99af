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
	"bytes"
	"testing"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// episodes generates n SmartSpot episodes of every channel.
func episodes(t testing.TB, n int, seed uint64) []dataset.Episode {
	t.Helper()
	eps, err := dataset.Generate(dataset.GenerateOptions{Episodes: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// prompts returns the prompts of every step of ep.
func prompts(ep *dataset.Episode) []*workerpb.Prompt {
	ps := make([]*workerpb.Prompt, len(ep.Steps))
	for j := range ep.Steps {
		ps[j] = worker.PromptFromStep(ep, j)
	}
	return ps
}

// configured returns a policy configured with seed and options.
func configured(t testing.TB, seed uint64, options map[string]string) *Policy {
	t.Helper()
	p := New(2)
	if err := p.Configure(seed, options); err != nil {
		t.Fatal(err)
	}
	return p
}

// truth returns the ground-truth answer text of step j of ep.
func truth(ep *dataset.Episode, j int) string {
	return espo.FormatAnswer("", ep.Steps[j].Answer.Espo())
}

// sampleOptions samples G answers at temperature 1 with seed.
func sampleOptions(G int, seed uint64) worker.SampleOptions {
	return worker.SampleOptions{Samples: G, Temperature: 1, Seed: seed}
}

// reloaded saves p and loads the state into a new policy; it returns the new
// policy and the saved state.
func reloaded(t testing.TB, p *Policy) (*Policy, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		t.Fatal(err)
	}
	q := New(1)
	if err := q.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	return q, buf.Bytes()
}
