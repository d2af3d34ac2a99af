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

// Package espo is the ESPO algorithm (Episode-wise Policy Optimization, from
// "ODYSSE: Episode-wise Policy Optimization for Personalized Agentic Reasoning"):
// answer parsing, stage rewards, the Chain-of-User-Thought (COUT) reward, advantage
// fusion, the per-token weights of the clipped, KL-penalised policy objective, and
// the episodic batch sampler. It is pure computation: no I/O, no mutable global
// state, no randomness but what the caller seeds. It imports the standard library
// and, on amd64 (unless built with the tag purego), golang.org/x/sys/cpu, through
// its internal loss kernel, to detect AVX2. docs/algorithm.md in the repository
// gives the same formulas with the paper's values and the reasons for the choices
// it leaves open.
//
// # The path of one episode
//
// An episode is S demonstrated steps; at each step the policy samples G candidate
// answers in the GUI-R1 format
//
//	<think>...</think><answer>[{'action': 'click', 'point': [x, y], 'input_text': 'no input text'}]</answer>
//
// which ParseAnswer reads. A Rewarder scores each against the step's GroundTruth,
// giving a Score; the episode's rewards, candidate g of step j at index j*G + g, go
// to Advantages, which writes one advantage per candidate; LossWeights turns the
// advantages and the candidates' token log-probabilities into one weight per token,
// which a policy worker back-propagates. The Sampler decides which episodes form a
// batch. Slices for results are passed in by the caller (dst); lengths that disagree
// panic with a message prefixed "espo: "; bad input data and bad configurations are
// errors. Scoring, advantages and loss weights allocate nothing in steady state.
//
// # Stage rewards (RewardConfig, the paper's defaults)
//
//	R_format = 0.5 if the answer parses, else 0
//	GUI step:       R_gui      = +0.5 type and value right, +0.2 type only,
//	                             -0.2 value only, -0.5 neither
//	                value: click point in the target box; text and scroll values
//	                token-set F1 >= 0.5
//	item-pool step: Intent_acc = 0.5 if type is pool_found and the intent is right, else 0
//	                right, by slots (the step carries the user's preferences):
//	                  every true value named and no other value of a true slot
//	                  (SlotMatcher.Match; or, SlotScore f1: Intent_acc = 0.5 * slot F1)
//	                right, by embedding (no preferences, or Match embedding):
//	                  cos(embed(predicted), embed(intent)) >= tau (0.75)
//	decision step:  R_dec      = +0.5 if type recommendation and value (Yes/No) exact, else -0.5
//	R_step(j, g) = R_format + (R_gui | Intent_acc | R_dec by the stage of step j)
//
// RewardConfig.Match chooses: auto (slots where the GroundTruth carries
// Preferences, else embedding), slots or embedding. Slot values are found as whole
// word sequences (words are runs of letters and digits, ignoring case and
// punctuation), longest first, so "Economy" is not found in "Premium economy". The
// embedding is pluggable (Embedder); the default HashEmbedder hashes words, word
// pairs and character 3-grams, so it rewards shared template words: on generated
// episodes a requirement with its preference values deleted passes tau, the values
// alone do not. Judging by slots is the default wherever preferences are known.
//
// # COUT reward of episode i (AdvantageConfig)
//
//	phi_i     = sigmoid(k * sum_{j gui} R_gui(j) / R_gui_max)     R_gui_max = 0.5 * #gui
//	psi_i     = sigmoid(k * sum_{j rec} R_dec(j) / R_dec_max)     R_dec_max = 0.5 * #rec
//	R_COUT(i) = phi_i * Intent_acc(i) + psi_i * Intent_acc(i)
//
// with k = 1. In episode mode (the default) each R(j) is the mean over the step's G
// candidates; in rollout mode candidate g of every step forms rollout g, with its
// own R_COUT(g). An episode without an item-pool step has R_COUT = 0; a gate over no
// steps (no GUI steps, or no decision steps) is EmptyGate, by default
// sigmoid(0) = 0.5. Ablations: Gates gui (phi only) or decision (psi only) keep one
// term; W = 0 drops COUT.
//
// # Advantage fusion
//
//	A_step(j, g)      = (R_step(j, g) - mean_g R_step(j, .)) / (std_g R_step(j, .) + eps)
//	A_COUT(i)         = R_COUT(i)                                   episode mode
//	A_COUT(i, g)      = (R_COUT(g) - mean R_COUT(.)) / (std R_COUT(.) + eps)   rollout mode
//	A_episode(i,j,g)  = A_step(j, g) + w * A_COUT
//
// std is the unbiased (n-1) sample standard deviation, eps = 1e-6, w = 1; a group
// whose values are all equal gives 0, and G < 2 is refused (ErrGroupSize).
//
// # What COUT can carry
//
// Training is teacher-forced: the G candidates y_1..y_G of a step are drawn from
// pi(.|prompt), and for a constant c
//
//	E[ sum_g c * grad log pi(y_g) ] = c * G * sum_y pi(y) grad log pi(y) = c * G * grad sum_y pi(y) = 0.
//
// Episode mode adds the same R_COUT to every candidate of every step of the
// episode, so its expected policy gradient is zero: it cannot say which candidate
// is better. It only sharpens what happened to be sampled (the sampled gradient is
// not zero) and, through per-token normalisation, pushes answers to be shorter or
// longer by its sign. Rollout mode's A_COUT(g) differs between candidates and can
// carry credit: rollout g is rewarded for its own GUI actions, intent and
// decisions. COUTAdvantages and FuseAdvantages expose the two halves of
// Advantages, so that a control can swap an episode's COUT advantages for another
// episode's (R_COUT permuted across episodes).
//
// # Policy objective (LossConfig, EasyR1's defaults)
//
// For token t of a candidate with advantage A:
//
//	rho    = exp(clamp(logp - logp_old, -20, 20))
//	L_clip = min(rho*A, clip(rho, 1 - 0.2, 1 + 0.3)*A), and max(L_clip, 3*A) for A < 0
//	KL     = k1: logp - ref | k2: (logp - ref)^2 / 2 | k3: clamp(e^(ref-logp) - (ref-logp) - 1, -10, 10)
//	f_t    = L_clip - beta * KL                                       beta = 0.01, k3
//	J      = mean over sequences of the mean over their tokens of f_t  (seq-mean-token-mean;
//	         also token-mean and seq-mean-token-sum)
//	w_t    = dJ/dlogp_t
//
// Back-propagating sum_t w_t * logp_t with w_t held constant gives exactly the
// gradient of J.
//
// When a serving engine other than the policy sampled the tokens (Tokens.SamplerLogP:
// vLLM, whose kernels and precision give log-probabilities that differ from the
// trainer's), truncated importance sampling re-weights each token's term by the
// constant
//
//	is_t = min(exp(clamp(logp_old - logp_sampler, -20, 20)), C)      C = LossConfig.ISCap
//
// so that the gradient is an estimate under the trainer's policy; C = 0 turns it
// off. LossStats reports the mismatch, mean |logp_old - logp_sampler|, either way.
//
// The per-token work is in internal/losskernel, which, like gonum's internal/asm,
// keeps a Go loop and an amd64 assembly kernel and chooses once, when the program
// starts: on amd64 where golang.org/x/sys/cpu reports AVX2, the k3 estimator's
// tokens run four at a time in the assembly, which adds the same numbers in the
// same order as the Go loop and is tested to agree with it bit for bit; the build
// tag purego, GODEBUG=cpu.avx2=off or a CPU without AVX2 leaves the Go loop alone.
//
// # Batches
//
// NewEpisodeSampler groups steps by episode id, keeps each episode's steps in
// order, shuffles whole episodes with a ChaCha8 stream keyed by (seed, epoch),
// packs them by episodes per batch or a step budget, and deals whole episodes to
// data-parallel ranks; any batch of any epoch can be recomputed, which makes resuming
// exact. NewStepSampler shuffles single steps, for the plain GRPO baseline.
package espo
