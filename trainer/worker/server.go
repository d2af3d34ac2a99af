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
	"io"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// NewServer returns the worker protocol served by p. See Policy for the locking
// it provides and docs/worker-protocol.md for each call's contract.
func NewServer(p Policy) workerpb.WorkerServer {
	return &server{p: p}
}

type server struct {
	workerpb.UnimplementedWorkerServer
	p Policy
	// mu is held shared by the calls that only read the state and exclusively by
	// those that change it.
	mu         sync.RWMutex
	configured bool
}

// read runs fn under the shared lock once the policy is configured.
func (s *server) read(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.configured {
		return status.Error(codes.FailedPrecondition, ErrNotConfigured.Error())
	}
	return statusOf(fn())
}

// write runs fn under the exclusive lock once the policy is configured.
func (s *server) write(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.configured {
		return status.Error(codes.FailedPrecondition, ErrNotConfigured.Error())
	}
	return statusOf(fn())
}

// statusOf maps a policy error to a gRPC status: InvalidArgument for ErrInvalid,
// Internal for the rest.
func statusOf(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case status.Code(err) != codes.Unknown:
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}

func (s *server) info() *workerpb.InfoResponse {
	d := s.p.Describe()
	return &workerpb.InfoResponse{Model: d.Model, Device: d.Device, Parameters: d.Parameters,
		ReducesGradients: d.ReducesGradients, Steps: d.Steps}
}

// Configure initialises the policy from the seed and options, then loads
// load_path when it is set.
func (s *server) Configure(_ context.Context, req *workerpb.ConfigureRequest) (*workerpb.ConfigureResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configured = false
	if err := s.p.Configure(req.GetSeed(), req.GetOptions()); err != nil {
		return nil, statusOf(err)
	}
	if path := req.GetLoadPath(); path != "" {
		if err := s.load(path); err != nil {
			return nil, err
		}
	}
	s.configured = true
	return &workerpb.ConfigureResponse{Info: s.info()}, nil
}

// Info describes the policy; it answers before Configure too.
func (s *server) Info(context.Context, *workerpb.InfoRequest) (*workerpb.InfoResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.info(), nil
}

// Health answers serving = true while the server runs.
func (s *server) Health(context.Context, *workerpb.HealthRequest) (*workerpb.HealthResponse, error) {
	return &workerpb.HealthResponse{Serving: true}, nil
}

// Generate checks the options (samples 0 means 1, temperature 0 means 1) and
// samples.
func (s *server) Generate(_ context.Context, req *workerpb.GenerateRequest) (*workerpb.GenerateResponse, error) {
	o := SampleOptions{Samples: int(req.GetSamples()), Temperature: req.GetTemperature(), Greedy: req.GetGreedy(),
		Seed: req.GetSeed(), MaxTokens: int(req.GetMaxTokens())}
	switch {
	case o.Samples < 0 || o.MaxTokens < 0:
		return nil, invalid("generate: samples %d and max_tokens %d must not be negative", o.Samples, o.MaxTokens)
	case o.Temperature < 0:
		return nil, invalid("generate: temperature %v must not be negative", o.Temperature)
	}
	if o.Samples == 0 {
		o.Samples = 1
	}
	if o.Temperature == 0 {
		o.Temperature = 1
	}
	var resp workerpb.GenerateResponse
	err := s.read(func() (err error) {
		resp.Candidates, err = s.p.Generate(req.GetPrompts(), o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// LogProbs scores the answers, under the current policy unless reference_only.
func (s *server) LogProbs(_ context.Context, req *workerpb.LogProbsRequest) (*workerpb.LogProbsResponse, error) {
	o := ScoreOptions{Reference: req.GetReference(), ReferenceOnly: req.GetReferenceOnly()}
	var resp workerpb.LogProbsResponse
	err := s.read(func() (err error) {
		resp.Items, err = s.p.LogProbs(req.GetItems(), o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Backward accumulates the gradient.
func (s *server) Backward(_ context.Context, req *workerpb.BackwardRequest) (*workerpb.BackwardResponse, error) {
	var resp workerpb.BackwardResponse
	err := s.write(func() (err error) {
		resp.Objective, resp.Tokens, err = s.p.Backward(req.GetItems())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Gradients returns the accumulated gradient.
func (s *server) Gradients(context.Context, *workerpb.GradientsRequest) (*workerpb.GradientsResponse, error) {
	var resp workerpb.GradientsResponse
	err := s.read(func() error {
		resp.Gradient = s.p.Gradient()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Step fills in the default coefficients and takes the step.
func (s *server) Step(_ context.Context, req *workerpb.StepRequest) (*workerpb.StepResponse, error) {
	o, err := stepOptions(req)
	if err != nil {
		return nil, err
	}
	var resp workerpb.StepResponse
	err = s.write(func() (err error) {
		resp.GradNorm, err = s.p.Step(o)
		resp.Steps = s.p.Describe().Steps
		return err
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// stepOptions reads a StepRequest: beta1, beta2 and epsilon of 0 take the
// defaults; every value must be finite, the betas in [0, 1), the others >= 0.
func stepOptions(req *workerpb.StepRequest) (StepOptions, error) {
	o := StepOptions{LearningRate: req.GetLearningRate(), WeightDecay: req.GetWeightDecay(),
		Beta1: req.GetBeta1(), Beta2: req.GetBeta2(), Epsilon: req.GetEpsilon(),
		MaxGradNorm: req.GetMaxGradNorm(), Gradient: req.GetGradient()}
	if o.Beta1 == 0 {
		o.Beta1 = DefaultBeta1
	}
	if o.Beta2 == 0 {
		o.Beta2 = DefaultBeta2
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultEpsilon
	}
	for _, v := range []float64{o.LearningRate, o.WeightDecay, o.Epsilon, o.MaxGradNorm} {
		if !(v >= 0 && v < 1e300) {
			return o, invalid("step: learning_rate, weight_decay, epsilon and max_grad_norm must be finite and >= 0")
		}
	}
	if !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1) {
		return o, invalid("step: beta1 %v and beta2 %v must lie in [0, 1)", o.Beta1, o.Beta2)
	}
	return o, nil
}

// SnapshotReference freezes the current weights as the reference.
func (s *server) SnapshotReference(context.Context, *workerpb.SnapshotReferenceRequest) (*workerpb.SnapshotReferenceResponse, error) {
	if err := s.write(s.p.SnapshotReference); err != nil {
		return nil, err
	}
	return &workerpb.SnapshotReferenceResponse{}, nil
}

// Save writes the state to path atomically: to a temporary file in the same
// folder, synced, then renamed over path.
func (s *server) Save(_ context.Context, req *workerpb.SaveRequest) (*workerpb.SaveResponse, error) {
	path := req.GetPath()
	if path == "" {
		return nil, invalid("save: empty path")
	}
	var n int64
	err := s.read(func() (err error) {
		n, err = writeAtomic(path, s.p.Save)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &workerpb.SaveResponse{Path: path, Bytes: n}, nil
}

// Load restores a state written by Save; it also configures a fresh server.
func (s *server) Load(_ context.Context, req *workerpb.LoadRequest) (*workerpb.LoadResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(req.GetPath()); err != nil {
		return nil, err
	}
	s.configured = true
	return &workerpb.LoadResponse{Steps: s.p.Describe().Steps}, nil
}

// load reads the state at path into the policy; the caller holds mu.
// Release answers at once: what a release means to a worker process (stop now when
// asked to stop) is its Activity's business; an in-process worker has none.
func (s *server) Release(context.Context, *workerpb.ReleaseRequest) (*workerpb.ReleaseResponse, error) {
	return &workerpb.ReleaseResponse{}, nil
}

func (s *server) load(path string) error {
	if path == "" {
		return invalid("load: empty path")
	}
	f, err := os.Open(path)
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	defer f.Close()
	if err := s.p.Load(f); err != nil {
		return status.Error(codes.DataLoss, fmt.Sprintf("load %s: %v", path, err))
	}
	return nil
}

// writeAtomic writes a file with write, through a temporary file renamed into
// place, and returns its size.
func writeAtomic(path string, write func(w io.Writer) error) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	cw := &countingWriter{w: f}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
