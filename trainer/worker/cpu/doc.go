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

// Package cpu is the CPU reference policy of the worker protocol: a small neural
// policy in pure Go that reads a step's prompt and answers it as a short
// sequence of decisions ("tokens"), rendered in the GUI-R1 format with
// espo.FormatAnswer. It implements worker.Policy; serve it with
// worker.NewServer, worker.LocalClient or worker.NewGRPCServer.
//
// # Decisions
//
// The first token chooses the action type among click, type, scroll, exit,
// complete, pool_found and recommendation; then, by type:
//
//	click           the target element, pointer-style over the screen's elements;
//	                the point is the centre of its box
//	type            the text: an n-gram (1-3 tokens) of the instruction, an element
//	                text of the screen, or a text typed or clicked in the history
//	scroll          the direction, up, down, left or right
//	pool_found      the intent text, one word per token until an end token (at most
//	                max_intent_words): words of a built-in lexicon of about 200
//	                common English words and of the prompt (instruction, typed
//	                texts, chosen filter values, clicked and screen texts)
//	recommendation  Yes or No
//
// A token id is kind*1,000,000 + option index, kind 1 type, 2 element, 3 text,
// 4 direction, 5 intent word (the end token is the index after the last word),
// 6 decision. An answer given as text is mapped to tokens by parsing it (see
// tokenize): a point to the element that contains it, a text to the nearest
// option, an intent to its words that are in the vocabulary; what no option
// reaches is learnt as the nearest answer the policy can give.
//
// # Network
//
// Every option of every decision is scored by one MLP over hashed features:
//
//	x     = sparse +-1 vector of the option's feature hashes (2^hash_bits rows)
//	h     = tanh(b1 + E^T x)                      H = hidden units (32)
//	logit = w2 . h,   p = softmax over the decision's options
//
// and the log-prob of an answer is the sum of its tokens' log-probs. The
// features of an option are conjunctions of what it is with where the agent is:
// the stage, channel, kind of page, last action and the element it clicked,
// history length; for elements their role, selection state, text, words and
// position, and whether they repeat the last click or a typed text; for intent
// words the word, its sources and evidence keys, and the previous one and two
// words (bigram, trigram, phrase continuation, repetition, position); for
// Yes and No the cross-step evidence about the candidate item: each attribute
// the history chose (a filter chip selected and not cleared, an option chosen on
// a page) compared with the item's value (equal, larger, smaller, other), and
// each typed text matched against the item's values, with the count of misses.
//
// # Training
//
// Backward computes exact gradients by hand-written back-propagation (checked
// against finite differences): per answer in parallel, each into its own sparse
// buffer, added to the accumulator in item order, so the result does not depend
// on the threads. Step is AdamW with bias correction, decoupled weight decay and
// global-norm clipping (worker.StepOptions). The reference policy is a copy of
// the weights taken by SnapshotReference. Save writes options, weights,
// reference, moments and step count with encoding/gob.
//
// # Determinism
//
// Configure(seed) draws the weights from a PCG stream of math/rand/v2 seeded
// with seed; Generate samples each prompt from a PCG stream seeded with the
// call's seed and the prompt's episode id and step index, so the answers do not
// depend on the other prompts, their order or the goroutines.
package cpu
