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
	"encoding/json"
	"hash/fnv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inLineMemo remembers, per job, the companions last found in line: the
// resourceVersion each live object had then and a fingerprint of the desired state it
// matched. A companion unchanged since, with the same desired state, is in line
// without reading the fields the controller applied from its managed fields again,
// the costliest part of a reconcile at scale. Entries go when the job finishes or is
// gone.
type inLineMemo struct {
	mu    sync.Mutex
	byJob map[types.NamespacedName]map[types.UID]inLineAt
}

// inLineAt is a live companion's resourceVersion when it was found in line with the
// desired state of the fingerprint.
type inLineAt struct {
	resourceVersion string
	desired         uint64
}

// fingerprint is a hash of the desired state as JSON; ok is false if it cannot be
// marshalled.
func fingerprint(desired companionConfig) (sum uint64, ok bool) {
	raw, err := json.Marshal(desired)
	if err != nil {
		return 0, false
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return h.Sum64(), true
}

// has reports whether live, a companion of the job of key, was found in line with
// the desired state of the fingerprint at its current resourceVersion.
func (m *inLineMemo) has(key types.NamespacedName, live client.Object, desired uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.byJob[key][live.GetUID()]
	return ok && at.resourceVersion == live.GetResourceVersion() && at.desired == desired
}

// put records that live, a companion of the job of key, is in line with the desired
// state of the fingerprint.
func (m *inLineMemo) put(key types.NamespacedName, live client.Object, desired uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byJob == nil {
		m.byJob = map[types.NamespacedName]map[types.UID]inLineAt{}
	}
	if m.byJob[key] == nil {
		m.byJob[key] = map[types.UID]inLineAt{}
	}
	m.byJob[key][live.GetUID()] = inLineAt{resourceVersion: live.GetResourceVersion(), desired: desired}
}

// forget drops what is remembered of the job of key.
func (m *inLineMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byJob, key)
}
