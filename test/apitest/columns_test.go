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

package apitest

import (
	"context"
	"fmt"
	"testing"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/test/builders"
)

// TestRestartsColumnPrintsZero writes a status without restarts, as the controller
// does before the first restart (the field is omitted when 0), and checks that
// `kubectl get espojobs -o wide` prints 0 in the Restarts column, not blank.
func TestRestartsColumnPrintsZero(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	job := builders.MakeESPOJob("no-restarts", ns).Obj()
	if err := env.Client.Create(ctx, job, strict); err != nil {
		t.Fatal(err)
	}
	job.Status.Phase = trainingv1alpha1.PhasePending
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("status update: %v", err)
	}

	table := getTable(t, ns)
	column := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Restarts" {
			column = i
		}
	}
	if column < 0 || len(table.Rows) != 1 {
		t.Fatalf("no Restarts column (%d) or not one row (%d)", column, len(table.Rows))
	}
	if got := fmt.Sprint(table.Rows[0].Cells[column]); got != "0" {
		t.Errorf("Restarts prints %q, want 0", got)
	}
}
