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

package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// How soon a job whose status write lost a race (a conflict) is reconciled again:
// after the first lost race statusConflictRetry, after the n-th in a row
// statusConflictRetry * 2^(n-1), at most statusConflictRetryMax.
const (
	statusConflictRetry    = 200 * time.Millisecond
	statusConflictRetryMax = 5 * time.Second
)

// statusRaces spaces the retries of jobs whose status writes keep losing races.
// One lost race is the trainer's report landing between the cache's read and the
// write, and the cache holds the newer version a moment later. Many in a row mean
// the cache lags behind the API server, as it does for seconds after the API server
// restarts and the watches start over, and a retry every statusConflictRetry would
// send each running job's five refused writes a second to the server that has just
// come back. Its zero value is ready to use and it is safe for concurrent use.
type statusRaces struct {
	once    sync.Once
	limiter workqueue.TypedRateLimiter[types.NamespacedName]
}

func (s *statusRaces) get() workqueue.TypedRateLimiter[types.NamespacedName] {
	s.once.Do(func() {
		s.limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](statusConflictRetry, statusConflictRetryMax)
	})
	return s.limiter
}

// lost records a lost race of the job of key and returns how soon to reconcile it
// again.
func (s *statusRaces) lost(key types.NamespacedName) time.Duration { return s.get().When(key) }

// won forgets the job's lost races: its status write went through, or it needed none.
func (s *statusRaces) won(key types.NamespacedName) { s.get().Forget(key) }
