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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/espo-dev/espo-operator/trainer/worker"
	"github.com/espo-dev/espo-operator/trainer/worker/workertest"
	"github.com/espo-dev/espo-operator/trainer/workerpb"
)

// TestEveryWorkerMethodNeedsTheToken: a caller without the token, with another
// job's token, or with the token in another form is refused with Unauthenticated on
// every method of the Worker service, and nothing it asked for happens; the health
// service answers anyone; with the token every method is served.
func TestEveryWorkerMethodNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	workertest.CheckTokenRequired(t, workertest.Conn(t, listen(t, dir)), dir, smallModel)
}

// TestRefusedCallsAreNoActivity: a call refused for its token does not count as the
// trainer's work, so a stranger cannot keep a draining worker alive.
func TestRefusedCallsAreNoActivity(t *testing.T) {
	const quiet = time.Minute
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	a := worker.NewActivity(clock)
	conn := workertest.Conn(t, listenWith(t, worker.ServerOptions{Token: workertest.Token, Activity: a}))
	clock.Step(quiet)
	if err := workertest.Call(ctx, conn, "Info", nil, workertest.Bearer(workertest.OtherToken)); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Info with another job's token: %v, want Unauthenticated", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.WaitReleased(done, quiet); err != nil {
		t.Errorf("after a quiet minute and a refused call, WaitReleased: %v, want quiet (nil)", err)
	}
	if err := workertest.Call(ctx, conn, "Info", nil, workertest.Bearer(workertest.Token)); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitReleased(done, quiet); !errors.Is(err, context.Canceled) {
		t.Errorf("right after an admitted call, WaitReleased: %v, want to wait (context.Canceled)", err)
	}
}

// TestRemoteSendsItsToken: a Remote dialed with the job's token is served; one with
// another job's token or none is refused.
func TestRemoteSendsItsToken(t *testing.T) {
	ctx := context.Background()
	addr := listen(t)
	for token, want := range map[string]codes.Code{workertest.Token: codes.OK, workertest.OtherToken: codes.Unauthenticated, "": codes.Unauthenticated} {
		r, err := worker.Dial(addr, nil, token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err = r.Client().Info(ctx, &workerpb.InfoRequest{}); status.Code(err) != want {
			t.Errorf("Info from a Remote with token %.8s...: %v, want %v", token, err, want)
		}
		r.Close()
	}
}

// TestNoAuthServesAnyone: a server started with NoAuth (espo worker
// --insecure-no-auth) serves a caller without a token.
func TestNoAuthServesAnyone(t *testing.T) {
	conn := workertest.Conn(t, listenWith(t, worker.ServerOptions{NoAuth: true}))
	if err := workertest.Call(context.Background(), conn, "Info", nil, nil); err != nil {
		t.Errorf("Info without a token from a NoAuth server: %v", err)
	}
}

// TestBadTokensAreRefusedUpFront: a server or a Remote is not made with a malformed
// token, nor a server with a token and NoAuth at once, nor without either; no error
// quotes the token.
func TestBadTokensAreRefusedUpFront(t *testing.T) {
	for _, token := range []string{"", "short", strings.Repeat("g", worker.TokenLen), workertest.Token + "0"} {
		_, err := worker.NewGRPCServer(nil, worker.ServerOptions{Token: token})
		if err == nil || (token != "" && strings.Contains(err.Error(), token)) {
			t.Errorf("NewGRPCServer with token %q: %v, want an error that does not quote it", token, err)
		}
		if token == "" {
			continue
		}
		if _, err := worker.Dial("127.0.0.1:1", nil, token); err == nil || strings.Contains(err.Error(), token) {
			t.Errorf("Dial with token %q: %v, want an error that does not quote it", token, err)
		}
	}
	if _, err := worker.NewGRPCServer(nil, worker.ServerOptions{Token: workertest.Token, NoAuth: true}); err == nil {
		t.Error("NewGRPCServer with a token and NoAuth: no error")
	}
}

// TestReadTokenFile: a token file holds 64 hex characters, white space around them
// ignored; a missing, empty or malformed file is an error naming the file and
// quoting nothing of it.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := workertest.Token
	if got, err := worker.ReadTokenFile(write("good", token+"\n")); err != nil || got != token {
		t.Errorf("a token with a newline: %q %v, want the token", got, err)
	}
	for name, content := range map[string]string{
		"empty":     "",
		"blank":     " \n",
		"short":     token[:32],
		"long":      token + "ab",
		"not hex":   strings.Repeat("zz", worker.TokenLen/2),
		"two lines": token[:32] + "\n" + token[32:],
	} {
		p := write(name, content)
		_, err := worker.ReadTokenFile(p)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s token file: %v, want an error naming %s", name, err, p)
			continue
		}
		if strings.TrimSpace(content) != "" && strings.Contains(err.Error(), strings.TrimSpace(content)) {
			t.Errorf("%s token file: the error quotes its content: %v", name, err)
		}
	}
	if _, err := worker.ReadTokenFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing token file: %v, want ErrNotExist", err)
	}
}
