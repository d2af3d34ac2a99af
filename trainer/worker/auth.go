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
	"crypto/subtle"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
)

// EnvTokenFile names the environment variable with the path of the job's worker
// token, as the controller sets it in the trainer container and in every worker
// container (the job's Secret <job>-worker-token, mounted read-only).
const EnvTokenFile = trainingv1alpha1.WorkerTokenFileEnv

// TokenLen is the length of a worker token: 32 random bytes, hex encoded.
const TokenLen = trainingv1alpha1.WorkerTokenLength

// AuthorizationKey is the gRPC metadata key that carries "Bearer <token>".
const AuthorizationKey = "authorization"

// ReadTokenFile returns the worker token in the file at path: TokenLen hex
// characters, surrounding white space ignored. An empty or malformed file is an
// error that names the file and never quotes its content.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("worker token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if err := checkToken(token); err != nil {
		return "", fmt.Errorf("worker token file %s: %w", path, err)
	}
	return token, nil
}

// checkToken returns an error unless token is TokenLen hex characters; the error
// does not quote the token.
func checkToken(token string) error {
	if token == "" {
		return fmt.Errorf("empty; it must hold %d hex characters (32 random bytes), as in the job's Secret <job>-worker-token", TokenLen)
	}
	if len(token) != TokenLen || strings.Trim(token, "0123456789abcdefABCDEF") != "" {
		return fmt.Errorf("malformed: %d characters, want %d hex characters (32 random bytes), as in the job's Secret <job>-worker-token", len(token), TokenLen)
	}
	return nil
}

// Bearer returns the credentials that send token with every call, as the metadata
// "authorization: Bearer <token>", for the worker and the environment protocols.
func Bearer(token string) credentials.PerRPCCredentials { return bearer(token) }

// bearer sends a token with every call. The protocols run over plaintext HTTP/2
// inside the cluster: the token authenticates the caller, it does not encrypt the
// call, so it does not ask for transport security.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{AuthorizationKey: "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

var _ credentials.PerRPCCredentials = bearer("")

// authenticator admits a call that carries the token; it lets the standard health
// service (grpc.health.v1, the kubelet's probes) through without one and refuses
// every other call with codes.Unauthenticated.
type authenticator struct{ want []byte }

// open reports whether fullMethod may be called without the token: only the methods
// of the standard health service.
func open(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/"+healthpb.Health_ServiceDesc.ServiceName+"/")
}

// check returns nil when ctx carries the worker's token (CheckBearer); else an
// Unauthenticated status that says what is missing, never what was sent.
func (a authenticator) check(ctx context.Context) error {
	return CheckBearer(ctx, a.want,
		status.Errorf(codes.Unauthenticated, "worker token required: send the metadata %q: \"Bearer <the job's token>\" (the trainer reads it from $%s)", AuthorizationKey, EnvTokenFile),
		status.Errorf(codes.Unauthenticated, "wrong worker token: this worker serves another job, or its token was rotated (the trainer reads it from $%s)", EnvTokenFile))
}

// CheckBearer returns nil when ctx's metadata carries exactly one AuthorizationKey
// value, "Bearer <want>", compared in constant time; missing when it carries none
// (or several), wrong when the token is another. The errors are the caller's, so
// that they name its service; neither may quote what was sent. The worker protocol
// and the environment protocol (trainer/environment) check the job's token so.
func CheckBearer(ctx context.Context, want []byte, missing, wrong error) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(AuthorizationKey)
	if len(vals) != 1 {
		return missing
	}
	got, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
		return wrong
	}
	return nil
}

func (a authenticator) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !open(info.FullMethod) {
		if err := a.check(ctx); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
}

func (a authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !open(info.FullMethod) {
		if err := a.check(ss.Context()); err != nil {
			return err
		}
	}
	return handler(srv, ss)
}
