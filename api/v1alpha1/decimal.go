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

package v1alpha1

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Decimal is a real number written as a string: an optional sign, digits, an optional
// fraction and an optional exponent of at most two digits ("0.5", "-0.2", "1e-6",
// "3.0"). Quote it in YAML (learningRate: "1e-6"): an unquoted number is refused,
// because a number would be re-encoded by every tool on its way and drift in GitOps
// diffs, while a string comes back byte-identical.
//
// Every value of the API that is not a count is a Decimal: hyper-parameters and reward
// weights in spec, metrics in status.
// +kubebuilder:validation:Pattern=`^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$`
// +kubebuilder:validation:MaxLength=32
type Decimal string

// decimalPattern is the Pattern marker of Decimal; keep the two in step.
var decimalPattern = regexp.MustCompile(`^[-+]?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]{1,2})?$`)

// MetricDigits is the number of digits after the point of every metric in status
// ("0.286"): enough to tell apart accuracies over a thousand steps, short enough for a
// column.
const MetricDigits = 3

// Float64 parses d. It refuses what the API server would refuse (anything that does not
// match the Decimal pattern, including "", "NaN", "Inf" and hexadecimal floats), so a
// config file read without an API server is held to the same rule.
func (d Decimal) Float64() (float64, error) {
	if !decimalPattern.MatchString(string(d)) {
		return 0, fmt.Errorf("v1alpha1: %q is not a decimal (want digits with an optional sign, fraction and exponent, such as \"0.5\" or \"1e-6\")", string(d))
	}
	return strconv.ParseFloat(string(d), 64)
}

// NewDecimal writes v in the shortest form that parses back to exactly v ("0.2",
// "1e-06"). A Decimal's exponent has at most two digits, so magnitudes below 1e-99
// are written "0", and NaN, infinities and magnitudes of 1e100 and more give "" (an
// omitempty field then stays unset).
func NewDecimal(v float64) Decimal {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || a >= 1e100:
		return ""
	case a < 1e-99:
		return "0"
	}
	return Decimal(strconv.FormatFloat(v, 'g', -1, 64))
}

// NewMetric writes v with MetricDigits digits after the point ("0.286", "-0.125"), the
// form of every metric in status.training, so that columns line up. It returns "" for
// NaN and infinities.
func NewMetric(v float64) Decimal {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	s := strconv.FormatFloat(v, 'f', MetricDigits, 64)
	if s == "-0.000" {
		s = "0.000"
	}
	return Decimal(s)
}
