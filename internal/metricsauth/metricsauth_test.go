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

package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeTokenReviews authenticates the tokens in users and counts its reviews; err,
// when set, is returned instead (errs, when set, one per call first).
type fakeTokenReviews struct {
	users   map[string]authenticationv1.UserInfo
	errs    []error
	reviews int
}

func (f *fakeTokenReviews) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.reviews++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	out := tr.DeepCopy()
	if user, ok := f.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: user}
	}
	return out, nil
}

// fakeAccessReviews allows get on allowedPath to the users in allowed and records
// the reviews it was asked.
type fakeAccessReviews struct {
	allowedPath string
	allowed     map[string]bool
	errs        []error
	asked       []authorizationv1.SubjectAccessReviewSpec
}

func (f *fakeAccessReviews) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.asked = append(f.asked, sar.Spec)
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	out := sar.DeepCopy()
	a := sar.Spec.NonResourceAttributes
	out.Status.Allowed = a != nil && a.Path == f.allowedPath && a.Verb == "get" && f.allowed[sar.Spec.User]
	if !out.Status.Allowed {
		out.Status.Reason = "no RBAC rule allows it"
	}
	return out, nil
}

// noWait retries without sleeping.
var noWait = wait.Backoff{Steps: 3}

type fixture struct {
	tokens *fakeTokenReviews
	access *fakeAccessReviews
	clock  *clocktesting.FakeClock
	served int
	h      http.Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		tokens: &fakeTokenReviews{users: map[string]authenticationv1.UserInfo{
			"reader-token": {Username: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"},
				Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}}},
			"other-token": {Username: "system:serviceaccount:default:other"},
		}},
		access: &fakeAccessReviews{allowedPath: "/metrics", allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus": true}},
		clock:  clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f.served++
		if req.Header.Get("Authorization") != "" {
			t.Error("the caller's token reached the metrics handler")
		}
		_, _ = w.Write([]byte("metrics"))
	})
	h, err := newGuard(f.tokens, f.access, f.clock, noWait).filter(logr.Discard(), next)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// get is the status of a GET of path with the Authorization header auth ("" for none).
func (f *fixture) get(path, auth string) int {
	return f.do(http.MethodGet, path, auth)
}

func (f *fixture) do(method, path, auth string) int {
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec.Code
}

func TestServesOnlyAuthenticatedAuthorizedCallers(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic dXNlcjpwYXNz", http.StatusUnauthorized},
		{"an empty bearer token", http.MethodGet, "/metrics", "Bearer ", http.StatusUnauthorized},
		{"a token the API server does not know", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"a user without the RBAC rule", http.MethodGet, "/metrics", "Bearer other-token", http.StatusForbidden},
		{"the reader", http.MethodGet, "/metrics", "Bearer reader-token", http.StatusOK},
		{"the reader, scheme in lower case", http.MethodGet, "/metrics", "bearer reader-token", http.StatusOK},
		{"the reader on another path", http.MethodGet, "/debug", "Bearer reader-token", http.StatusForbidden},
		{"the reader with another verb", http.MethodPost, "/metrics", "Bearer reader-token", http.StatusForbidden},
	}
	for _, c := range cases {
		if got := f.do(c.method, c.path, c.auth); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	if f.served != 2 {
		t.Errorf("the metrics handler served %d requests, want the reader's 2", f.served)
	}
}

func TestAccessReviewCarriesTheWholeUser(t *testing.T) {
	f := newFixture(t)
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	if len(f.access.asked) != 1 {
		t.Fatalf("%d access reviews, want 1", len(f.access.asked))
	}
	spec := f.access.asked[0]
	if spec.User != "system:serviceaccount:monitoring:prometheus" || spec.UID != "u1" || len(spec.Groups) != 1 ||
		spec.Extra["authentication.kubernetes.io/pod-name"][0] != "prometheus-0" || spec.ResourceAttributes != nil ||
		*spec.NonResourceAttributes != (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) {
		t.Errorf("access review %+v", spec)
	}
}

func TestReviewsAreCachedForTheirLifetimes(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		f.get("/metrics", "Bearer reader-token")
		f.get("/metrics", "Bearer other-token")
		f.get("/metrics", "Bearer forged")
	}
	if f.tokens.reviews != 3 || len(f.access.asked) != 2 {
		t.Fatalf("%d token and %d access reviews for 3 tokens asked 3 times, want 3 and 2", f.tokens.reviews, len(f.access.asked))
	}

	// A denial is kept 30 s: a user just granted access waits at most that.
	f.access.allowed["system:serviceaccount:default:other"] = true
	f.clock.Step(denyCacheTTL - time.Second)
	if got := f.get("/metrics", "Bearer other-token"); got != http.StatusForbidden {
		t.Errorf("inside the deny lifetime: status %d, want the cached 403", got)
	}
	f.clock.Step(2 * time.Second)
	if got := f.get("/metrics", "Bearer other-token"); got != http.StatusOK {
		t.Errorf("after the deny lifetime: status %d, want 200", got)
	}

	// A token's review is kept a minute, then asked again.
	f.clock.Step(tokenCacheTTL)
	before := f.tokens.reviews
	f.get("/metrics", "Bearer reader-token")
	if f.tokens.reviews != before+1 {
		t.Errorf("after the token lifetime: %d new token reviews, want 1", f.tokens.reviews-before)
	}

	// An allow is kept five minutes: revoked access ends within that.
	f.access.allowed["system:serviceaccount:monitoring:prometheus"] = false
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Errorf("inside the allow lifetime: status %d, want the cached 200", got)
	}
	f.clock.Step(allowCacheTTL)
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusForbidden {
		t.Errorf("after the allow lifetime: status %d, want 403", got)
	}
}

func TestPassingReviewErrorsAreRetriedLastingOnesAnswered500(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is down")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("RBAC"))

	f := newFixture(t)
	f.tokens.errs = []error{unavailable, errors.New("connection reset by peer")}
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusOK {
		t.Errorf("two passing token review errors, then an answer: status %d, want 200", got)
	}
	if f.tokens.reviews != 3 {
		t.Errorf("%d token reviews, want 3", f.tokens.reviews)
	}

	f = newFixture(t)
	f.tokens.errs = []error{forbidden, forbidden}
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusInternalServerError {
		t.Errorf("the manager may not create token reviews: status %d, want 500", got)
	}
	if f.tokens.reviews != 1 {
		t.Errorf("a lasting error was retried: %d token reviews, want 1", f.tokens.reviews)
	}
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusInternalServerError || f.tokens.reviews != 2 {
		t.Errorf("a failed review was cached: status %d after %d reviews, want 500 after 2", got, f.tokens.reviews)
	}

	f = newFixture(t)
	f.access.errs = []error{unavailable, unavailable, unavailable}
	if got := f.get("/metrics", "Bearer reader-token"); got != http.StatusInternalServerError {
		t.Errorf("access reviews failing past the backoff's steps: status %d, want 500", got)
	}
	if len(f.access.asked) != noWait.Steps {
		t.Errorf("%d access reviews, want the backoff's %d steps", len(f.access.asked), noWait.Steps)
	}
}

func TestAccessKeysDoNotCollide(t *testing.T) {
	a := &authenticationv1.UserInfo{Username: "ab", Groups: []string{"c"}}
	b := &authenticationv1.UserInfo{Username: "a", Groups: []string{"bc"}}
	c := &authenticationv1.UserInfo{Username: "ab", Extra: map[string]authenticationv1.ExtraValue{"c": nil}}
	keys := map[string]bool{accessKey(a, "get", "/metrics"): true, accessKey(b, "get", "/metrics"): true, accessKey(c, "get", "/metrics"): true}
	if len(keys) != 3 {
		t.Errorf("users that differ share an access key: %v", keys)
	}
	d := &authenticationv1.UserInfo{Username: "u", Extra: map[string]authenticationv1.ExtraValue{"k1": {"v"}, "k2": {"w"}, "k3": {"x"}}}
	first := accessKey(d, "get", "/m")
	for range 10 {
		if accessKey(d, "get", "/m") != first {
			t.Fatal("the access key depends on map order")
		}
	}
}
