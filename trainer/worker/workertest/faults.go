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

package workertest

import (
	"net"
	"testing"

	"github.com/espo-dev/espo-operator/trainer/worker"
)

// RefusingAddress returns a loopback address where nothing listens: a connection to
// it is refused at once, as to a worker that is not up.
func RefusingAddress(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// IncompleteModelDetail is the detail of IncompleteModel's refusal.
const IncompleteModelDetail = "the model folder /models/m lacks config.json"

// IncompleteModel is a Policy that refuses every Configure as a worker refuses a
// model folder that lacks files: with a *worker.ModelIncompleteError whose detail is
// IncompleteModelDetail.
type IncompleteModel struct{ worker.Policy }

// Configure refuses.
func (IncompleteModel) Configure(uint64, map[string]string) error {
	return &worker.ModelIncompleteError{Detail: IncompleteModelDetail}
}
