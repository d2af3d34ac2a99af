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
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/plan"
)

// evaluation is one validation result fed to earlyStop: the epoch's kind, its
// recommendation accuracy and the epoch's mean step reward.
type evaluation struct {
	kind   plan.Kind
	recAcc float64
	reward float64
}

// earlyStops feeds the evaluations to earlyStop in order and returns the index of the
// one that stopped the run (-1 for none) and its stop.
func earlyStops(es *trainingv1alpha1.EarlyStoppingSpec, evals []evaluation) (int, stop) {
	p := decimalParser{}
	tr := &Trainer{settings: &Settings{EarlyStopping: resolveEarlyStopping(&p, es)}}
	for i, e := range evals {
		tr.epochReward = meanAcc{sum: e.reward, n: 1}
		if s, stopped := tr.earlyStop(&plan.Epoch{Kind: e.kind}, &EvalResult{RecommendationAccuracy: e.recAcc}); stopped {
			return i, s
		}
	}
	return -1, stop{}
}

// TestPatienceAppliesToEveryCondition checks spec.earlyStopping.patience as the API
// documents it: each condition must hold for patience evaluations in a row, a
// validation that breaks the row starts it again, and SFT epochs (which have no
// rewards) neither count nor break minReward's row.
func TestPatienceAppliesToEveryCondition(t *testing.T) {
	target := &trainingv1alpha1.MetricTarget{Metric: trainingv1alpha1.MetricRecommendationAccuracy, Value: "0.5"}
	for _, tc := range []struct {
		name    string
		es      trainingv1alpha1.EarlyStoppingSpec
		evals   []evaluation
		stopsAt int
		reason  stopReason
		message string
	}{{
		name:    "target, patience 1: the first evaluation that reaches it, the cold start's included",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target, Patience: 1},
		evals:   []evaluation{{plan.SFT, 0.6, 0}, {plan.ESPO, 0.6, 0}},
		stopsAt: 0, reason: stopTargetReached, message: "recommendationAccuracy 0.600 reached the target 0.5 at step 0",
	}, {
		name:    "target, patience 2: the second evaluation in a row",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target, Patience: 2},
		evals:   []evaluation{{plan.SFT, 0.6, 0}, {plan.ESPO, 0.7, 0}},
		stopsAt: 1, reason: stopTargetReached, message: "recommendationAccuracy 0.700 reached the target 0.5 at step 0, 2 evaluations in a row",
	}, {
		name:    "target, patience 2: a miss starts the row again",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target, Patience: 2},
		evals:   []evaluation{{plan.SFT, 0.6, 0}, {plan.ESPO, 0.4, 0}, {plan.ESPO, 0.5, 0}, {plan.ESPO, 0.9, 0}},
		stopsAt: 3, reason: stopTargetReached,
	}, {
		name:    "target, patience 3: never three in a row",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target, Patience: 3},
		evals:   []evaluation{{plan.ESPO, 0.6, 0}, {plan.ESPO, 0.6, 0}, {plan.ESPO, 0.1, 0}, {plan.ESPO, 0.6, 0}, {plan.ESPO, 0.6, 0}},
		stopsAt: -1,
	}, {
		name:    "minReward, patience 2: SFT evaluations neither count nor break the row",
		es:      trainingv1alpha1.EarlyStoppingSpec{MinReward: "-0.5", Patience: 2},
		evals:   []evaluation{{plan.SFT, 0, -1}, {plan.ESPO, 0, -1}, {plan.SFT, 0, 0}, {plan.ESPO, 0, -0.75}},
		stopsAt: 3, reason: stopRewardCollapsed, message: "the mean step reward -0.750 was below -0.5, 2 evaluations in a row",
	}, {
		name:    "minReward, patience 2: a good epoch starts the row again",
		es:      trainingv1alpha1.EarlyStoppingSpec{MinReward: "-0.5", Patience: 2},
		evals:   []evaluation{{plan.ESPO, 0, -1}, {plan.ESPO, 0, 0.2}, {plan.ESPO, 0, -1}},
		stopsAt: -1,
	}, {
		name:    "both: each keeps its own row",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target, MinReward: "-0.5", Patience: 2},
		evals:   []evaluation{{plan.ESPO, 0.6, 0}, {plan.ESPO, 0.1, -1}, {plan.ESPO, 0.6, -1}},
		stopsAt: 2, reason: stopRewardCollapsed,
	}, {
		name:    "patience unset (0, a config read without defaults) acts as 1",
		es:      trainingv1alpha1.EarlyStoppingSpec{Target: target},
		evals:   []evaluation{{plan.ESPO, 0.6, 0}},
		stopsAt: 0, reason: stopTargetReached,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			at, s := earlyStops(&tc.es, tc.evals)
			if at != tc.stopsAt || (at >= 0 && s.reason != tc.reason) {
				t.Fatalf("stopped at evaluation %d (reason %d: %q), want %d (reason %d)", at, s.reason, s.message, tc.stopsAt, tc.reason)
			}
			if tc.message != "" && s.message != tc.message {
				t.Errorf("message %q, want %q", s.message, tc.message)
			}
		})
	}
}

// TestPatienceTwoRunsAnESPOEpochAfterTheColdStart runs a job whose target every
// evaluation reaches, with patience 2: it stops after the first ESPO epoch, not in its
// SFT cold start.
func TestPatienceTwoRunsAnESPOEpochAfterTheColdStart(t *testing.T) {
	c := smallConfig(t, trainingv1alpha1.AlgorithmESPO)
	c.Spec.Algorithm.Epochs = 2
	c.Spec.EarlyStopping = &trainingv1alpha1.EarlyStoppingSpec{
		Target: &trainingv1alpha1.MetricTarget{Metric: trainingv1alpha1.MetricFormatRate, Value: "0"}, Patience: 2}
	rep, tr := run(t, c, Options{Workers: cpuGang(1)})
	if rep.Outcome != trainingv1alpha1.OutcomeTargetReached {
		t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
	}
	if want := int64(tr.plan.Epochs[0].Batches + tr.plan.Epochs[1].Batches); rep.Steps != want {
		t.Errorf("stopped after %d steps, want after the SFT epoch and the first ESPO epoch: %d", rep.Steps, want)
	}
	var stages []plan.Kind
	for _, r := range rep.Validation {
		stages = append(stages, r.Stage)
	}
	if len(stages) != 2 || stages[0] != plan.SFT || stages[1] != plan.ESPO {
		t.Errorf("validation evaluations after %v, want [sft espo]", stages)
	}
}

// TestThePVCSampleRunsESPO holds config/samples' PVC job to what its comment says: its
// early stopping lets it reach ESPO even when every evaluation, the cold start's
// included, reaches the target; its patience outlasts its SFT epochs.
func TestThePVCSampleRunsESPO(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "samples", "training_v1alpha1_espojob_pvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job trainingv1alpha1.ESPOJob
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatal(err)
	}
	job.Spec.Default()
	es, alg := job.Spec.EarlyStopping, job.Spec.Algorithm
	if es == nil || es.Target == nil {
		t.Fatal("the PVC sample no longer stops on a target: this test reads its earlyStopping")
	}
	if alg.Name != trainingv1alpha1.AlgorithmESPO || int(es.Patience) <= int(*alg.SFTEpochs) {
		t.Errorf("algorithm %s with %d SFT epochs and patience %d: a target reached in every evaluation stops it before ESPO",
			alg.Name, *alg.SFTEpochs, es.Patience)
	}
	var evals []evaluation
	for range *alg.SFTEpochs {
		evals = append(evals, evaluation{plan.SFT, 1, 0})
	}
	evals = append(evals, evaluation{plan.ESPO, 1, 0})
	if at, s := earlyStops(es, evals); at >= 0 && at < int(*alg.SFTEpochs) {
		t.Errorf("stops after evaluation %d, in its SFT cold start: %s", at, s.message)
	}
}
