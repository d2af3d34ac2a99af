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
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/dataset"
	"github.com/espo-dev/espo-operator/trainer/environmentpb"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// MaxRolloutIDLen bounds a rollout id of the environment protocol, in bytes.
const MaxRolloutIDLen = 256

// Server serves Envs with the environment protocol (trainer/environmentpb): one Env
// per rollout id, made on the rollout's first Reset and reused by its later ones.
// Register it on a gRPC server with environmentpb.RegisterEnvironmentServer. Calls
// for different rollouts run concurrently; the calls of one rollout run one at a
// time, as an Env requires.
type Server struct {
	environmentpb.UnimplementedEnvironmentServer
	newEnv func() Env
	token  []byte

	mu       sync.Mutex
	rollouts map[string]*served
}

// served is the Env of one rollout id; mu serialises its calls.
type served struct {
	mu  sync.Mutex
	env Env
}

var _ environmentpb.EnvironmentServer = (*Server)(nil)

// NewServer returns a Server whose rollouts are Envs made by newEnv, each call checked
// for token: every call must carry the metadata "authorization: Bearer <token>" or is
// refused with codes.Unauthenticated. A nil newEnv or an empty token is an error.
func NewServer(newEnv func() Env, token string) (*Server, error) {
	switch {
	case newEnv == nil:
		return nil, errors.New("environment server: no Env constructor")
	case token == "":
		return nil, errors.New("environment server: empty token: every call is checked for the job's token")
	}
	return &Server{newEnv: newEnv, token: []byte(token), rollouts: map[string]*served{}}, nil
}

// authenticate returns nil when ctx carries the server's token (worker.CheckBearer,
// the worker protocol's check); else an Unauthenticated status that says what is
// missing, never what was sent.
func (s *Server) authenticate(ctx context.Context) error {
	return worker.CheckBearer(ctx, s.token,
		status.Errorf(codes.Unauthenticated, "environment token required: send the metadata %q: \"Bearer <the job's token>\"", worker.AuthorizationKey),
		status.Error(codes.Unauthenticated, "wrong environment token: this environment serves another job, or its token was rotated"))
}

// checkRolloutID returns an InvalidArgument status for an empty or over-long id.
func checkRolloutID(id string) error {
	switch {
	case id == "":
		return status.Error(codes.InvalidArgument, "environment: empty rollout_id: name the rollout of the group the call is for")
	case len(id) > MaxRolloutIDLen:
		return status.Errorf(codes.InvalidArgument, "environment: rollout_id of %d bytes, at most %d", len(id), MaxRolloutIDLen)
	}
	return nil
}

// admit checks a call's token, then its rollout id.
func (s *Server) admit(ctx context.Context, id string) error {
	if err := s.authenticate(ctx); err != nil {
		return err
	}
	return checkRolloutID(id)
}

// Reset starts the episode of the request's seed for its rollout, making the
// rollout's Env on its first Reset.
func (s *Server) Reset(ctx context.Context, req *environmentpb.ResetRequest) (*environmentpb.ResetResponse, error) {
	id := req.GetRolloutId()
	if err := s.admit(ctx, id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	r := s.rollouts[id]
	if r == nil {
		r = &served{}
		s.rollouts[id] = r
	}
	s.mu.Unlock()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.env == nil {
		if r.env = s.newEnv(); r.env == nil {
			return nil, status.Errorf(codes.Internal, "environment: rollout %q: the Env constructor returned nil", id)
		}
	}
	obs, err := r.env.Reset(ctx, req.GetEpisodeSeed())
	if err != nil {
		return nil, statusOf(id, "Reset", err)
	}
	m, err := observationMsg(&obs)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "environment: rollout %q: Reset: %v", id, err)
	}
	return &environmentpb.ResetResponse{Observation: m}, nil
}

// Step applies the request's answer to its rollout's episode.
func (s *Server) Step(ctx context.Context, req *environmentpb.StepRequest) (*environmentpb.StepResponse, error) {
	id := req.GetRolloutId()
	if err := s.admit(ctx, id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	r := s.rollouts[id]
	s.mu.Unlock()
	if r == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "environment: rollout %q: no Reset named this rollout id: %v", id, ErrNotReset)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.env == nil { // its first Reset found a nil constructor
		return nil, status.Errorf(codes.FailedPrecondition, "environment: rollout %q: its Reset failed: %v", id, ErrNotReset)
	}
	obs, res, err := r.env.Step(ctx, req.GetAnswer())
	if err != nil {
		return nil, statusOf(id, "Step", err)
	}
	om, err := observationMsg(&obs)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "environment: rollout %q: Step: %v", id, err)
	}
	rm, err := stepResultMsg(&res)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "environment: rollout %q: Step: %v", id, err)
	}
	return &environmentpb.StepResponse{Observation: om, Result: rm}, nil
}

// statusOf maps an error of a rollout's Env to a gRPC status: FailedPrecondition for
// ErrNotReset and ErrDone (the message ending with theirs), the context's code for a
// done context, a status error's own code (an Env that is itself remote), Internal
// for the rest.
func statusOf(id, call string, err error) error {
	msg := fmt.Sprintf("environment: rollout %q: %s: %v", id, call, err)
	switch {
	case errors.Is(err, ErrNotReset), errors.Is(err, ErrDone):
		return status.Error(codes.FailedPrecondition, msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Error(status.FromContextError(err).Code(), msg)
	case status.Code(err) != codes.Unknown:
		return status.Error(status.Code(err), msg)
	}
	return status.Error(codes.Internal, msg)
}

// stageMsg returns the protocol's Stage of a dataset stage ("" is unspecified).
func stageMsg(s dataset.Stage) (environmentpb.Stage, error) {
	if s == "" {
		return environmentpb.Stage_STAGE_UNSPECIFIED, nil
	}
	st := s.Espo()
	if st == 0 {
		return 0, fmt.Errorf("unknown stage %q", s)
	}
	return environmentpb.Stage(st), nil
}

// espoStageMsg returns the protocol's Stage of an espo stage (0 is unspecified).
func espoStageMsg(s espo.Stage) (environmentpb.Stage, error) {
	if s != 0 && (s < espo.StageGUI || s > espo.StageRecommend) {
		return 0, fmt.Errorf("unknown stage %v", s)
	}
	return environmentpb.Stage(s), nil
}

func pointMsg(p [2]float64) *environmentpb.Point {
	return &environmentpb.Point{X: p[0], Y: p[1]}
}

func boxMsg(b [4]float64) *environmentpb.Box {
	return &environmentpb.Box{X1: b[0], Y1: b[1], X2: b[2], Y2: b[3]}
}

func answerMsg(a *dataset.Answer) *environmentpb.Answer {
	m := &environmentpb.Answer{Action: a.Action, Point: pointMsg(a.Point), InputText: a.InputText, Target: a.Target}
	if a.Box != nil {
		m.Box = boxMsg(*a.Box)
	}
	return m
}

func itemMsg(it *dataset.Item) *environmentpb.Item {
	return &environmentpb.Item{Id: it.ID, Name: it.Name, Attrs: it.Attrs}
}

// observationMsg returns o as the protocol sends it; it fails only on an unknown stage.
func observationMsg(o *Observation) (*environmentpb.Observation, error) {
	st, err := stageMsg(o.Stage)
	if err != nil {
		return nil, err
	}
	m := &environmentpb.Observation{
		Channel:     o.Channel,
		Instruction: o.Instruction,
		Step:        int64(o.Step),
		Stage:       st,
		Screen:      &environmentpb.Screen{Screenshot: o.Screen.Screenshot, Page: o.Screen.Page},
	}
	for i := range o.Screen.Elements {
		e := &o.Screen.Elements[i]
		m.Screen.Elements = append(m.Screen.Elements, &environmentpb.Element{Id: e.ID, Role: e.Role, Text: e.Text, Box: boxMsg(e.Box), Attrs: e.Attrs})
	}
	for i := range o.History {
		m.History = append(m.History, answerMsg(&o.History[i]))
	}
	if o.Candidate != nil {
		m.Candidate = itemMsg(o.Candidate)
	}
	return m, nil
}

// stepResultMsg returns r as the protocol sends it; it fails only on an unknown stage.
func stepResultMsg(r *StepResult) (*environmentpb.StepResult, error) {
	st, err := espoStageMsg(r.GroundTruth.Stage)
	if err != nil {
		return nil, err
	}
	gt := &r.GroundTruth
	m := &environmentpb.StepResult{
		Done:      r.Done,
		Reference: answerMsg(&r.Reference),
		GroundTruth: &environmentpb.GroundTruth{
			Stage:        st,
			Action:       &environmentpb.Action{Type: gt.Action.Type, Point: pointMsg(gt.Action.Point), Text: gt.Action.Text},
			Box:          boxMsg(gt.Box),
			ScreenWidth:  gt.Screen[0],
			ScreenHeight: gt.Screen[1],
			Intent:       gt.Intent,
			Preferences:  gt.Preferences,
		},
		Judged: r.Judged,
		Right:  r.Right,
		Slots: &environmentpb.SlotMatch{TrueSlots: int64(r.Slots.True), Found: int64(r.Slots.Found),
			Conflicting: int64(r.Slots.Conflicting), Right: r.Slots.Right, F1: r.Slots.F1},
		Want: r.Want,
	}
	if r.ParseErr != nil {
		m.ParseError = r.ParseErr.Error()
	}
	return m, nil
}
