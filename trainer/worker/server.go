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

package worker

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// ServerOptions are how NewGRPCServer guards a worker.
type ServerOptions struct {
	// Token is the job's worker token (ReadTokenFile): every call but those of the
	// health service must carry the metadata "authorization: Bearer <Token>", or is
	// refused with codes.Unauthenticated. Required unless NoAuth.
	Token string
	// NoAuth serves every call without a token: for a worker run by hand (espo worker
	// --insecure-no-auth), never in a job.
	NoAuth bool
	// Allowed are the folders Save and Load may touch (see NewServer); none refuses
	// every Save and Load.
	Allowed []string
	// Activity, when not nil, records the calls that passed authentication.
	Activity *Activity
}

// NewGRPCServer returns a gRPC server that serves p with the worker protocol and
// the standard gRPC health service (grpc.health.v1, reporting SERVING for "" and
// for "espo.worker.v1.Worker"), accepting messages of up to MaxMessageBytes. Every
// call but the health service's needs o.Token (a malformed one is an error), unless
// o.NoAuth. The caller registers nothing else and calls Serve.
func NewGRPCServer(p Policy, o ServerOptions) (*grpc.Server, error) {
	var unary []grpc.UnaryServerInterceptor
	var stream []grpc.StreamServerInterceptor
	switch {
	case o.NoAuth && o.Token != "":
		return nil, errors.New("worker server: both a token and NoAuth: choose one")
	case !o.NoAuth:
		if err := checkToken(o.Token); err != nil {
			return nil, fmt.Errorf("worker token: %w", err)
		}
		a := authenticator{want: []byte(o.Token)}
		unary, stream = append(unary, a.unary), append(stream, a.stream)
	}
	if o.Activity != nil {
		unary = append(unary, o.Activity.UnaryInterceptor())
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	workerpb.RegisterWorkerServer(gs, NewServer(p, o.Allowed...))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(workerpb.Worker_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	return gs, nil
}

// NewServer returns the worker protocol served by p, with Save and Load confined to
// the allowed folders (see Local). See Policy for the locking it provides and
// docs/worker-protocol.md for each call's contract.
func NewServer(p Policy, allowed ...string) workerpb.WorkerServer {
	return &server{g: newGuarded(p, allowed)}
}

// server adapts the messages of the protocol to a guarded policy and its errors to
// gRPC status codes.
type server struct {
	workerpb.UnimplementedWorkerServer
	g guarded
}

// statusOf maps an error of a guarded policy to a gRPC status: a *RefusalError's
// own (its reason in the details), FailedPrecondition
// for ErrNotConfigured and a *ModelIncompleteError (its message beginning with
// ModelIncompletePrefix), InvalidArgument for ErrInvalid, PermissionDenied for
// ErrPathNotAllowed, a codeError's own code, Internal for the rest.
func statusOf(err error) error {
	var ce *codeError
	var mi *ModelIncompleteError
	var re *RefusalError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return re.GRPCStatus().Err()
	case errors.As(err, &mi):
		return mi.status()
	case errors.Is(err, ErrNotConfigured):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrPathNotAllowed):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.As(err, &ce):
		return status.Error(ce.code, err.Error())
	case status.Code(err) != codes.Unknown:
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

// Configure initialises the policy from the seed and options, then loads the state
// load_path names or state holds, when either is set.
func (s *server) Configure(_ context.Context, req *workerpb.ConfigureRequest) (*workerpb.ConfigureResponse, error) {
	d, err := s.g.configure(Setup{Seed: req.GetSeed(), Options: req.GetOptions(), LoadPath: req.GetLoadPath(), State: req.GetState()})
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.ConfigureResponse{Info: infoMsg(d)}, nil
}

// Info describes the policy; it answers before Configure too.
func (s *server) Info(context.Context, *workerpb.InfoRequest) (*workerpb.InfoResponse, error) {
	return infoMsg(s.g.describe()), nil
}

// Health answers serving = true while the server runs.
func (s *server) Health(context.Context, *workerpb.HealthRequest) (*workerpb.HealthResponse, error) {
	return &workerpb.HealthResponse{Serving: true}, nil
}

// Generate samples.
func (s *server) Generate(_ context.Context, req *workerpb.GenerateRequest) (*workerpb.GenerateResponse, error) {
	cs, err := s.g.generate(req.GetPrompts(), sampleOptionsOf(req))
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.GenerateResponse{Candidates: cs}, nil
}

// LogProbs scores the answers, under the current policy unless reference_only.
func (s *server) LogProbs(_ context.Context, req *workerpb.LogProbsRequest) (*workerpb.LogProbsResponse, error) {
	items, err := s.g.logProbs(req.GetItems(), ScoreOptions{Reference: req.GetReference(), ReferenceOnly: req.GetReferenceOnly()})
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.LogProbsResponse{Items: items}, nil
}

// Backward accumulates the gradient.
func (s *server) Backward(_ context.Context, req *workerpb.BackwardRequest) (*workerpb.BackwardResponse, error) {
	objective, tokens, err := s.g.backward(req.GetItems())
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.BackwardResponse{Objective: objective, Tokens: tokens}, nil
}

// Gradients returns the accumulated gradient.
func (s *server) Gradients(context.Context, *workerpb.GradientsRequest) (*workerpb.GradientsResponse, error) {
	g, err := s.g.gradient()
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.GradientsResponse{Gradient: g}, nil
}

// Step fills in the default coefficients and takes the step.
func (s *server) Step(_ context.Context, req *workerpb.StepRequest) (*workerpb.StepResponse, error) {
	norm, steps, err := s.g.step(stepOptionsOf(req))
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.StepResponse{GradNorm: norm, Steps: steps}, nil
}

// SnapshotReference freezes the current weights as the reference.
func (s *server) SnapshotReference(context.Context, *workerpb.SnapshotReferenceRequest) (*workerpb.SnapshotReferenceResponse, error) {
	if err := s.g.snapshotReference(); err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.SnapshotReferenceResponse{}, nil
}

// Save writes the state to path atomically.
func (s *server) Save(_ context.Context, req *workerpb.SaveRequest) (*workerpb.SaveResponse, error) {
	n, err := s.g.save(req.GetPath())
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.SaveResponse{Path: req.GetPath(), Bytes: n}, nil
}

// Load restores a state written by Save; it also configures a fresh server.
func (s *server) Load(_ context.Context, req *workerpb.LoadRequest) (*workerpb.LoadResponse, error) {
	steps, err := s.g.load(req.GetPath())
	if err != nil {
		return nil, statusOf(err)
	}
	return &workerpb.LoadResponse{Steps: steps}, nil
}

// Release answers at once: what a release means to a worker process (stop now when
// asked to stop) is its Activity's business.
func (s *server) Release(context.Context, *workerpb.ReleaseRequest) (*workerpb.ReleaseResponse, error) {
	return &workerpb.ReleaseResponse{}, nil
}
