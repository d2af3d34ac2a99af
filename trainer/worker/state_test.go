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

package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/cpu"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// otherPod is the address of a worker in another pod than the trainer's, as the run
// config lists it.
const otherPod = "espo-trainer-1.espo.ns.svc:50051"

// to is a dial function that connects every address to addr.
func to(addr string) worker.DialFunc {
	return func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// inAnotherPod starts a real gRPC worker of p that may save and load under allowed
// only, and returns it as a Remote member dialed by otherPod.
func inAnotherPod(t testing.TB, p worker.Policy, allowed string) *worker.Remote {
	t.Helper()
	return dial(t, otherPod, to(listenPolicy(t, p, worker.ServerOptions{Token: workertest.Token, Allowed: []string{allowed}})))
}

// checkpoint trains a CPU policy of options one step, saves its state in a new
// folder, as the trainer's member 0 does, and returns the file's path.
func checkpoint(t testing.TB, options map[string]string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	m := worker.NewLocal(cpu.New(2), dir)
	if _, err := m.Configure(ctx, worker.Setup{Seed: 4, Options: options}); err != nil {
		t.Fatal(err)
	}
	ep := &generated(t, 1)[0]
	var items []worker.Weighted
	for j := range ep.Steps {
		items = append(items, worker.Weighted{Prompt: worker.NewPrompt(ep, j), Answer: demonstrated(ep, j), SequenceWeight: 0.5})
	}
	if _, err := m.Backward(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(ctx, worker.StepOptions{LearningRate: 0.05}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "step-000000000001", "worker.state")
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(ctx, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// afterResume drives a resumed member through an RL step and a greedy Generate and
// returns what each call returned, printed, in order.
func afterResume(t *testing.T, m worker.Member) []string {
	t.Helper()
	r := &recorder{t: t}
	ep := &generated(t, 2)[1]
	ps := prompts(ep)
	r.rlStep(m, ep, ps)
	r.must(m.Generate(context.Background(), ps, worker.SampleOptions{Greedy: true}))
	return r.out
}

// TestAWorkerInAnotherPodResumesFromTheStateInline: a gang of an in-process member,
// which reads the checkpoint, and a remote worker in another pod, whose allowed
// folders exclude the checkpoint folder, resumes from the checkpoint: the remote
// worker gets the state inline, and then answers, and trains, exactly as the member
// that loaded the file.
func TestAWorkerInAnotherPodResumesFromTheStateInline(t *testing.T) {
	ctx := context.Background()
	path := checkpoint(t, smallModel)
	remote := inAnotherPod(t, cpu.New(2), t.TempDir())
	if _, err := remote.Configure(ctx, worker.Setup{Seed: 5, LoadPath: path}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("the worker in another pod loading the checkpoint by its path: %v, want PermissionDenied", err)
	}
	fromFile := worker.NewLocal(cpu.New(2), filepath.Dir(filepath.Dir(path)))
	d, err := worker.NewGang(fromFile, remote).Configure(ctx, worker.Setup{Seed: 5, LoadPath: path})
	if err != nil || d.Steps != 1 {
		t.Fatalf("resuming the gang: %+v, %v; want the checkpoint's 1 step", d, err)
	}
	want, got := afterResume(t, fromFile), afterResume(t, remote)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d of the worker in another pod differs from the member that loaded the file", i)
		}
	}
}

// groupRank is a policy that reports reduces_gradients, as a rank of a PyTorch
// worker's group does.
type groupRank struct{ worker.Policy }

func (g groupRank) Describe() worker.Description {
	d := g.Policy.Describe()
	d.ReducesGradients = true
	return d
}

// TestGangSendsThePathToWorkersThatReadIt: a worker in the trainer's pod (localhost)
// and a rank of a group whose rank 0 reads the path get the path, not the state:
// workers that may not read the checkpoint folder refuse it.
func TestGangSendsThePathToWorkersThatReadIt(t *testing.T) {
	path := checkpoint(t, smallModel)
	for name, m := range map[string]*worker.Remote{
		"in the trainer's pod": dial(t, "localhost:50051", to(listen(t, t.TempDir()))),
		"a rank of a group":    inAnotherPod(t, groupRank{cpu.New(2)}, t.TempDir()),
	} {
		_, err := worker.NewGang(m).Configure(context.Background(), worker.Setup{Seed: 4, LoadPath: path})
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want the path sent (and refused)", name, err)
		}
	}
}

// TestAStateOverTheInlineLimitIsRefused: a checkpoint larger than MaxStateBytes (a
// sparse file) is refused, naming its size and the limit, before any member is
// configured; so is such a state given to a member directly, and nothing is sent.
func TestAStateOverTheInlineLimitIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.state")
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(f.Truncate(worker.MaxStateBytes+1), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	fromFile := worker.NewLocal(cpu.New(1), dir)
	remote := inAnotherPod(t, cpu.New(1), t.TempDir())
	_, err = worker.NewGang(fromFile, remote).Configure(ctx, worker.Setup{Seed: 4, LoadPath: path})
	checkOversize(t, "the gang", err)
	if _, err := fromFile.Gradient(ctx); !errors.Is(err, worker.ErrNotConfigured) {
		t.Errorf("a member was configured before the state was refused: %v", err)
	}
	big := make([]byte, worker.MaxStateBytes+1) // never written: the pages stay unmapped
	for name, m := range map[string]worker.Member{"in process": worker.NewLocal(cpu.New(1)), "remote": remote} {
		_, err := m.Configure(ctx, worker.Setup{Seed: 4, State: big})
		checkOversize(t, name, err)
	}
}

// TestAShardedStateFolderIsNeverSentInline: a member in another pod that would get
// the state inline cannot get a sharded gang's folder of shards; the gang says why
// before any member is configured.
func TestAShardedStateFolderIsNeverSentInline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.state")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	remote := inAnotherPod(t, cpu.New(1), t.TempDir())
	_, err := worker.NewGang(worker.NewLocal(cpu.New(1), dir), remote).Configure(ctx, worker.Setup{Seed: 4, LoadPath: path})
	if err == nil || !strings.Contains(err.Error(), "folder of shards") {
		t.Errorf("Configure from a sharded state folder with a member in another pod: %v, want a refusal naming the folder of shards", err)
	}
}

// checkOversize fails the test unless err refuses a state of MaxStateBytes+1 bytes,
// naming its size and the limit.
func checkOversize(t *testing.T, who string, err error) {
	t.Helper()
	size, limit := fmt.Sprintf("%d bytes", worker.MaxStateBytes+1), fmt.Sprintf("%d bytes", worker.MaxStateBytes)
	if !errors.Is(err, worker.ErrInvalid) || !strings.Contains(err.Error(), size) || !strings.Contains(err.Error(), limit) {
		t.Errorf("%s with a state of %s: %v, want ErrInvalid naming the size and the limit %s", who, size, err, limit)
	}
}

// oldWorker is a worker that predates ConfigureRequest.state: it drops the field.
type oldWorker struct{ workerpb.WorkerServer }

func (o oldWorker) Configure(ctx context.Context, req *workerpb.ConfigureRequest) (*workerpb.ConfigureResponse, error) {
	req.State = nil
	return o.WorkerServer.Configure(ctx, req)
}

// TestGangRefusesAWorkerThatIgnoresTheState: a worker in another pod that ignores the
// inline state starts fresh; the gang says so instead of training from two states.
func TestGangRefusesAWorkerThatIgnoresTheState(t *testing.T) {
	path := checkpoint(t, smallModel)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	workerpb.RegisterWorkerServer(gs, oldWorker{worker.NewServer(cpu.New(1))})
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	old, err := worker.Dial(otherPod, to(lis.Addr().String()), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	gang := worker.NewGang(worker.NewLocal(cpu.New(1), filepath.Dir(path)), old)
	_, err = gang.Configure(context.Background(), worker.Setup{Seed: 4, LoadPath: path})
	if err == nil || !strings.HasPrefix(err.Error(), "worker 1 ("+otherPod+")") || !strings.Contains(err.Error(), "ConfigureRequest.state") {
		t.Errorf("error %v, want one naming worker 1 and the state it ignored", err)
	}
}

// TestServerLoadsAnInlineState: the Go server passes the inline-state checks every
// worker must pass.
func TestServerLoadsAnInlineState(t *testing.T) {
	dir := t.TempDir()
	workertest.CheckInlineState(t, serve(t, dir).Client(), dir, smallModel)
}

// BenchmarkResumeAWorkerInAnotherPod configures a gang of one remote worker from a
// checkpoint of the CPU policy with its defaults (hash_bits 15, hidden 32, as a job's
// spec.model.cpu defaults to) over loopback: "inline" reads the file and sends it (a
// worker in another pod), "path" sends the path (a worker in the trainer's pod).
// state-bytes is the size of the state.
func BenchmarkResumeAWorkerInAnotherPod(b *testing.B) {
	path := checkpoint(b, nil)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for name, m := range map[string]*worker.Remote{
		"inline": inAnotherPod(b, cpu.New(2), b.TempDir()),
		"path":   dial(b, "localhost:50051", to(listen(b, filepath.Dir(path)))),
	} {
		b.Run(name, func(b *testing.B) {
			gang := worker.NewGang(m)
			b.SetBytes(fi.Size())
			for b.Loop() {
				if _, err := gang.Configure(context.Background(), worker.Setup{Seed: 4, LoadPath: path}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(fi.Size()), "state-bytes")
		})
	}
}
