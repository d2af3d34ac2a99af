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
	"fmt"
	"net"
	"path"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// MaxMessageBytes bounds a gRPC message of the worker protocol both ways: a
// GradientsResponse or StepRequest carries 4 bytes per parameter, beyond gRPC's
// default limit of 4 MiB for a policy of a million parameters.
const MaxMessageBytes = 1 << 30

// MaxStateBytes bounds a state sent inline (Setup.State, ConfigureRequest.state):
// MaxMessageBytes less 1 MiB for the rest of the request.
const MaxStateBytes = MaxMessageBytes - 1<<20

// DialFunc connects to a "host:port" address; the local mode's is
// podnet.Network.DialContext over "tcp", which resolves pod names itself.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// Remote is a Member that calls a worker over gRPC with the worker protocol.
type Remote struct {
	addr   string
	conn   *grpc.ClientConn
	client workerpb.WorkerClient
	// callTimeout bounds every call (SetCallTimeout); 0 leaves them unbounded.
	callTimeout time.Duration
	// weightSync is the time, in nanoseconds, the worker's Generate calls said they
	// spent copying weights into its sampling engine (WeightSyncTime).
	weightSync atomic.Int64
}

// Dial returns the worker at addr (host:port, or any gRPC target) as a Member, over
// a plaintext connection with MaxMessageBytes both ways, sending token (the job's
// worker token, ReadTokenFile) with every call; an empty token sends none, for a
// worker started with --insecure-no-auth. The connection is made lazily, on the
// first call; Close closes it. A non-nil dial makes every connection, given addr as
// it is (gRPC's name resolution is skipped); nil resolves and dials as gRPC does.
func Dial(addr string, dial DialFunc, token string) (*Remote, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)),
	}
	if token != "" {
		if err := checkToken(token); err != nil {
			return nil, fmt.Errorf("worker token: %w", err)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	r := &Remote{addr: addr}
	opts = append(opts, grpc.WithChainUnaryInterceptor(readRefusal, r.boundCall))
	target := addr
	if dial != nil {
		target = "passthrough:///" + addr
		opts = append(opts, grpc.WithContextDialer(dial))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	r.conn, r.client = conn, workerpb.NewWorkerClient(conn)
	return r, nil
}

// SetCallTimeout bounds every later call to the worker but Configure and Info by d
// (0: unbounded): a call that has not returned by then fails with a
// *CallTimeoutError. Configure waits for a worker that is still starting, in a pod of
// its own, and loads its model: the trainer bounds that wait itself (and reports it),
// and Info is its probe. Set it before the first call.
func (r *Remote) SetCallTimeout(d time.Duration) { r.callTimeout = d }

// CallTimeoutError is the error of a call to a worker that did not return within the
// call timeout: a hung worker (a collective that never completes, a stuck device or
// a wedged process). It wraps the gRPC DeadlineExceeded error.
type CallTimeoutError struct {
	Addr    string        // the worker's address
	Call    string        // the protocol method: Generate, Backward, ...
	Timeout time.Duration // how long the trainer waited
	Err     error
}

func (e *CallTimeoutError) Error() string {
	return fmt.Sprintf("worker %s: %s did not return within %s (half of spec.runPolicy.progressDeadlineSeconds): the worker "+
		"is hung or far slower than the deadline allows", e.Addr, e.Call, e.Timeout)
}

func (e *CallTimeoutError) Unwrap() error { return e.Err }

// boundCall is the client interceptor that puts the call timeout on each call and
// names a call that ran out of it.
func (r *Remote) boundCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if r.callTimeout <= 0 || method == workerpb.Worker_Configure_FullMethodName || method == workerpb.Worker_Info_FullMethodName {
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	deadline := time.Now().Add(r.callTimeout)
	if d, ok := ctx.Deadline(); ok && !d.After(deadline) {
		return invoke(ctx, method, req, reply, cc, opts...) // the caller's own deadline comes first
	}
	bounded, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := invoke(bounded, method, req, reply, cc, opts...)
	// The worker, sent the deadline, may end the call a moment before the timer here.
	if status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
		return &CallTimeoutError{Addr: r.addr, Call: path.Base(method), Timeout: r.callTimeout, Err: err}
	}
	return err
}

// Client returns the protocol client the member calls, for tests that drive a
// worker call by call.
func (r *Remote) Client() workerpb.WorkerClient { return r.client }

// Close closes the connection.
func (r *Remote) Close() error { return r.conn.Close() }

// String names the member in errors: its address.
func (r *Remote) String() string { return r.addr }

// Configure waits until the worker is reachable (grpc.WaitForReady): remote workers
// start with the trainer, in pods of their own, and may come up after it. A Setup
// with both LoadPath and State, or a State over MaxStateBytes, is an error wrapping
// ErrInvalid, and nothing is sent. A worker's refusal of an incomplete model folder
// is a *ModelIncompleteError, a permanent refusal with a reason (of this call or
// any other) a *RefusalError.
func (r *Remote) Configure(ctx context.Context, s Setup) (Description, error) {
	if err := checkSetup(s); err != nil {
		return Description{}, err
	}
	resp, err := r.client.Configure(ctx, &workerpb.ConfigureRequest{Seed: s.Seed, Options: s.Options,
		LoadPath: s.LoadPath, State: s.State}, grpc.WaitForReady(true))
	if err != nil {
		return Description{}, configureErrorOf(err)
	}
	return descriptionOf(resp.GetInfo()), nil
}

// describe returns the worker's Info, waiting until it is reachable as Configure
// does; a worker answers Info before Configure too.
func (r *Remote) describe(ctx context.Context) (Description, error) {
	resp, err := r.client.Info(ctx, &workerpb.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return Description{}, err
	}
	return descriptionOf(resp), nil
}

// inTrainerPod reports whether the worker's address is a loopback one (localhost,
// 127.0.0.0/8, ::1): the worker runs in the trainer's own pod.
func (r *Remote) inTrainerPod() bool {
	host, _, err := net.SplitHostPort(r.addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (r *Remote) Generate(ctx context.Context, prompts []Prompt, o SampleOptions) ([][]Sample, error) {
	resp, err := r.client.Generate(ctx, generateRequest(prompts, o))
	if err != nil {
		return nil, err
	}
	r.weightSync.Add(int64(resp.GetWeightSyncSeconds() * float64(time.Second)))
	return samplesOf(resp.GetCandidates()), nil
}

// WeightSyncTime returns the time the worker's Generate calls have spent so far
// copying the policy's updated weights into its sampling engine, as the worker
// reports it (GenerateResponse.weight_sync_seconds).
func (r *Remote) WeightSyncTime() time.Duration { return time.Duration(r.weightSync.Load()) }

func (r *Remote) LogProbs(ctx context.Context, items []Scored, o ScoreOptions) ([]TokenLogProbs, error) {
	resp, err := r.client.LogProbs(ctx, &workerpb.LogProbsRequest{Items: scoredMsgs(items),
		Reference: o.Reference, ReferenceOnly: o.ReferenceOnly})
	if err != nil {
		return nil, err
	}
	return tokenLogProbsOf(resp.GetItems()), nil
}

func (r *Remote) Backward(ctx context.Context, items []Weighted) (Backwarded, error) {
	resp, err := r.client.Backward(ctx, &workerpb.BackwardRequest{Items: weightedMsgs(items)})
	return Backwarded{Objective: resp.GetObjective(), Tokens: resp.GetTokens()}, err
}

func (r *Remote) Gradient(ctx context.Context) ([]float32, error) {
	resp, err := r.client.Gradients(ctx, &workerpb.GradientsRequest{})
	return resp.GetGradient(), err
}

func (r *Remote) Step(ctx context.Context, o StepOptions) (float64, error) {
	resp, err := r.client.Step(ctx, stepRequest(o))
	return resp.GetGradNorm(), err
}

func (r *Remote) SnapshotReference(ctx context.Context) error {
	_, err := r.client.SnapshotReference(ctx, &workerpb.SnapshotReferenceRequest{})
	return err
}

func (r *Remote) Save(ctx context.Context, path string) error {
	_, err := r.client.Save(ctx, &workerpb.SaveRequest{Path: path})
	return err
}

// Export asks the worker to write its policy to the folder path (ExportRequest). A
// worker that does not implement Export fails with ErrNoExport.
func (r *Remote) Export(ctx context.Context, path string, merge bool) (Exported, error) {
	resp, err := r.client.Export(ctx, &workerpb.ExportRequest{Path: path, Merge: merge})
	if status.Code(err) == codes.Unimplemented {
		return Exported{}, fmt.Errorf("%w: it does not implement the worker protocol's Export call (%v)", ErrNoExport, err)
	}
	if err != nil {
		return Exported{}, err
	}
	return Exported{Path: resp.GetPath(), Kind: resp.GetKind(), Merged: resp.GetMerged(), Step: resp.GetStep(),
		Files: resp.GetFiles()}, nil
}

// Embed asks the worker for the embeddings of texts (EmbedRequest, at most 2048
// texts). A worker that does not implement Embed fails with ErrNoEncoder, as does
// one that has no encoder loaded (FAILED_PRECONDITION, its message kept).
func (r *Remote) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	resp, err := r.client.Embed(ctx, &workerpb.EmbedRequest{Texts: texts})
	switch status.Code(err) {
	case codes.OK:
	case codes.Unimplemented:
		return nil, fmt.Errorf("%w: it does not implement the worker protocol's Embed call (%v)", ErrNoEncoder, err)
	case codes.FailedPrecondition:
		return nil, fmt.Errorf("%w: %s", ErrNoEncoder, status.Convert(err).Message())
	default:
		return nil, err
	}
	vecs := resp.GetEmbeddings()
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embed: %d vectors for %d texts", len(vecs), len(texts))
	}
	out := make([][]float64, len(vecs))
	for i, v := range vecs {
		out[i] = make([]float64, len(v.GetValues()))
		for j, x := range v.GetValues() {
			out[i][j] = float64(x)
		}
	}
	return out, nil
}

func (r *Remote) Release(ctx context.Context) error {
	_, err := r.client.Release(ctx, &workerpb.ReleaseRequest{})
	return err
}
