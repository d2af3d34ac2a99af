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

package experience

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/permanent"
)

// Splits holds the episodes of each split.
type Splits struct {
	Train, Validation, Test []dataset.Episode
}

// LoadSplits loads every dataset source (spec.datasets.sources, their files under
// root) and assigns episodes to splits: a source with split "all" is pooled with the
// other such sources and cut by the train, validation and test fractions, by
// episode, after a shuffle seeded with seed (spec.datasets.split.seed); a source
// with an explicit split goes to that split whole.
func LoadSplits(root string, sources []trainingv1alpha1.DatasetSource, fractions [3]float64, seed uint64) (*Splits, error) {
	var pooled []dataset.Episode
	s := &Splits{}
	for i := range sources {
		src := &sources[i]
		eps, err := loadSource(root, src)
		if err != nil {
			return nil, permanent.Error(trainingv1alpha1.OutcomeDatasetInvalid,
				fmt.Errorf("spec.datasets.sources[%d] (%s): %w", i, src.Name, err))
		}
		switch src.Split {
		case trainingv1alpha1.SplitTrain:
			s.Train = append(s.Train, eps...)
		case trainingv1alpha1.SplitValidation:
			s.Validation = append(s.Validation, eps...)
		case trainingv1alpha1.SplitTest:
			s.Test = append(s.Test, eps...)
		default:
			pooled = append(pooled, eps...)
		}
	}
	train, val, test := splitEpisodes(pooled, fractions, seed)
	s.Train = append(s.Train, train...)
	s.Validation = append(s.Validation, val...)
	s.Test = append(s.Test, test...)
	if len(s.Train) == 0 {
		return nil, permanent.Error(trainingv1alpha1.OutcomeSplitEmpty,
			fmt.Errorf("spec.datasets: no training episodes; add episodes or raise spec.datasets.split.train"))
	}
	if err := checkSplitFilled(s, len(pooled), fractions); err != nil {
		return nil, err
	}
	return s, nil
}

// checkSplitFilled refuses a cut of pooled episodes that leaves the validation or the
// test set empty although its fraction asks for episodes: a run would train without
// the evaluations the spec asks for. The error says how many episodes each set got.
func checkSplitFilled(s *Splits, pooled int, fractions [3]float64) error {
	if pooled == 0 {
		return nil
	}
	for _, set := range []struct {
		name     string
		n        int
		fraction float64
	}{{"validation", len(s.Validation), fractions[1]}, {"test", len(s.Test), fractions[2]}} {
		if set.n == 0 && set.fraction > 0 {
			return permanent.Error(trainingv1alpha1.OutcomeSplitEmpty, fmt.Errorf(
				"spec.datasets.split: the %d pooled episodes split into train %d, validation %d, test %d: "+
					"the %s set is empty; add episodes, or set spec.datasets.split.%s to 0 to run without it",
				pooled, len(s.Train), len(s.Validation), len(s.Test), set.name, set.name))
		}
	}
	return nil
}

// loadSource reads one source's episodes.
func loadSource(root string, src *trainingv1alpha1.DatasetSource) ([]dataset.Episode, error) {
	switch {
	case src.Synthetic != nil:
		return dataset.Generate(syntheticOptions(src.Synthetic))
	case src.PersistentVolumeClaim != nil:
		return loadPath(filepath.Join(root, src.Name, src.PersistentVolumeClaim.Path))
	case src.ConfigMap != nil:
		return loadPath(filepath.Join(root, src.Name))
	}
	return nil, fmt.Errorf("no source: set one of synthetic, persistentVolumeClaim or configMap")
}

func syntheticOptions(s *trainingv1alpha1.SyntheticSource) dataset.GenerateOptions {
	o := dataset.GenerateOptions{Episodes: int(s.Episodes), Seed: uint64(s.Seed), Difficulty: string(s.Difficulty)}
	for _, ch := range s.Channels {
		o.Channels = append(o.Channels, string(ch))
	}
	return o
}

// loadPath loads a JSONL file, or every *.jsonl file of a folder in name order.
func loadPath(path string) ([]dataset.Episode, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return dataset.LoadFile(path)
	}
	files, err := filepath.Glob(filepath.Join(path, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no *.jsonl file", path)
	}
	sort.Strings(files)
	var all []dataset.Episode
	for _, f := range files {
		eps, err := dataset.LoadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, eps...)
	}
	return all, nil
}

// splitEpisodes shuffles episodes with a PCG seeded with seed and cuts them by the
// train, validation and test fractions: round(n*train) episodes for training,
// round(n*validation) for validation, the rest for test.
func splitEpisodes(eps []dataset.Episode, fractions [3]float64, seed uint64) (train, val, test []dataset.Episode) {
	order := make([]dataset.Episode, len(eps))
	copy(order, eps)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	n := float64(len(order))
	nTrain := int(math.Round(n * fractions[0]))
	nVal := min(int(math.Round(n*fractions[1])), len(order)-nTrain)
	return order[:nTrain], order[nTrain : nTrain+nVal], order[nTrain+nVal:]
}
