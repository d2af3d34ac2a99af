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
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/environment"
	"github.com/espo-dev/espo-operator/trainer/environmentpb"
	"github.com/espo-dev/espo-operator/trainer/estimator"
)

// livedConfig is a small run that lives in the simulated app: 4 episodes per epoch,
// two per batch, G = 3, one SFT epoch on the expert's demonstrations, one of alg.
func livedConfig(t *testing.T, alg trainingv1alpha1.AlgorithmName) *Config {
	t.Helper()
	c := &Config{OutputDir: t.TempDir()}
	two, three := int32(2), int32(3)
	c.Spec.Datasets.Environment = &trainingv1alpha1.EnvironmentSource{Episodes: 4, ValidationEpisodes: &two, TestEpisodes: &three,
		Simulated: &trainingv1alpha1.SimulatedEnvironment{Channels: []trainingv1alpha1.Channel{"food", "hotel"},
			EvaluationChannels: []trainingv1alpha1.Channel{"medicine"}, Difficulty: trainingv1alpha1.DifficultyHard, Seed: 5}}
	one := int32(1)
	c.Spec.Algorithm = trainingv1alpha1.AlgorithmSpec{Name: alg, SFTEpochs: &one, Epochs: 1, GroupSize: 3, EpisodesPerBatch: 2,
		LearningRate: "0.01", Seed: 11}
	c.Spec.Model.CPU = &trainingv1alpha1.CPUPolicySpec{HiddenSize: 16, Architecture: trainingv1alpha1.CPUTokens}
	c.Spec.Default()
	return c
}

// TestLivedRunCompletesWithEvaluationsInTheEnvironment: a run in the simulated app
// trains on demonstrations, then on its own rollouts, and is evaluated by living
// through held-out episodes of the evaluation channel.
func TestLivedRunCompletesWithEvaluationsInTheEnvironment(t *testing.T) {
	for _, alg := range []trainingv1alpha1.AlgorithmName{trainingv1alpha1.AlgorithmESPO, trainingv1alpha1.AlgorithmGRPO} {
		t.Run(string(alg), func(t *testing.T) {
			c := livedConfig(t, alg)
			rec := &recorder{}
			rep, tr := run(t, c, Options{Workers: cpuGang(1), Reporter: rec})
			if rep.Outcome != trainingv1alpha1.OutcomeCompleted {
				t.Fatalf("outcome %s: %s", rep.Outcome, rep.Message)
			}
			if rep.Steps != 4 || tr.plan.TotalSteps() != 4 {
				t.Errorf("%d steps, plan %d; want 2 epochs of 2 batches", rep.Steps, tr.plan.TotalSteps())
			}
			if len(rep.Validation) != 2 || rep.Validation[0].Episodes != 2 {
				t.Fatalf("validation %+v, want 2 evaluations of 2 episodes", rep.Validation)
			}
			if rep.Test == nil || rep.Test.Episodes != 3 || rep.Test.Steps == 0 {
				t.Fatalf("test %+v, want 3 episodes lived through", rep.Test)
			}
			for ch := range rep.Test.Report.ByChannel {
				if ch != "medicine" {
					t.Errorf("the test lived through a %s episode, want the evaluation channel only", ch)
				}
			}
			last := rec.reports[len(rec.reports)-1]
			if last.Evaluation == nil || last.Evaluation.Split != "test" || last.IntentMatch != "slots" {
				t.Errorf("last report %+v, want the test evaluation judged by slots", last)
			}
			if alg == trainingv1alpha1.AlgorithmESPO && last.MeanCOUTReward == "" {
				t.Errorf("last report lacks the COUT reward: %+v", last)
			}
		})
	}
}

// TestLivedRolloutsOfAGroupStartTogetherAndPart: the G rollouts of a seed see one
// first observation (one state key) and part once their sampled answers do; each
// rollout is one candidate per step, scored against the environment's references.
func TestLivedRolloutsOfAGroupStartTogetherAndPart(t *testing.T) {
	c := livedConfig(t, trainingv1alpha1.AlgorithmESPO)
	tr, err := newTrainer(c, Options{Workers: cpuGang(1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tr.start(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := tr.src.Candidates(ctx, 1, 0, tr.sampling())
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Families) != 2 || len(b.Groups) != 6 {
		t.Fatalf("%d families of %d rollouts, want 2 seeds of G = 3", len(b.Families), len(b.Groups))
	}
	parted := false
	for _, family := range b.Families {
		first := b.Groups[family[0]]
		for _, gi := range family {
			g := b.Groups[gi]
			if len(g.Samples) != len(g.Steps) || len(g.Prompts) != len(g.Steps) {
				t.Fatalf("rollout %s: %d samples and %d prompts for %d steps", g.Episode.ID, len(g.Samples), len(g.Prompts), len(g.Steps))
			}
			if g.Prompts[0].ObservationKey() != first.Prompts[0].ObservationKey() {
				t.Errorf("rollout %s starts elsewhere than %s", g.Episode.ID, first.Episode.ID)
			}
			n := min(len(g.Prompts), len(first.Prompts))
			parted = parted || g.Prompts[n-1].ObservationKey() != first.Prompts[n-1].ObservationKey() || len(g.Prompts) != len(first.Prompts)
		}
	}
	if !parted {
		t.Error("no two rollouts of a group parted: the samples do not drive the environment")
	}
	var stats batchStats
	if err := tr.advantages(groups(b), b.Families, &stats); err != nil {
		t.Fatal(err)
	}
	if stats.rewardCount == 0 {
		t.Error("no candidate was scored")
	}
}

// TestLivedRunResumesAtTheExactPosition: a lived run drained mid-epoch and resumed
// from its checkpoint lives through the same seeds with the same samples, and ends
// with the uninterrupted run's weights, byte for byte.
func TestLivedRunResumesAtTheExactPosition(t *testing.T) {
	d, _ := drainAndResume(t, func() *Config { return livedConfig(t, trainingv1alpha1.AlgorithmESPO) }, trainingv1alpha1.StageESPO)
	if last := d.reports[len(d.reports)-1]; last.LastCheckpoint == nil || last.LastCheckpoint.Step != 3 {
		t.Fatalf("last report: checkpoint %+v, want one at step 3", last.LastCheckpoint)
	}
}

// TestLivedRunRefusesAnEmbedder: intents in an environment are judged by slots, so
// a run config that asks for embedding judgements, or bounds their similarity, fails
// New naming the field.
func TestLivedRunRefusesAnEmbedder(t *testing.T) {
	for field, set := range map[string]func(*trainingv1alpha1.IntentRewards){
		"spec.rewards.intent.match":     func(r *trainingv1alpha1.IntentRewards) { r.Match = trainingv1alpha1.IntentMatchEmbedding },
		"spec.rewards.intent.threshold": func(r *trainingv1alpha1.IntentRewards) { r.Threshold = "0.7" },
	} {
		c := livedConfig(t, trainingv1alpha1.AlgorithmESPO)
		set(&c.Spec.Rewards.Intent)
		_, err := newTrainer(c, Options{Workers: cpuGang(1)})
		if err == nil || !strings.Contains(err.Error(), field) || PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
			t.Errorf("New: %v, want ConfigInvalid naming %s", err, field)
		}
	}
}

// TestLivedControlsTrainAndRefuseRecordedRuns: the estimators of the experiment
// controls run a lived job to the end; the outcome-only one credits every step of
// a rollout alike; a recorded run refuses them.
func TestLivedControlsTrainAndRefuseRecordedRuns(t *testing.T) {
	for _, e := range []estimator.Name{estimator.OutcomeOnly, estimator.GiGPO, estimator.ShuffledCOUT} {
		cfg := livedConfig(t, trainingv1alpha1.AlgorithmESPO)
		tr, err := newTrainer(cfg, Options{Workers: cpuGang(1), Estimator: e})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := tr.Run(context.Background())
		if err != nil || rep.Outcome != trainingv1alpha1.OutcomeCompleted {
			t.Fatalf("%s: %v %+v", e, err, rep)
		}
	}
	tr, err := newTrainer(livedConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: cpuGang(1), Estimator: estimator.OutcomeOnly})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tr.start(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := tr.src.Candidates(ctx, 1, 0, tr.sampling())
	if err != nil {
		t.Fatal(err)
	}
	gs := groups(b)
	if err := tr.advantages(gs, b.Families, &batchStats{}); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		for _, a := range g.adv {
			if a != g.adv[0] {
				t.Fatalf("rollout %s: outcome-only advantages %v differ between steps", g.Episode.ID, g.adv)
			}
		}
	}
	if _, err := newTrainer(smallConfig(t, trainingv1alpha1.AlgorithmESPO), Options{Workers: cpuGang(1), Estimator: estimator.GiGPO}); err == nil {
		t.Error("a recorded run took the GiGPO control")
	}
}

// serveSimulated serves the simulated app of opts over the environment protocol on a
// loopback port, checking token, until the test ends; slow, when set, delays every
// call first. It returns the address.
func serveSimulated(t *testing.T, opts environment.Options, token string, slow <-chan struct{}) string {
	t.Helper()
	srv, err := environment.NewServer(func() environment.Env {
		sim, err := environment.NewSimulated(opts)
		if err != nil {
			t.Error(err)
		}
		return sim
	}, token)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opt []grpc.ServerOption
	if slow != nil {
		opt = append(opt, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			select {
			case <-slow:
			case <-ctx.Done():
			}
			return h(ctx, req)
		}))
	}
	gs := grpc.NewServer(opt...)
	environmentpb.RegisterEnvironmentServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// endpointConfig is livedConfig with the environment an endpoint at addr: no SFT
// epochs, the simulated app's slots.
func endpointConfig(t *testing.T, addr string) *Config {
	c := livedConfig(t, trainingv1alpha1.AlgorithmESPO)
	sim, err := environment.NewSimulated(environment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Datasets.Environment.Simulated = nil
	slots := map[string]trainingv1alpha1.SlotValues{}
	for slot, values := range sim.Vocab() {
		slots[slot] = values
	}
	c.Spec.Datasets.Environment.Endpoint = &trainingv1alpha1.EnvironmentEndpoint{Address: trainingv1alpha1.HostPort(addr), Slots: slots}
	zero := int32(0)
	c.Spec.Algorithm.SFTEpochs = &zero
	c.Spec.Default()
	return c
}

// TestLivedRunThroughAnEndpoint: a run whose environment is a server of the
// environment protocol trains on its rollouts and is evaluated through it, with the
// job's token on every call.
func TestLivedRunThroughAnEndpoint(t *testing.T) {
	const token = "the-jobs-token"
	addr := serveSimulated(t, environment.Options{Difficulty: "hard", Seed: 5}, token, nil)
	c := endpointConfig(t, addr)
	dial := func(a string, timeout time.Duration) (*environment.Remote, error) {
		return environment.Dial(a, token, timeout)
	}
	rep, _ := run(t, c, Options{Workers: cpuGang(1), DialEnvironment: dial})
	if rep.Outcome != trainingv1alpha1.OutcomeCompleted || rep.Steps != 2 {
		t.Fatalf("outcome %s after %d steps: %s", rep.Outcome, rep.Steps, rep.Message)
	}
	if rep.Test == nil || rep.Test.Episodes != 3 || rep.Test.Steps == 0 {
		t.Fatalf("test %+v: want 3 episodes lived through the endpoint", rep.Test)
	}

	wrong := func(a string, timeout time.Duration) (*environment.Remote, error) {
		return environment.Dial(a, "another", timeout)
	}
	tr, err := newTrainer(endpointConfig(t, addr), Options{Workers: cpuGang(1), DialEnvironment: wrong, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "wrong environment token") {
		t.Errorf("a run with another job's token: %v, want the server's refusal", err)
	}
}

// TestLivedRunFailsWhenTheEndpointDoesNotAnswer: a server that does not answer within
// timeoutSeconds fails the run with an error that names the server and the call.
func TestLivedRunFailsWhenTheEndpointDoesNotAnswer(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	addr := serveSimulated(t, environment.Options{}, "token", never)
	c := endpointConfig(t, addr)
	c.Spec.Datasets.Environment.Endpoint.TimeoutSeconds = 1
	dial := func(a string, timeout time.Duration) (*environment.Remote, error) {
		return environment.Dial(a, "token", timeout)
	}
	tr, err := newTrainer(c, Options{Workers: cpuGang(1), DialEnvironment: dial, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tr.Run(context.Background())
	var timeout *environment.CallTimeoutError
	if !errors.As(err, &timeout) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "Reset") {
		t.Fatalf("Run: %v (%+v), want a call timeout naming %s and Reset", err, rep, addr)
	}
}

// TestEndpointRunsHaveNoSFTEpochs: an endpoint gives no demonstrations.
func TestEndpointRunsHaveNoSFTEpochs(t *testing.T) {
	c := endpointConfig(t, "127.0.0.1:1")
	one := int32(1)
	c.Spec.Algorithm.SFTEpochs = &one
	_, err := newTrainer(c, Options{Workers: cpuGang(1)})
	if err == nil || !strings.Contains(err.Error(), "sftEpochs: 0") || PermanentOutcome(err) != trainingv1alpha1.OutcomeConfigInvalid {
		t.Errorf("New: %v, want ConfigInvalid naming sftEpochs", err)
	}
}
