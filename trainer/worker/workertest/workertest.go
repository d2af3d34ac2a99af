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

// Package workertest checks a running worker server, whatever its language, against
// the security contract of the worker protocol (docs/worker-protocol.md): every
// method of the Worker service needs the job's token, and Save and Load stay in the
// worker's allowed folders; and against its contract for a state sent inline
// (CheckInlineState). The Go server's tests and the PyTorch worker's tests run the
// same checks. RendezvousPort picks the port a test's gang of PyTorch workers meets
// on.
package workertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// Tokens of two jobs: the one the worker under test serves, and another.
var (
	Token      = strings.Repeat("3f", worker.TokenLen/2)
	OtherToken = strings.Repeat("a7", worker.TokenLen/2)
)

// WriteToken writes Token to a file in a new temporary folder and returns its path.
func WriteToken(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Conn returns a plaintext connection to addr that sends no token of its own,
// closed at the test's end.
func Conn(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Methods returns the name of every method of the Worker service, unary and
// streaming, from its service descriptor, so that a method added later is checked
// too.
func Methods() []string {
	sd := workerpb.Worker_ServiceDesc
	var names []string
	for _, m := range sd.Methods {
		names = append(names, m.MethodName)
	}
	for _, s := range sd.Streams {
		names = append(names, s.StreamName)
	}
	return names
}

// Bearer is the metadata that carries token.
func Bearer(token string) metadata.MD { return metadata.Pairs("authorization", "Bearer "+token) }

// Call calls method of the Worker service on conn with req (an empty request when
// nil) and the metadata md, and returns the call's error.
func Call(ctx context.Context, conn *grpc.ClientConn, method string, req proto.Message, md metadata.MD) error {
	m := workerpb.File_worker_proto.Services().ByName("Worker").Methods().ByName(protoreflect.Name(method))
	if req == nil {
		req = dynamicpb.NewMessage(m.Input())
	}
	resp := dynamicpb.NewMessage(m.Output())
	ctx = metadata.NewOutgoingContext(ctx, md)
	full := "/" + workerpb.Worker_ServiceDesc.ServiceName + "/" + method
	if !m.IsStreamingClient() && !m.IsStreamingServer() {
		return conn.Invoke(ctx, full, req, resp)
	}
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: method, ClientStreams: m.IsStreamingClient(),
		ServerStreams: m.IsStreamingServer()}, full)
	if err == nil {
		err = cs.SendMsg(req)
	}
	if err == nil {
		err = cs.CloseSend()
	}
	if err == nil {
		err = cs.RecvMsg(resp)
	}
	return err
}

// strangers are the callers a worker must refuse: no token, another job's, and the
// right token in a form other than one "Bearer <token>".
func strangers() map[string]metadata.MD {
	return map[string]metadata.MD{
		"no token":              nil,
		"another job's token":   Bearer(OtherToken),
		"the token, not Bearer": metadata.Pairs("authorization", Token),
		"an empty Bearer":       metadata.Pairs("authorization", "Bearer "),
		"two tokens":            metadata.Pairs("authorization", "Bearer "+OtherToken, "authorization", "Bearer "+Token),
		"a prefix of the token": Bearer(Token[:worker.TokenLen-1]),
	}
}

// CheckTokenRequired checks the worker at conn, which serves Token, saves under
// allowed and is not configured yet: every stranger is refused with Unauthenticated
// on every method of the Worker service, by an error that quotes no token, and
// nothing it asked for happens (its Configure with options configures nothing, its
// Save writes nothing); the health service answers without a token; with Token every
// method is served (answers anything but Unauthenticated).
func CheckTokenRequired(t *testing.T, conn *grpc.ClientConn, allowed string, options map[string]string) {
	t.Helper()
	ctx := context.Background()
	written := filepath.Join(allowed, "written-by-a-stranger")
	reqs := map[string]proto.Message{
		"Configure": &workerpb.ConfigureRequest{Seed: 1, Options: options},
		"Save":      &workerpb.SaveRequest{Path: written},
		"Load":      &workerpb.LoadRequest{Path: filepath.Join(allowed, "missing")},
		"Step":      &workerpb.StepRequest{LearningRate: 1},
	}
	methods := Methods()
	if len(methods) < 12 {
		t.Fatalf("the Worker service has %d methods, want its 12 or more", len(methods))
	}
	for name, md := range strangers() {
		for _, method := range methods {
			err := Call(ctx, conn, method, reqs[method], md)
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s: %s answered %v, want Unauthenticated", name, method, err)
			}
			if err != nil && (strings.Contains(err.Error(), Token) || strings.Contains(err.Error(), OtherToken)) {
				t.Errorf("%s: %s: the error quotes a token: %v", name, method, err)
			}
		}
	}
	if _, err := os.Stat(written); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stranger's Save wrote its file: %v", err)
	}
	if err := Call(ctx, conn, "Generate", nil, Bearer(Token)); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("after a stranger's Configure, Generate answered %v, want FailedPrecondition (not configured)", err)
	}
	if resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil ||
		resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health check without a token: %v %v, want SERVING", resp, err)
	}
	for _, method := range methods {
		if err := Call(ctx, conn, method, reqs[method], Bearer(Token)); status.Code(err) == codes.Unauthenticated {
			t.Errorf("with the token: %s answered %v", method, err)
		}
	}
	if _, err := os.Stat(written); err != nil {
		t.Errorf("Save with the token: %v", err)
	}
}

// Layout is a folder a worker may save to and load from, and one it may not, with a
// state file outside and, inside the allowed folder, a link to the outside folder, a
// link to the outside state and a dangling link.
type Layout struct {
	Allowed, Outside string
	outsideState     []byte
}

// NewLayout makes a Layout in temporary folders.
func NewLayout(t testing.TB) Layout {
	t.Helper()
	l := Layout{Allowed: filepath.Join(t.TempDir(), "allowed"), Outside: t.TempDir(), outsideState: []byte("a state outside")}
	if err := os.Mkdir(l.Allowed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Outside, "state"), l.outsideState, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out": l.Outside, "state-link": filepath.Join(l.Outside, "state"),
		"dangling": filepath.Join(l.Outside, "later")} {
		if err := os.Symlink(target, filepath.Join(l.Allowed, link)); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// Escapes are the paths that lead out of the allowed folder, by name.
func (l Layout) Escapes() map[string]string {
	rel, _ := filepath.Rel(l.Allowed, l.Outside)
	return map[string]string{
		"../ out of the folder":         l.Allowed + "/../escaped",
		"../ to the outside folder":     l.Allowed + "/" + rel + "/state",
		"an absolute path elsewhere":    filepath.Join(l.Outside, "state"),
		"the root":                      "/",
		"the allowed folder itself":     l.Allowed,
		"a linked folder out of it":     filepath.Join(l.Allowed, "out", "state"),
		"a linked file out of it":       filepath.Join(l.Allowed, "state-link"),
		"a dangling link out of it":     filepath.Join(l.Allowed, "dangling"),
		"under a dangling link":         filepath.Join(l.Allowed, "dangling", "state"),
		"a prefix of the folder's name": l.Allowed + "x/state",
		"a file of the system":          "/etc/passwd",
	}
}

// CheckUntouched fails the test unless the outside folder still holds only its
// state, as written, and the allowed folder's parent only the allowed folder.
func (l Layout) CheckUntouched(t testing.TB) {
	t.Helper()
	if entries, err := os.ReadDir(l.Outside); err != nil || len(entries) != 1 || entries[0].Name() != "state" {
		t.Errorf("the outside folder holds %v (%v), want only its state", entries, err)
	}
	if got, _ := os.ReadFile(filepath.Join(l.Outside, "state")); string(got) != string(l.outsideState) {
		t.Error("the outside state was overwritten")
	}
	if entries, _ := os.ReadDir(filepath.Dir(l.Allowed)); len(entries) != 1 {
		t.Errorf("the allowed folder's parent holds %v, want only the folder", entries)
	}
}

// CheckRefused fails the test unless err refuses op of the path p (named name): a
// PermissionDenied status, or an error wrapping worker.ErrPathNotAllowed, that names
// p and the allowed folders.
func CheckRefused(t testing.TB, op, name, p string, err error) {
	t.Helper()
	switch {
	case status.Code(err) != codes.PermissionDenied && !errors.Is(err, worker.ErrPathNotAllowed):
		t.Errorf("%s of %s (%s): %v, want PermissionDenied", op, name, p, err)
	case !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "allowed folder"):
		t.Errorf("%s of %s: %v, want the path and the allowed folders named", op, name, err)
	}
}

// CheckConfined checks the worker c, which may save and load under l.Allowed only
// and is configured with options: Save, Load and Configure with a load path refuse
// every escape of l with PermissionDenied, naming the path and the allowed folders,
// and touch nothing outside; a Save inside the folder, through a path with "..",
// loads back.
func CheckConfined(t *testing.T, c workerpb.WorkerClient, l Layout, options map[string]string) {
	t.Helper()
	ctx := context.Background()
	configure := &workerpb.ConfigureRequest{Seed: 2, Options: options}
	if _, err := c.Configure(ctx, configure); err != nil {
		t.Fatal(err)
	}
	for name, p := range l.Escapes() {
		_, err := c.Save(ctx, &workerpb.SaveRequest{Path: p})
		CheckRefused(t, "save", name, p, err)
		_, err = c.Load(ctx, &workerpb.LoadRequest{Path: p})
		CheckRefused(t, "load", name, p, err)
		_, err = c.Configure(ctx, &workerpb.ConfigureRequest{Seed: 2, Options: options, LoadPath: p})
		CheckRefused(t, "configure with load path", name, p, err)
	}
	l.CheckUntouched(t)
	if _, err := c.Configure(ctx, configure); err != nil {
		t.Fatal(err)
	}
	inside := l.Allowed + "/sub/../state"
	if _, err := c.Save(ctx, &workerpb.SaveRequest{Path: inside}); err != nil {
		t.Fatalf("save %s inside the allowed folder: %v", inside, err)
	}
	if _, err := c.Load(ctx, &workerpb.LoadRequest{Path: filepath.Join(l.Allowed, "state")}); err != nil {
		t.Errorf("load inside the allowed folder: %v", err)
	}
}
