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
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// MaxMessageBytes bounds a gRPC message of the worker protocol both ways: a
// GradientsResponse or StepRequest carries 4 bytes per parameter, beyond gRPC's
// default limit of 4 MiB for a policy of a million parameters.
const MaxMessageBytes = 1 << 30

// LocalClient returns a client that calls the server of p directly, in process:
// the same contracts and errors as a remote worker (NewServer does the work),
// without serialisation. Requests are read, not copied, during the call and must
// not change until it returns; responses belong to the caller. Call options are
// ignored.
func LocalClient(p Policy) workerpb.WorkerClient {
	return localClient{s: NewServer(p)}
}

type localClient struct{ s workerpb.WorkerServer }

func (c localClient) Configure(ctx context.Context, in *workerpb.ConfigureRequest, _ ...grpc.CallOption) (*workerpb.ConfigureResponse, error) {
	return c.s.Configure(ctx, in)
}

func (c localClient) Info(ctx context.Context, in *workerpb.InfoRequest, _ ...grpc.CallOption) (*workerpb.InfoResponse, error) {
	return c.s.Info(ctx, in)
}

func (c localClient) Health(ctx context.Context, in *workerpb.HealthRequest, _ ...grpc.CallOption) (*workerpb.HealthResponse, error) {
	return c.s.Health(ctx, in)
}

func (c localClient) Generate(ctx context.Context, in *workerpb.GenerateRequest, _ ...grpc.CallOption) (*workerpb.GenerateResponse, error) {
	return c.s.Generate(ctx, in)
}

func (c localClient) LogProbs(ctx context.Context, in *workerpb.LogProbsRequest, _ ...grpc.CallOption) (*workerpb.LogProbsResponse, error) {
	return c.s.LogProbs(ctx, in)
}

func (c localClient) Backward(ctx context.Context, in *workerpb.BackwardRequest, _ ...grpc.CallOption) (*workerpb.BackwardResponse, error) {
	return c.s.Backward(ctx, in)
}

func (c localClient) Gradients(ctx context.Context, in *workerpb.GradientsRequest, _ ...grpc.CallOption) (*workerpb.GradientsResponse, error) {
	return c.s.Gradients(ctx, in)
}

func (c localClient) Step(ctx context.Context, in *workerpb.StepRequest, _ ...grpc.CallOption) (*workerpb.StepResponse, error) {
	return c.s.Step(ctx, in)
}

func (c localClient) SnapshotReference(ctx context.Context, in *workerpb.SnapshotReferenceRequest, _ ...grpc.CallOption) (*workerpb.SnapshotReferenceResponse, error) {
	return c.s.SnapshotReference(ctx, in)
}

func (c localClient) Save(ctx context.Context, in *workerpb.SaveRequest, _ ...grpc.CallOption) (*workerpb.SaveResponse, error) {
	return c.s.Save(ctx, in)
}

func (c localClient) Load(ctx context.Context, in *workerpb.LoadRequest, _ ...grpc.CallOption) (*workerpb.LoadResponse, error) {
	return c.s.Load(ctx, in)
}

func (c localClient) Release(ctx context.Context, in *workerpb.ReleaseRequest, _ ...grpc.CallOption) (*workerpb.ReleaseResponse, error) {
	return c.s.Release(ctx, in)
}

// Dial returns a client of the worker at addr (host:port, or any gRPC target),
// over an insecure connection with MaxMessageBytes both ways, and the Closer of
// its connection. The connection is made lazily, on the first call.
func Dial(addr string) (workerpb.WorkerClient, io.Closer, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)))
	if err != nil {
		return nil, nil, err
	}
	return workerpb.NewWorkerClient(conn), conn, nil
}

// NewGRPCServer returns a gRPC server that serves p with the worker protocol and
// the standard gRPC health service (grpc.health.v1, reporting SERVING for "" and
// for "espo.worker.v1.Worker"), accepting messages of up to MaxMessageBytes, and
// recording its calls in a when a is not nil. The caller registers nothing else and
// calls Serve.
func NewGRPCServer(p Policy, a *Activity) *grpc.Server {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes)}
	if a != nil {
		opts = append(opts, grpc.UnaryInterceptor(a.UnaryInterceptor()))
	}
	gs := grpc.NewServer(opts...)
	workerpb.RegisterWorkerServer(gs, NewServer(p))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(workerpb.Worker_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	return gs
}
