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

package espo_test

import (
	"fmt"

	"github.com/espo-dev/espo-operator/espo"
)

// The whole path for one episode of three steps (a click, the item-pool step, one
// decision) with G = 2 candidates each: answers in, per-token loss weights out.
func Example() {
	const G = 2
	truths := []espo.GroundTruth{
		{Stage: espo.StageGUI, Action: espo.Action{Type: espo.ActionClick, Point: [2]float64{540, 600}, Text: espo.NoText},
			Box: [4]float64{0.4, 0.2, 0.6, 0.3}, Screen: [2]float64{1080, 2400}},
		{Stage: espo.StagePool, Action: espo.Action{Type: espo.ActionPoolFound, Point: espo.NoPoint},
			Intent: "a hotel in New York next week"},
		{Stage: espo.StageRecommend, Action: espo.Action{Type: espo.ActionRecommendation, Point: espo.NoPoint, Text: "Yes"}},
	}
	answers := [][G]string{
		{`<think>tap search</think><answer>[{'action': 'click', 'point': [530, 610], 'input_text': 'no input text'}]</answer>`,
			`<think>scroll</think><answer>[{"action": "scroll", "point": [-100, -100], "input_text": "down"}]</answer>`},
		{`<think>need</think><answer>[{'action': 'pool_found', 'point': [-100, -100], 'input_text': 'hotel in New York, next week'}]</answer>`,
			`<think>need</think><answer>[{'action': 'pool_found', 'point': [-100, -100], 'input_text': 'a cheap flight'}]</answer>`},
		{`<think>fits</think><answer>[{'action': 'recommendation', 'point': [-100, -100], 'input_text': 'Yes'}]</answer>`,
			`I would say yes`},
	}

	// Rewards: R_step and the stage reward of every candidate.
	rw, err := espo.NewRewarder(espo.DefaultRewardConfig(), nil)
	if err != nil {
		panic(err)
	}
	ep := espo.EpisodeRewards{G: G, Stages: make([]espo.Stage, len(truths)),
		Step: make([]float64, len(truths)*G), Stage: make([]float64, len(truths)*G)}
	for j := range truths {
		ep.Stages[j] = truths[j].Stage
		for g, a := range answers[j] {
			s := rw.Score(&truths[j], a)
			ep.Step[j*G+g], ep.Stage[j*G+g] = s.Step(), s.Stage
			fmt.Printf("step %d cand %d: R_step %.1f (type %v, value %v, err %v)\n", j, g, s.Step(), s.TypeOK, s.ValueOK, s.Err)
		}
	}

	// Advantages: A_step + w * R_COUT. The step means of R_gui and R_dec are 0, so
	// phi = psi = sigmoid(0) = .5; Intent_acc = .25; R_COUT = (.5 + .5) * .25. A group
	// of two has A_step = +-1/sqrt(2).
	adv := make([]float64, len(ep.Step))
	cout, err := espo.Advantages(adv, ep, espo.DefaultAdvantageConfig())
	if err != nil {
		panic(err)
	}
	fmt.Printf("phi %.4f psi %.4f intent %.2f R_COUT %.4f\n", cout.Phi, cout.Psi, cout.Intent, cout.Reward)
	fmt.Printf("advantages %.4f\n", adv)

	// Loss weights: each candidate's answer has 2 tokens here; the first inner
	// step is on-policy (logp = logp_old) and the policy still equals the reference.
	tk := espo.Tokens{Lens: make([]int, len(adv)), Adv: adv}
	for i := range adv {
		tk.Lens[i] = 2
		tk.LogP = append(tk.LogP, -0.5, -1.5)
	}
	tk.OldLogP, tk.RefLogP = tk.LogP, tk.LogP
	// With rho = 1 and KL = 0, w_t = A / (N T_s) = A / 12 and J = mean(A) = .25.
	w := make([]float64, len(tk.LogP))
	st, err := espo.LossWeights(w, tk, espo.DefaultLossConfig())
	if err != nil {
		panic(err)
	}
	fmt.Printf("weights %.4f\n", w)
	fmt.Printf("J %.4f clip %.2f KL %.2f\n", st.Objective, st.ClipFrac, st.KL)
	// Output:
	// step 0 cand 0: R_step 1.0 (type true, value true, err <nil>)
	// step 0 cand 1: R_step 0.0 (type false, value false, err <nil>)
	// step 1 cand 0: R_step 1.0 (type true, value true, err <nil>)
	// step 1 cand 1: R_step 0.5 (type true, value false, err <nil>)
	// step 2 cand 0: R_step 1.0 (type true, value true, err <nil>)
	// step 2 cand 1: R_step -0.5 (type false, value false, err espo: answer: missing <think>...</think> block at the start)
	// phi 0.5000 psi 0.5000 intent 0.25 R_COUT 0.2500
	// advantages [0.9571 -0.4571 0.9571 -0.4571 0.9571 -0.4571]
	// weights [0.0798 0.0798 -0.0381 -0.0381 0.0798 0.0798 -0.0381 -0.0381 0.0798 0.0798 -0.0381 -0.0381]
	// J 0.2500 clip 0.00 KL 0.00
}
