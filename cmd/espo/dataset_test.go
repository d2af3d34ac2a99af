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

package main

import (
	"bytes"
	"fmt"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// TestDatasetGenerateDefaultsAreASyntheticSourcesDefaults runs "espo dataset generate"
// with no flag but --episodes and compares its output with the episodes a synthetic
// dataset source that names nothing but its episodes generates (channels, seed and
// difficulty defaulted as the API defaults them): the same bytes. It also checks the
// default of --episodes.
func TestDatasetGenerateDefaultsAreASyntheticSourcesDefaults(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"dataset", "generate", "--episodes", "6"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}

	src := trainingv1alpha1.SyntheticSource{Episodes: 6}
	src.Default()
	opts := dataset.GenerateOptions{Episodes: int(src.Episodes), Seed: uint64(src.Seed), Difficulty: string(src.Difficulty)}
	for _, c := range src.Channels {
		opts.Channels = append(opts.Channels, string(c))
	}
	var want bytes.Buffer
	if err := dataset.Write(&want, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Errorf("espo dataset generate --episodes 6 differs from a synthetic source of 6 episodes (channels %v, seed %d, difficulty %s)",
			src.Channels, src.Seed, src.Difficulty)
	}

	var defaults trainingv1alpha1.SyntheticSource
	defaults.Default()
	flag := newDatasetGenerateCommand().Flags().Lookup("episodes")
	if flag.DefValue != fmt.Sprint(defaults.Episodes) {
		t.Errorf("--episodes defaults to %s, a synthetic source to %d", flag.DefValue, defaults.Episodes)
	}
}
