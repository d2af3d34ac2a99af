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

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// manifestFieldManager is the field manager of ApplyManifests.
const manifestFieldManager = "espo-controlplane"

// ApplyManifests server-side applies every object of the YAML files (documents
// separated by ---), as kubectl apply --server-side -f would, through cfg.
func ApplyManifests(ctx context.Context, cfg *rest.Config, files ...string) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for _, file := range files {
		objs, err := readManifests(file)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
				client.FieldOwner(manifestFieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s of %s: %w", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	return nil
}

// readManifests decodes the objects of a YAML file; empty documents are skipped.
func readManifests(file string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		switch err := dec.Decode(&obj.Object); {
		case errors.Is(err, io.EOF):
			return objs, nil
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", file, err)
		case len(obj.Object) > 0:
			objs = append(objs, obj)
		}
	}
}
