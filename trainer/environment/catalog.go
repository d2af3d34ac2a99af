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

package environment

import (
	"fmt"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// appOf returns the app of channel, the generator's (dataset.AppOf).
func appOf(channel string) (*dataset.App, error) {
	a, err := dataset.AppOf(channel)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return &a, nil
}

// attrOf returns the attribute of a with the given key, or nil.
func attrOf(a *dataset.App, key string) *dataset.Attribute {
	for i := range a.Attributes {
		if a.Attributes[i].Key == key {
			return &a.Attributes[i]
		}
	}
	return nil
}
