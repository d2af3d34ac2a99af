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

package mlflow_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/espo-dev/espo-operator/test/mlflowtest"
)

// TestMain runs the tests and stops the MLflow server if one of them started it
// (mlflowtest.Shared).
func TestMain(m *testing.M) {
	code := m.Run()
	mlflowtest.StopShared()
	os.Exit(code)
}

// deleteExperiment deletes the experiment named name of s through the REST API.
func deleteExperiment(t testing.TB, s *mlflowtest.Server, name string) {
	t.Helper()
	var got struct {
		Experiment struct {
			ID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	resp, err := http.Get(s.URI() + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + url.QueryEscape(name))
	if err == nil {
		err = json.NewDecoder(resp.Body).Decode(&got)
		_ = resp.Body.Close()
	}
	if err == nil {
		body, _ := json.Marshal(map[string]string{"experiment_id": got.Experiment.ID})
		resp, err = http.Post(s.URI()+"/api/2.0/mlflow/experiments/delete", "application/json", bytes.NewReader(body))
	}
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
	}
	if err != nil {
		t.Fatalf("deleting experiment %q: %v", name, err)
	}
}
