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

// Package metricsauth guards the manager's metrics endpoint: each caller is
// authenticated by the API server (a TokenReview of its bearer token) and authorized
// by it (a SubjectAccessReview of the request's non-resource path and verb), as
// kube-rbac-proxy and controller-runtime's metrics filters do, with the same cache
// lifetimes. It talks to the API server through client-go's typed clients only, so
// the manager does not link the API server's authentication and authorization
// libraries (155 packages: CEL, OpenTelemetry, the egress proxy's gRPC client)
// for two requests.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Cache lifetimes and sizes, those of controller-runtime's metrics filters: a token's
// review is kept a minute whatever its answer; an access review's allow five
// minutes, its deny 30 seconds (a caller just granted access waits at most that).
const (
	tokenCacheTTL  = time.Minute
	allowCacheTTL  = 5 * time.Minute
	denyCacheTTL   = 30 * time.Second
	cacheSize      = 1024
	reviewDeadline = 10 * time.Second
)

// reviewBackoff is how a review that failed for a passing reason (the API server
// unreachable, overloaded or timing out) is retried: the API server's own webhook
// retry schedule.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// WithAuthenticationAndAuthorization is a controller-runtime metrics FilterProvider:
// a request without a bearer token, or with one the API server does not
// authenticate, is answered 401; one whose user may not use the request's verb
// (the method in lower case) on its path is answered 403; a review that fails is
// answered 500 and logged. The manager's service account needs create on
// tokenreviews and subjectaccessreviews; a scraper needs get on the non-resource URL
// /metrics.
func WithAuthenticationAndAuthorization(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return newGuard(authn.TokenReviews(), authz.SubjectAccessReviews(), clock.RealClock{}, reviewBackoff).filter, nil
}

// guard authenticates and authorizes requests through the API server's reviews,
// caching their answers.
type guard struct {
	tokens  authenticationv1client.TokenReviewInterface
	access  authorizationv1client.SubjectAccessReviewInterface
	users   *cache.LRUExpireCache // token digest -> *authenticationv1.UserInfo, nil when unauthenticated
	allowed *cache.LRUExpireCache // accessKey -> decision
	backoff wait.Backoff
}

// decision is a SubjectAccessReview's answer: allowed or not, and why.
type decision struct {
	allowed bool
	reason  string
}

func newGuard(tokens authenticationv1client.TokenReviewInterface, access authorizationv1client.SubjectAccessReviewInterface,
	clk clock.PassiveClock, backoff wait.Backoff) *guard {
	return &guard{
		tokens: tokens, access: access, backoff: backoff,
		users:   cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		allowed: cache.NewLRUExpireCacheWithClock(cacheSize, clk),
	}
}

// filter wraps next so that it serves only authenticated and authorized callers;
// the caller's token is removed from the request before next sees it.
func (g *guard) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, err := g.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "Authentication failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if user == nil {
			log.V(4).Info("Authentication failed: the API server did not authenticate the token")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		d, err := g.authorize(req.Context(), user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "Authorization failed", "user", user.Username)
			http.Error(w, fmt.Sprintf("Authorization for user %s failed", user.Username), http.StatusInternalServerError)
			return
		}
		if !d.allowed {
			log.V(4).Info("Authorization denied", "user", user.Username, "verb", verb, "path", req.URL.Path, "reason", d.reason)
			http.Error(w, fmt.Sprintf("Authorization denied for user %s", user.Username), http.StatusForbidden)
			return
		}
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken is the token of an "Authorization: Bearer <token>" header (the scheme
// in any case), and whether there is one.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// authenticate is the user the API server says token belongs to, nil when it does
// not authenticate the token. Answers are cached by the token's SHA-256 digest.
func (g *guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	digest := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(digest[:])
	if user, ok := g.users.Get(key); ok {
		return user.(*authenticationv1.UserInfo), nil
	}
	var review *authenticationv1.TokenReview
	err := g.withRetries(ctx, func(ctx context.Context) (err error) {
		review, err = g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	var user *authenticationv1.UserInfo
	if review.Status.Authenticated && review.Status.Error == "" {
		user = &review.Status.User
	}
	g.users.Add(key, user, tokenCacheTTL)
	return user, nil
}

// authorize is the API server's answer to whether user may use verb on the
// non-resource path. Answers are cached, an allow longer than a deny.
func (g *guard) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (decision, error) {
	key := accessKey(user, verb, path)
	if d, ok := g.allowed.Get(key); ok {
		return d.(decision), nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extraOf(user),
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	var review *authorizationv1.SubjectAccessReview
	err := g.withRetries(ctx, func(ctx context.Context) (err error) {
		review, err = g.access.Create(ctx, sar, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return decision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	d := decision{allowed: review.Status.Allowed && !review.Status.Denied, reason: review.Status.Reason}
	if review.Status.EvaluationError != "" {
		d.reason = strings.TrimSpace(d.reason + " " + review.Status.EvaluationError)
	}
	ttl := denyCacheTTL
	if d.allowed {
		ttl = allowCacheTTL
	}
	g.allowed.Add(key, d, ttl)
	return d, nil
}

// withRetries calls review, each call bounded by reviewDeadline, until it succeeds,
// fails for a lasting reason, or the backoff's steps are spent.
func (g *guard) withRetries(ctx context.Context, review func(context.Context) error) error {
	return retry.OnError(g.backoff, passing, func() error {
		ctx, cancel := context.WithTimeout(ctx, reviewDeadline)
		defer cancel()
		return review(ctx)
	})
}

// passing reports whether err may not recur: a transport error or an API server that
// is overloaded, unavailable or timed out. An answer such as Forbidden (the manager
// lacks the RBAC to create reviews) is final.
func passing(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.Is(err, context.Canceled)
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// extraOf is user's extra attributes in a SubjectAccessReview's type.
func extraOf(user *authenticationv1.UserInfo) map[string]authorizationv1.ExtraValue {
	if len(user.Extra) == 0 {
		return nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return extra
}

// accessKey identifies an access review: the user's every attribute, the verb and
// the path, each part length-prefixed so that no two reviews share a key.
func accessKey(user *authenticationv1.UserInfo, verb, path string) string {
	var b strings.Builder
	part := func(s string) { fmt.Fprintf(&b, "%d:%s", len(s), s) }
	part(user.Username)
	part(user.UID)
	part(verb)
	part(path)
	for _, group := range user.Groups {
		part("g" + group)
	}
	for _, k := range slices.Sorted(maps.Keys(user.Extra)) {
		part("x" + k)
		for _, v := range user.Extra[k] {
			part(v)
		}
	}
	return b.String()
}
