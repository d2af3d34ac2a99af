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

package v1alpha1

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills every unset field of s that has a default with that default: the same
// values the API server's CRD defaulting writes (a test holds the two together). The
// trainer calls it on a config read without an API server; the controller and test
// builders may call it on objects they build.
func (s *ESPOJobSpec) Default() {
	for i := range s.Datasets.Sources {
		s.Datasets.Sources[i].Default()
	}
	s.Datasets.Split.Default()
	if s.Datasets.Environment != nil {
		s.Datasets.Environment.Default()
	}
	s.Model.Default()
	s.Algorithm.Default()
	s.Rewards.Default()
	s.Trainer.Default()
	s.RunPolicy.Default()
	if s.Checkpoint != nil {
		s.Checkpoint.Default()
	}
	if s.EarlyStopping != nil {
		setDefault(&s.EarlyStopping.Patience, 1)
	}
}

// The defaults of generated data: of a synthetic source (the CRD's default markers on
// SyntheticSource repeat them, and a test holds the two together) and of
// "espo dataset generate", whose flags read them.
const (
	// DefaultSyntheticEpisodes is how many episodes are generated.
	DefaultSyntheticEpisodes = 100
	// DefaultSyntheticSeed is the generator's seed.
	DefaultSyntheticSeed = 0
	// DefaultSyntheticDifficulty is how hard the generated users are to read.
	DefaultSyntheticDifficulty = DifficultyStandard
)

// DefaultSyntheticChannels are the channels generated when none are named: every
// channel but medicine, the benchmark's held-out channel.
func DefaultSyntheticChannels() []Channel {
	return []Channel{"food", "hotel", "flight", "movie", "travel"}
}

// Default fills the unset fields of d with their defaults.
func (d *DatasetSource) Default() {
	setDefault(&d.Split, SplitAll)
	if d.Synthetic != nil {
		d.Synthetic.Default()
	}
}

// Default fills the unset fields of s with their defaults. Seed's default is 0, its
// zero value.
func (s *SyntheticSource) Default() {
	if s.Channels == nil {
		s.Channels = DefaultSyntheticChannels()
	}
	setDefault(&s.Episodes, DefaultSyntheticEpisodes)
	setDefault(&s.Difficulty, DefaultSyntheticDifficulty)
}

// The defaults of an environment source.
const (
	// DefaultEnvironmentEpisodes is the number of episodes per epoch.
	DefaultEnvironmentEpisodes = 100
	// DefaultEnvironmentValidationEpisodes is the number of validation episodes.
	DefaultEnvironmentValidationEpisodes = 20
	// DefaultEnvironmentTestEpisodes is the number of test episodes.
	DefaultEnvironmentTestEpisodes = 50
	// DefaultEnvironmentMaxSteps is the step cap of an episode.
	DefaultEnvironmentMaxSteps = 40
	// DefaultEnvironmentTimeoutSeconds bounds each call to an environment endpoint.
	DefaultEnvironmentTimeoutSeconds = 30
)

// Default fills the unset fields of e with their defaults.
func (e *EnvironmentSource) Default() {
	setDefault(&e.Episodes, DefaultEnvironmentEpisodes)
	setDefaultPtr(&e.ValidationEpisodes, DefaultEnvironmentValidationEpisodes)
	setDefaultPtr(&e.TestEpisodes, DefaultEnvironmentTestEpisodes)
	setDefault(&e.MaxSteps, DefaultEnvironmentMaxSteps)
	if e.Endpoint != nil {
		setDefault(&e.Endpoint.TimeoutSeconds, DefaultEnvironmentTimeoutSeconds)
	}
	if e.Simulated != nil {
		if e.Simulated.Channels == nil {
			e.Simulated.Channels = DefaultSyntheticChannels()
		}
		setDefault(&e.Simulated.Difficulty, DefaultSyntheticDifficulty)
	}
}

// Default fills the unset fields of d with their defaults (8:1:1).
func (d *DatasetSplit) Default() {
	setDefault(&d.Train, "0.8")
	setDefault(&d.Validation, "0.1")
	setDefault(&d.Test, "0.1")
}

// Default fills the unset fields of m with their defaults. A model with nothing set
// (spec.model left out) gets the CRD's default, the CPU policy with its cpu section
// written out; a model with a worker named keeps cpu unset unless it sets it.
func (m *ModelSpec) Default() {
	if m.isUnset() {
		m.CPU = &CPUPolicySpec{}
	}
	setDefault(&m.Worker, WorkerCPU)
	if m.Rollout != nil {
		setDefault(&m.Rollout.Engine, RolloutHuggingFace)
	}
	if m.CPU != nil {
		setDefault(&m.CPU.Architecture, CPUFeatures)
		setDefault(&m.CPU.HiddenSize, 32)
		setDefault(&m.CPU.FeatureBits, 15)
		setDefault(&m.CPU.MaxIntentWords, 40)
	}
}

// isUnset reports whether no field of m is set.
func (m *ModelSpec) isUnset() bool { return reflect.ValueOf(m).Elem().IsZero() }

// Default fills the unset fields of a with their defaults (the ESPO paper's recipe).
func (a *AlgorithmSpec) Default() {
	setDefault(&a.Name, AlgorithmESPO)
	if a.SFTEpochs == nil {
		one := int32(1)
		a.SFTEpochs = &one
	}
	setDefault(&a.Epochs, 6)
	setDefault(&a.GroupSize, 5)
	setDefault(&a.EpisodesPerBatch, 1)
	setDefault(&a.LearningRate, "1e-6")
	setDefault(&a.MaxGradNorm, "1.0")
	setDefault(&a.SamplingTemperature, "1.0")
	setDefault(&a.Clip.Low, "0.2")
	setDefault(&a.Clip.High, "0.3")
	setDefault(&a.Clip.Dual, "3.0")
	setDefault(&a.KL.Coefficient, "0.01")
	setDefault(&a.KL.Estimator, KLK3)
	setDefault(&a.LossAggregation, LossSeqMeanTokenMean)
	if a.Optimizer == nil {
		a.Optimizer = &OptimizerSpec{}
	}
	a.Optimizer.Default()
}

// Default fills the unset fields of o with their defaults: today's AdamW constants
// and a constant learning rate without warm-up. WarmupSteps' default is 0, its zero
// value.
func (o *OptimizerSpec) Default() {
	setDefault(&o.Beta1, DefaultBeta1)
	setDefault(&o.Beta2, DefaultBeta2)
	setDefault(&o.Epsilon, DefaultEpsilon)
	setDefault(&o.WeightDecay, DefaultWeightDecay)
	setDefault(&o.Schedule, ScheduleConstant)
}

// Default fills the unset fields of r with their defaults (the ESPO paper's rewards).
func (r *RewardsSpec) Default() {
	setDefault(&r.Format, "0.5")
	setDefault(&r.GUI.Exact, "0.5")
	setDefault(&r.GUI.TypeOnly, "0.2")
	setDefault(&r.GUI.ValueOnly, "-0.2")
	setDefault(&r.GUI.Wrong, "-0.5")
	setDefault(&r.GUI.TextF1Threshold, "0.5")
	setDefault(&r.Intent.Correct, "0.5")
	setDefault(&r.Intent.Match, IntentMatchAuto)
	setDefault(&r.Intent.SlotScore, IntentSlotScoreAll)
	if r.Intent.Embedder != nil {
		r.Intent.Embedder.Default()
	}
	setDefault(&r.Decision.Correct, "0.5")
	setDefault(&r.Decision.Wrong, "-0.5")
	setDefault(&r.COUT.Temperature, "1.0")
	setDefault(&r.COUT.Weight, "1.0")
	setDefault(&r.COUT.Mode, COUTEpisode)
	setDefault(&r.COUT.Gates, COUTBothGates)
	setDefault(&r.COUT.EmptyGate, "0.5")
}

// Default fills the unset fields of e with their defaults.
func (e *EmbedderSpec) Default() {
	setDefault(&e.TimeoutSeconds, 30)
	setDefault(&e.BatchSize, 256)
}

// Default fills the unset fields of t with their defaults.
func (t *TrainerSpec) Default() {
	setDefault(&t.Replicas, 1)
	setDefault(&t.WorkersPerReplica, 1)
	if t.StatusInterval == nil {
		t.StatusInterval = &metav1.Duration{Duration: DefaultStatusInterval}
	}
}

// DefaultStatusInterval is spec.trainer.statusInterval's default.
const DefaultStatusInterval = 10 * time.Second

// Default fills the unset fields of p with their defaults. MaxDisruptions has none:
// unset means no limit.
func (p *RunPolicy) Default() {
	if p.BackoffLimit == nil {
		three := int32(3)
		p.BackoffLimit = &three
	}
}

// Default fills the unset fields of c with their defaults.
func (c *CheckpointSpec) Default() {
	setDefault(&c.EverySteps, 100)
	setDefault(&c.Keep, 3)
}

// setDefault sets *p to v when *p is the zero value.
// setDefaultPtr points an unset *p at v.
func setDefaultPtr[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
