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
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environmentpb"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// Remote is an environment server reached over gRPC with the environment protocol
// (trainer/environmentpb): an emulator farm, a browser pool, or a Server. Rollout
// returns the Env of one rollout id; the Envs of one Remote share its connection and
// may be used concurrently, each by one goroutine.
type Remote struct {
	addr    string
	conn    *grpc.ClientConn
	client  environmentpb.EnvironmentClient
	timeout time.Duration
}

// Dial returns the environment server at addr (host:port, or any gRPC target) over a
// plaintext connection, sending token with every call as the metadata
// "authorization: Bearer <token>" (an empty token sends none) and bounding every
// call by timeout, which must be positive: a call that has not returned by then fails
// with a *CallTimeoutError. The connection is made lazily, on the first call; Close
// closes it.
func Dial(addr, token string, timeout time.Duration) (*Remote, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("environment %s: call timeout %s, want a positive one", addr, timeout)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(worker.Bearer(token)))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("environment %s: %w", addr, err)
	}
	return &Remote{addr: addr, conn: conn, client: environmentpb.NewEnvironmentClient(conn), timeout: timeout}, nil
}

// Rollout returns the Env of rollout id on the server: its Reset and Step are the
// server's for that id, so that G rollouts of a group are G ids of one Remote.
func (r *Remote) Rollout(id string) Env { return &rollout{r: r, id: id} }

// Close closes the connection.
func (r *Remote) Close() error { return r.conn.Close() }

// String names the server in errors: its address.
func (r *Remote) String() string { return r.addr }

// CallTimeoutError is the error of a call to an environment server that did not
// return within the call timeout: a hung emulator or browser, or a server far slower
// than the timeout allows. It wraps the gRPC DeadlineExceeded error.
type CallTimeoutError struct {
	Addr    string        // the server's address
	Call    string        // the protocol method: Reset or Step
	Rollout string        // the rollout id of the call
	Timeout time.Duration // how long the caller waited
	Err     error
}

func (e *CallTimeoutError) Error() string {
	return fmt.Sprintf("environment %s: %s of rollout %q did not return within %s: the environment is hung or far slower than the call timeout allows",
		e.Addr, e.Call, e.Rollout, e.Timeout)
}

func (e *CallTimeoutError) Unwrap() error { return e.Err }

// misuseError is a FailedPrecondition of the server that is one of the Env
// contract's misuse errors (ErrNotReset, ErrDone): errors.Is finds both.
type misuseError struct {
	error
	sentinel error
}

func (e *misuseError) Unwrap() []error { return []error{e.error, e.sentinel} }

// rollout is the Env of one rollout id of a Remote.
type rollout struct {
	r  *Remote
	id string
}

var _ Env = (*rollout)(nil)

// call runs do under the call timeout (unless the caller's own deadline comes
// first) and names the call in its error.
func (ro *rollout) call(ctx context.Context, name string, do func(ctx context.Context) error) error {
	r := ro.r
	deadline := time.Now().Add(r.timeout)
	bounded := false
	callCtx := ctx
	if d, ok := ctx.Deadline(); !ok || d.After(deadline) {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		bounded = true
	}
	err := do(callCtx)
	switch {
	case err == nil:
		return nil
	// The server, sent the deadline, may end the call a moment before the timer here.
	case bounded && status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil:
		return &CallTimeoutError{Addr: r.addr, Call: name, Rollout: ro.id, Timeout: r.timeout, Err: err}
	}
	s, _ := status.FromError(err)
	err = fmt.Errorf("environment %s: %s of rollout %q: %w", r.addr, name, ro.id, err)
	if s.Code() == codes.FailedPrecondition {
		for _, sentinel := range []error{ErrNotReset, ErrDone} {
			if strings.HasSuffix(s.Message(), sentinel.Error()) {
				return &misuseError{error: err, sentinel: sentinel}
			}
		}
	}
	return err
}

// Reset starts the episode of episodeSeed for the rollout on the server.
func (ro *rollout) Reset(ctx context.Context, episodeSeed uint64) (Observation, error) {
	var resp *environmentpb.ResetResponse
	err := ro.call(ctx, "Reset", func(ctx context.Context) (err error) {
		resp, err = ro.r.client.Reset(ctx, &environmentpb.ResetRequest{EpisodeSeed: episodeSeed, RolloutId: ro.id})
		return err
	})
	if err != nil {
		return Observation{}, err
	}
	obs, err := observationOf(resp.GetObservation())
	if err != nil {
		return Observation{}, fmt.Errorf("environment %s: Reset of rollout %q: bad response: %w", ro.r.addr, ro.id, err)
	}
	return obs, nil
}

// Step sends the answer for the rollout to the server.
func (ro *rollout) Step(ctx context.Context, answer string) (Observation, StepResult, error) {
	var resp *environmentpb.StepResponse
	err := ro.call(ctx, "Step", func(ctx context.Context) (err error) {
		resp, err = ro.r.client.Step(ctx, &environmentpb.StepRequest{RolloutId: ro.id, Answer: answer})
		return err
	})
	if err != nil {
		return Observation{}, StepResult{}, err
	}
	obs, err := observationOf(resp.GetObservation())
	if err != nil {
		return Observation{}, StepResult{}, fmt.Errorf("environment %s: Step of rollout %q: bad response: %w", ro.r.addr, ro.id, err)
	}
	res, err := stepResultOf(resp.GetResult())
	if err != nil {
		return Observation{}, StepResult{}, fmt.Errorf("environment %s: Step of rollout %q: bad response: %w", ro.r.addr, ro.id, err)
	}
	return obs, res, nil
}

// stageOf returns the dataset stage of a protocol Stage ("" for unspecified).
func stageOf(s environmentpb.Stage) (dataset.Stage, error) {
	if s == environmentpb.Stage_STAGE_UNSPECIFIED {
		return "", nil
	}
	st, err := espoStageOf(s)
	if err != nil {
		return "", err
	}
	return dataset.Stage(st.String()), nil
}

// espoStageOf returns the espo stage of a protocol Stage (0 for unspecified).
func espoStageOf(s environmentpb.Stage) (espo.Stage, error) {
	switch s {
	case environmentpb.Stage_STAGE_UNSPECIFIED, environmentpb.Stage_STAGE_GUI, environmentpb.Stage_STAGE_POOL, environmentpb.Stage_STAGE_RECOMMEND:
		return espo.Stage(s), nil
	}
	return 0, fmt.Errorf("unknown stage %d", int32(s))
}

func pointOf(p *environmentpb.Point) [2]float64 { return [2]float64{p.GetX(), p.GetY()} }

func boxOf(b *environmentpb.Box) [4]float64 {
	return [4]float64{b.GetX1(), b.GetY1(), b.GetX2(), b.GetY2()}
}

// attrsOf returns a map of the wire as the Go types hold it: nil when empty.
func attrsOf(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func answerOf(m *environmentpb.Answer) dataset.Answer {
	a := dataset.Answer{Action: m.GetAction(), Point: pointOf(m.GetPoint()), InputText: m.GetInputText(), Target: m.GetTarget()}
	if m.GetBox() != nil {
		b := dataset.Box(boxOf(m.GetBox()))
		a.Box = &b
	}
	return a
}

// observationOf returns the Observation a protocol message holds; it fails only on an
// unknown stage.
func observationOf(m *environmentpb.Observation) (Observation, error) {
	st, err := stageOf(m.GetStage())
	if err != nil {
		return Observation{}, err
	}
	o := Observation{
		Channel:     m.GetChannel(),
		Instruction: m.GetInstruction(),
		Step:        int(m.GetStep()),
		Stage:       st,
		Screen:      dataset.Screen{Screenshot: m.GetScreen().GetScreenshot(), Page: m.GetScreen().GetPage()},
	}
	if es := m.GetScreen().GetElements(); len(es) > 0 {
		o.Screen.Elements = make([]dataset.Element, len(es))
		for i, e := range es {
			o.Screen.Elements[i] = dataset.Element{ID: e.GetId(), Role: e.GetRole(), Text: e.GetText(), Box: boxOf(e.GetBox()), Attrs: attrsOf(e.GetAttrs())}
		}
	}
	if hs := m.GetHistory(); len(hs) > 0 {
		o.History = make([]dataset.Answer, len(hs))
		for i, h := range hs {
			o.History[i] = answerOf(h)
		}
	}
	if c := m.GetCandidate(); c != nil {
		o.Candidate = &dataset.Item{ID: c.GetId(), Name: c.GetName(), Attrs: attrsOf(c.GetAttrs())}
	}
	return o, nil
}

// parseErrors are the errors espo.ParseAnswer returns: a parse error that comes back
// with one's message is that value, so that errors.Is finds it.
var parseErrors = []error{
	espo.ErrNoThink, espo.ErrNoAnswer, espo.ErrOutside, espo.ErrNotList, espo.ErrActionCount,
	espo.ErrNotDict, espo.ErrKey, espo.ErrUnknownKey, espo.ErrDuplicateKey, espo.ErrColon,
	espo.ErrComma, espo.ErrString, espo.ErrUnterminated, espo.ErrPoint, espo.ErrMissingAction,
	espo.ErrMissingPoint, espo.ErrMissingText, espo.ErrEmptyAction,
}

// parseErrOf returns the parse error of a message: nil for "", the espo value with
// that message, else a new error with it.
func parseErrOf(msg string) error {
	if msg == "" {
		return nil
	}
	for _, e := range parseErrors {
		if e.Error() == msg {
			return e
		}
	}
	return errors.New(msg)
}

// stepResultOf returns the StepResult a protocol message holds; it fails only on an
// unknown stage.
func stepResultOf(m *environmentpb.StepResult) (StepResult, error) {
	gm := m.GetGroundTruth()
	st, err := espoStageOf(gm.GetStage())
	if err != nil {
		return StepResult{}, err
	}
	sm := m.GetSlots()
	return StepResult{
		Done:      m.GetDone(),
		Reference: answerOf(m.GetReference()),
		GroundTruth: espo.GroundTruth{
			Stage:       st,
			Action:      espo.Action{Type: gm.GetAction().GetType(), Point: pointOf(gm.GetAction().GetPoint()), Text: gm.GetAction().GetText()},
			Box:         boxOf(gm.GetBox()),
			Screen:      [2]float64{gm.GetScreenWidth(), gm.GetScreenHeight()},
			Intent:      gm.GetIntent(),
			Preferences: attrsOf(gm.GetPreferences()),
		},
		ParseErr: parseErrOf(m.GetParseError()),
		Judged:   m.GetJudged(),
		Right:    m.GetRight(),
		Slots: espo.SlotMatch{True: int(sm.GetTrueSlots()), Found: int(sm.GetFound()), Conflicting: int(sm.GetConflicting()),
			Right: sm.GetRight(), F1: sm.GetF1()},
		Want: m.GetWant(),
	}, nil
}
