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

package trainer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/plan"
)

// benchTrainer returns a trainer over n generated episodes, configured and past SFT
// (the reference frozen), ready for ESPO steps with G = 5.
func benchTrainer(b *testing.B, episodes int) *Trainer {
	b.Helper()
	c := &Config{}
	zero := int32(0)
	c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "synth", Split: trainingv1alpha1.SplitTrain,
		Synthetic: &trainingv1alpha1.SyntheticSource{Episodes: int32(episodes), Seed: 1}}}
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{SFTEpochs: &zero, Epochs: 1, GroupSize: 5, LearningRate: "0.01", Seed: 1}
	c.Spec.Default()
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), Log: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := tr.start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := tr.freezeReferenceBefore(ctx, plan.ESPO); err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkTrainStep measures one ESPO optimizer step on one SmartSpot episode with
// G = 5 (Generate, rewards and advantages, LogProbs, loss weights, Backward, Step) and
// reports the share of it spent in the espo package.
func BenchmarkTrainStep(b *testing.B) {
	tr := benchTrainer(b, 8)
	ctx := context.Background()
	var core time.Duration
	b.ReportAllocs()
	start := time.Now()
	for i := range b.N {
		tr.state.Batch = i % tr.plan.Epochs[0].Batches
		stats, err := tr.trainBatch(ctx, plan.ESPO)
		if err != nil {
			b.Fatal(err)
		}
		core += stats.times[trainingv1alpha1.PhaseRewards]
	}
	b.ReportMetric(100*core.Seconds()/time.Since(start).Seconds(), "espo-%")
}

// BenchmarkESPOEpoch100 measures one ESPO epoch over 100 generated episodes, one
// episode per batch, G = 5, on one CPU worker.
func BenchmarkESPOEpoch100(b *testing.B) {
	for range b.N {
		b.StopTimer()
		tr := benchTrainer(b, 100)
		b.StartTimer()
		if s, stopped := tr.trainEpoch(context.Background(), &tr.plan.Epochs[0]); stopped {
			b.Fatalf("the epoch stopped: %s", s.message)
		}
	}
}

// BenchmarkRunBinding measures the digests a run with checkpoints computes once at
// start (runBinding: the spec's sections and every loaded episode), over 1e2 to 1e4
// generated episodes.
func BenchmarkRunBinding(b *testing.B) {
	for _, episodes := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("episodes=%d", episodes), func(b *testing.B) {
			c := &Config{}
			c.Spec.Datasets.Sources = []trainingv1alpha1.DatasetSource{{Name: "synth",
				Synthetic: &trainingv1alpha1.SyntheticSource{Episodes: int32(episodes), Seed: 1}}}
			c.Spec.Default()
			res, err := Resolve(c)
			if err != nil {
				b.Fatal(err)
			}
			data, err := loadSplits(c, res.Split)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for range b.N {
				if _, err := runBinding(c, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
