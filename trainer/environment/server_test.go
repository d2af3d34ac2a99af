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

package environment

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environmentpb"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// callTimeout bounds the calls of the tests that do not test the timeout: far
// beyond what a loopback call to a simulated environment takes.
const callTimeout = 30 * time.Second

// simulatedServer returns a Server of simulated environments with opts.
func simulatedServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if _, err := NewSimulated(opts); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(func() Env {
		env, err := NewSimulated(opts)
		if err != nil {
			return nil // the server refuses the Reset
		}
		return env
	}, testToken)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// serve serves srv on a loopback port until the test ends and returns its address.
func serve(t *testing.T, srv environmentpb.EnvironmentServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	environmentpb.RegisterEnvironmentServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// dial returns a Remote of addr closed when the test ends.
func dial(t *testing.T, addr, token string, timeout time.Duration) *Remote {
	t.Helper()
	r, err := Dial(addr, token, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestRemoteRolloutsOfOneSeedSeeOneStart: G=3 rollouts of one server, reset with one
// seed, see through the wire the first observation a local Reset gives.
func TestRemoteRolloutsOfOneSeedSeeOneStart(t *testing.T) {
	opts := Options{Seed: 7}
	r := dial(t, serve(t, simulatedServer(t, opts)), testToken, callTimeout)
	ctx := context.Background()
	for _, seed := range []uint64{0, 11, 1 << 40} {
		want, err := newEnv(t, opts).Reset(ctx, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"0", "1", "2"} {
			got, err := r.Rollout(id).Reset(ctx, seed)
			if err != nil {
				t.Fatalf("seed %d, rollout %s: %v", seed, id, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d, rollout %s: first observation through the wire\n%+v\nwant the local one\n%+v", seed, id, got, want)
			}
		}
	}
}

// rolloutPlan is how one rollout of TestRemoteEpisodesEqualLocalOnes answers: the
// expert's answer, except at the steps of bad, where it writes a malformed answer.
type rolloutPlan struct {
	id   string
	seed uint64
	bad  map[int]string
}

// TestRemoteEpisodesEqualLocalOnes drives G=3 rollouts of one server at once (two of
// one seed, one answering malformed text at some steps, and one of another seed) with
// the expert of a local twin, and compares every observation and result with the
// twin's: they are equal, the parse errors still espo's values, and a Step after
// the end is ErrDone.
func TestRemoteEpisodesEqualLocalOnes(t *testing.T) {
	for _, difficulty := range []string{dataset.DifficultyStandard, dataset.DifficultyHard} {
		t.Run(difficulty, func(t *testing.T) {
			opts := Options{Seed: 3, Difficulty: difficulty}
			r := dial(t, serve(t, simulatedServer(t, opts)), testToken, callTimeout)
			plans := []rolloutPlan{
				{id: "g0/r0", seed: 21},
				{id: "g0/r1", seed: 21, bad: map[int]string{1: "click the search box", 4: "<think>x</think><answer>[{'action': 'click'}]</answer>"}},
				{id: "g0/r2", seed: 22},
			}
			var wg sync.WaitGroup
			for _, p := range plans {
				wg.Go(func() { compareEpisode(t, r.Rollout(p.id), newEnv(t, opts), p) })
			}
			wg.Wait()
		})
	}
}

// compareEpisode plays p on remote and on its local twin and reports any difference.
// It runs in a goroutine of its own: it reports with t.Errorf and returns.
func compareEpisode(t *testing.T, remote Env, local *Simulated, p rolloutPlan) {
	ctx := context.Background()
	want, err := local.Reset(ctx, p.seed)
	if err != nil {
		t.Errorf("%s: local Reset: %v", p.id, err)
		return
	}
	got, err := remote.Reset(ctx, p.seed)
	if err != nil {
		t.Errorf("%s: Reset: %v", p.id, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: first observation\n%+v\nwant\n%+v", p.id, got, want)
		return
	}
	var judged, candidates, parseErrs int
	for step := 0; ; step++ {
		answer, ok := p.bad[step]
		if !ok {
			answer = local.Expert()
		}
		wantObs, wantRes, err := local.Step(ctx, answer)
		if err != nil {
			t.Errorf("%s: local Step %d: %v", p.id, step, err)
			return
		}
		gotObs, gotRes, err := remote.Step(ctx, answer)
		if err != nil {
			t.Errorf("%s: Step %d: %v", p.id, step, err)
			return
		}
		if !reflect.DeepEqual(gotObs, wantObs) {
			t.Errorf("%s: step %d: observation\n%+v\nwant\n%+v", p.id, step, gotObs, wantObs)
			return
		}
		if !reflect.DeepEqual(gotRes, wantRes) {
			t.Errorf("%s: step %d: result\n%+v\nwant\n%+v", p.id, step, gotRes, wantRes)
			return
		}
		if gotRes.Judged {
			judged++
		}
		if gotObs.Candidate != nil {
			candidates++
		}
		if gotRes.ParseErr != nil {
			parseErrs++
			if !errors.Is(gotRes.ParseErr, wantRes.ParseErr) {
				t.Errorf("%s: step %d: parse error %v is not espo's value", p.id, step, gotRes.ParseErr)
			}
		}
		if gotRes.Done {
			break
		}
	}
	// The episode reached the judged stages, and the malformed answers were read as such.
	if judged == 0 || candidates == 0 || parseErrs != len(p.bad) {
		t.Errorf("%s: %d judged steps, %d with a candidate, %d parse errors (want %d): the episode did not cover the protocol",
			p.id, judged, candidates, parseErrs, len(p.bad))
	}
	_, _, err = remote.Step(ctx, local.Expert())
	if !errors.Is(err, ErrDone) || status.Code(err) != codes.FailedPrecondition {
		t.Errorf("%s: Step after the end: %v (code %v), want ErrDone, FailedPrecondition", p.id, err, status.Code(err))
	}
}

// TestServerRefusesCallsWithoutTheToken: a call without the token, or with another,
// is Unauthenticated, Reset and Step alike, and the server's message does not quote
// what was sent.
func TestServerRefusesCallsWithoutTheToken(t *testing.T) {
	addr := serve(t, simulatedServer(t, Options{}))
	ctx := context.Background()
	good := dial(t, addr, testToken, callTimeout).Rollout("0")
	if _, err := good.Reset(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const wrong = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	for name, token := range map[string]string{"no token": "", "a wrong token": wrong} {
		ro := dial(t, addr, token, callTimeout).Rollout("0")
		_, err := ro.Reset(ctx, 1)
		if status.Code(err) != codes.Unauthenticated || strings.Contains(err.Error(), wrong) {
			t.Errorf("%s: Reset: %v, want Unauthenticated, not quoting the token", name, err)
		}
		_, _, err = ro.Step(ctx, "x")
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: Step of a rollout that was reset: %v, want Unauthenticated", name, err)
		}
	}
	// The refused Step changed nothing: the rollout is still at its first step.
	obs, _, err := good.Step(ctx, "x")
	if err != nil || obs.Step != 1 {
		t.Errorf("Step with the token: step %d, %v; want step 1", obs.Step, err)
	}
}

// TestServerStepOfAnUnknownRolloutIsFailedPrecondition: a Step for a rollout id no
// Reset named is FailedPrecondition naming it (and ErrNotReset to the Remote); a bad
// rollout id is InvalidArgument.
func TestServerStepOfAnUnknownRolloutIsFailedPrecondition(t *testing.T) {
	r := dial(t, serve(t, simulatedServer(t, Options{})), testToken, callTimeout)
	ctx := context.Background()
	if _, err := r.Rollout("known").Reset(ctx, 5); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.Rollout("stranger-7").Step(ctx, "x")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), `"stranger-7"`) {
		t.Errorf("Step of an unknown rollout: %v, want FailedPrecondition naming \"stranger-7\"", err)
	}
	if !errors.Is(err, ErrNotReset) {
		t.Errorf("Step of an unknown rollout: %v, want it to be ErrNotReset", err)
	}
	for name, id := range map[string]string{"empty": "", "over-long": strings.Repeat("r", MaxRolloutIDLen+1)} {
		if _, err := r.Rollout(id).Reset(ctx, 5); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Reset with an %s rollout id: %v, want InvalidArgument", name, err)
		}
		if _, _, err := r.Rollout(id).Step(ctx, "x"); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Step with an %s rollout id: %v, want InvalidArgument", name, err)
		}
	}
}

// hungEnv is an Env whose calls never return until release is closed.
type hungEnv struct{ release chan struct{} }

func (h hungEnv) Reset(context.Context, uint64) (Observation, error) {
	<-h.release
	return Observation{}, errors.New("released")
}

func (h hungEnv) Step(context.Context, string) (Observation, StepResult, error) {
	<-h.release
	return Observation{}, StepResult{}, errors.New("released")
}

// TestRemoteCallThatNeverReturnsFailsAfterTheTimeout: a server whose Reset never
// returns makes the call fail after the call timeout with a *CallTimeoutError naming
// the address, the call, the rollout and the wait (and wrapping DeadlineExceeded);
// a caller's own shorter deadline is the caller's, not a call timeout.
func TestRemoteCallThatNeverReturnsFailsAfterTheTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, err := NewServer(func() Env { return hungEnv{release} }, testToken)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	const timeout = 200 * time.Millisecond
	r := dial(t, addr, testToken, timeout)
	ctx := context.Background()

	start := time.Now()
	_, err = r.Rollout("0").Reset(ctx, 1)
	waited := time.Since(start)
	var te *CallTimeoutError
	if !errors.As(err, &te) || te.Addr != addr || te.Call != "Reset" || te.Rollout != "0" || te.Timeout != timeout {
		t.Fatalf("Reset: %v, want a CallTimeoutError of %s, Reset, rollout 0, %s", err, addr, timeout)
	}
	if waited < timeout {
		t.Errorf("Reset failed after %s, before the timeout %s", waited, timeout)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("code %v, want DeadlineExceeded", status.Code(err))
	}
	want := "environment " + addr + `: Reset of rollout "0" did not return within 200ms`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start with %q", err, want)
	}

	short, cancel := context.WithTimeout(ctx, timeout/2)
	defer cancel()
	_, err = r.Rollout("1").Reset(short, 1)
	if errors.As(err, &te) || status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("with a shorter deadline of its own, Reset ended with %v, want the caller's deadline", err)
	}
}

// TestNewServerAndDialRefuseBadArguments: no constructor, no token, no timeout.
func TestNewServerAndDialRefuseBadArguments(t *testing.T) {
	if _, err := NewServer(nil, testToken); err == nil {
		t.Error("NewServer without a constructor: no error")
	}
	if _, err := NewServer(func() Env { return nil }, ""); err == nil {
		t.Error("NewServer without a token: no error")
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if r, err := Dial("127.0.0.1:1", testToken, d); err == nil {
			_ = r.Close()
			t.Errorf("Dial with timeout %s: no error", d)
		}
	}
}

// TestWireRoundTripKeepsEveryField: an Observation and a StepResult with every field
// set (a box on a history entry, a candidate, preferences, slot counts, an unknown
// parse error) come back from the messages equal.
func TestWireRoundTripKeepsEveryField(t *testing.T) {
	box := dataset.Box{0.1, 0.2, 0.3, 0.4}
	obs := Observation{
		Channel: "food", Instruction: "something warm", Step: 4, Stage: dataset.StageRecommend,
		Screen: dataset.Screen{Screenshot: "s.png", Page: "detail", Elements: []dataset.Element{
			{ID: "e1", Role: "chip", Text: "Spicy", Box: box, Attrs: map[string]string{"selected": "true"}},
			{ID: "e2", Role: "button", Text: "Back", Box: dataset.Box{0, 0, 1, 0.1}},
		}},
		History: []dataset.Answer{
			{Action: espo.ActionClick, Point: box.Center(), InputText: espo.NoText, Target: "e1", Box: &box},
			{},
			{Action: espo.ActionType, Point: espo.NoPoint, InputText: "soup", Target: "e3"},
		},
		Candidate: &dataset.Item{ID: "i9", Name: "Pho", Attrs: map[string]string{"cuisine": "Vietnamese"}},
	}
	res := StepResult{
		Done:      true,
		Reference: dataset.Answer{Action: espo.ActionRecommendation, Point: espo.NoPoint, InputText: dataset.Yes},
		GroundTruth: espo.GroundTruth{Stage: espo.StagePool, Action: espo.Action{Type: espo.ActionPoolFound, Point: espo.NoPoint, Text: "warm soup"},
			Box: box, Screen: [2]float64{1080, 2400}, Intent: "warm soup", Preferences: map[string]string{"cuisine": "Vietnamese"}},
		ParseErr: errors.New("some other parser's complaint"),
		Judged:   true, Right: true,
		Slots: espo.SlotMatch{True: 3, Found: 2, Conflicting: 1, F1: 0.5},
		Want:  dataset.No,
	}
	om, err := observationMsg(&obs)
	if err != nil {
		t.Fatal(err)
	}
	gotObs, err := observationOf(om)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotObs, obs) {
		t.Errorf("observation\n%+v\nwant\n%+v", gotObs, obs)
	}
	rm, err := stepResultMsg(&res)
	if err != nil {
		t.Fatal(err)
	}
	gotRes, err := stepResultOf(rm)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotRes, res) {
		t.Errorf("result\n%+v\nwant\n%+v", gotRes, res)
	}
	if _, err := observationMsg(&Observation{Stage: "browse"}); err == nil {
		t.Error("an observation of an unknown stage: no error")
	}
	if _, err := observationOf(&environmentpb.Observation{Stage: 9}); err == nil {
		t.Error("a message of an unknown stage: no error")
	}
}
