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
	"bytes"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// EachSample calls f with the labels and the value of every sample of the counter,
// gauge or untyped metric family name in text, a /metrics page in Prometheus's text
// format (kube-apiserver's, the manager's). A family that is absent calls f never.
func EachSample(text []byte, name string, f func(labels map[string]string, v float64)) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return fmt.Errorf("parsing /metrics: %w", err)
	}
	family, ok := families[name]
	if !ok {
		return nil
	}
	for _, m := range family.GetMetric() {
		labels := make(map[string]string, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			f(labels, m.GetCounter().GetValue())
		case m.Gauge != nil:
			f(labels, m.GetGauge().GetValue())
		case m.Untyped != nil:
			f(labels, m.GetUntyped().GetValue())
		}
	}
	return nil
}
