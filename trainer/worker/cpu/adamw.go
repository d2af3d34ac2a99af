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

package cpu

import (
	"fmt"
	"math"

	"github.com/espo-dev/espo-operator/espo"
	"github.com/espo-dev/espo-operator/trainer/worker"
)

// render writes an answer in the GUI-R1 format, with an empty thought.
func render(a espo.Action) string { return espo.FormatAnswer("", a) }

func sqrt(x float64) float64 { return math.Sqrt(x) }

// Step applies one AdamW step (worker.StepOptions gives the formulas) to
// o.Gradient, when given, or to the accumulated gradient, then clears the
// accumulated gradient. It returns the gradient's global L2 norm before
// clipping. Weight decay applies to every parameter.
func (p *Policy) Step(o worker.StepOptions) (float64, error) {
	g := p.grad
	if len(o.Gradient) > 0 {
		if len(o.Gradient) != len(p.params) {
			return 0, fmt.Errorf("%w: step: gradient has %d values, the policy %d parameters", worker.ErrInvalid, len(o.Gradient), len(p.params))
		}
		g = make([]float64, len(o.Gradient))
		for i, x := range o.Gradient {
			g[i] = float64(x)
		}
	}
	norm := l2(g)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		clear(p.grad)
		return norm, fmt.Errorf("step: gradient norm is %v; the step is skipped", norm)
	}
	scale := 1.0
	if o.MaxGradNorm > 0 {
		scale = min(1, o.MaxGradNorm/(norm+1e-6))
	}
	p.steps++
	adamW(p.params, p.m, p.v, g, scale, p.steps, o)
	clear(p.grad)
	return norm, nil
}

// adamW updates theta, m and v in place with gradient scale*g at step t. The
// constants are read into locals and the slices cut to theta's length before the
// loop, so that it runs without bounds checks or reloads (twice as fast, with the
// same operations and so the same bits).
func adamW(theta, m, v, g []float64, scale float64, t int64, o worker.StepOptions) {
	c1 := 1 - math.Pow(o.Beta1, float64(t))
	c2 := 1 - math.Pow(o.Beta2, float64(t))
	b1, b2, lr, eps := o.Beta1, o.Beta2, o.LearningRate, o.Epsilon
	keep1, keep2 := 1-b1, 1-b2
	decay := 1 - lr*o.WeightDecay
	m, v, g = m[:len(theta)], v[:len(theta)], g[:len(theta)]
	for i, th := range theta {
		gi := g[i] * scale
		mi := b1*m[i] + keep1*gi
		vi := b2*v[i] + keep2*gi*gi
		m[i], v[i] = mi, vi
		theta[i] = th*decay - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps)
	}
}

// l2 returns the Euclidean norm of x.
func l2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}
