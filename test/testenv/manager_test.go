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

package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// startOnly is a manager of which runManager calls only Start.
type startOnly struct {
	ctrl.Manager
	start func(ctx context.Context) error
}

func (m startOnly) Start(ctx context.Context) error { return m.start(ctx) }

// recordingTB is the testing.TB runManager is given: it records the errors reported
// and the cleanups registered instead of acting on them.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestRunManagerReportsAManagerThatDoesNotStop(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	for _, tc := range []struct {
		name    string
		start   func(ctx context.Context) error
		timeout time.Duration
		want    string // a part of the one error reported; "" for none
	}{
		{"stops when cancelled", func(ctx context.Context) error { <-ctx.Done(); return nil }, time.Minute, ""},
		{"fails", func(ctx context.Context) error { <-ctx.Done(); return errors.New("cache sync failed") }, time.Minute, "manager: cache sync failed"},
		{"never stops", func(context.Context) error { <-stuck; return nil }, 10 * time.Millisecond, "did not stop within 10ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTB{}
			stop := runManager(rec, startOnly{start: tc.start}, tc.timeout)
			if len(rec.cleanups) != 1 {
				t.Fatalf("%d cleanups registered, want 1 (the stop)", len(rec.cleanups))
			}
			stop()
			rec.cleanups[0]() // the test's end: stops once only
			switch {
			case tc.want == "" && len(rec.errors) > 0:
				t.Errorf("errors %q, want none", rec.errors)
			case tc.want != "" && (len(rec.errors) != 1 || !strings.Contains(rec.errors[0], tc.want)):
				t.Errorf("errors %q, want one with %q", rec.errors, tc.want)
			}
		})
	}
}
