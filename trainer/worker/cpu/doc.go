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
// worker.NewServer, worker.NewLocal or worker.NewGRPCServer.
//
// # Architectures
//
// The option arch selects what the policy reads:
//
//	features  (default) the prompt's structured attributes too: the selection
//	          state and group of filter chips, the page an opener opens, the
//	          candidate item's attribute map. Hand-built evidence features rebuild
//	          the user's choices from the clicked elements' attributes and compare
//	          them with the candidate's; a policy trained on five channels scores
//	          100% on the Yes/No decisions of the sixth, so it learns nothing there.
//	          It stays as a labelled upper bound.
//	tokens    only what a screen shows: the words of the instruction, of the
//	          history's actions (type, input text, the touched element's role and
//	          text, the point clicked) and of the current screen (role, text,
//	          box), and the candidate's title. It never reads an attribute map and
//	          has no feature that compares two strings; its Yes/No decision comes
//	          from a learned match module (see below). Removing or scrambling every
//	          attribute map of a prompt leaves its answers and log-probs unchanged.
//
// Both share the decisions, the token ids and the MLP below; Describe and the
// saved state name the architecture, and a policy refuses the state of the
// other one.
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
// Every option of every decision is scored by one MLP over hashed features
// (in the tokens architecture, plus the match module's Delta on Yes):
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
// The tokens architecture drops every feature that reads an attribute or tests
// two strings for equality: the selection state, the page an element opens, a
// focused field, "repeats the last click", "equals a typed text", "a chip shows
// this text", the evidence and its keys. A text option keeps the first place it
// was found; an intent word keeps its sources (lexicon, instruction, typed,
// clicked, screen) and the roles of the elements whose clicked text held it.
// Its Yes and No options have only a bias and a bias per channel; the match
// module adds to the logit of Yes
//
//	Delta = beta + sum_i g_i (p_i m_i + q_i)
//
// over the occurrences i of the words of the instruction and the history. Each
// occurrence has hashed context features c_i (the action's type and role, how
// many actions came after it, the next and the previous action's type, role and
// first word, the word, its place in the text, the cell of the screen clicked):
// a relevance gate g_i = sigmoid(sum A[c_i] + alpha rho_i), a weight p_i =
// sum B[c_i] for being found on the page and q_i = sum C[c_i] for being there
// at all. m_i says whether the word is on the current screen or in the
// candidate's title, rho_i how often it recurs in the other history actions (a
// chip clicked twice is cleared), both through soft counts
// sum sigma(20 (U_w . U_v - 0.5)) over tied word embeddings U (rows of unit
// length at the start, so a word matches itself, seen in training or not, and
// two different words about 0). A, B, C, alpha and beta start at 0: which words
// matter, and that a preference must be found on the page, is learnt. tokens.go
// gives the formulas and the backward pass.
//
// # Training
//
// Backward computes exact gradients by hand-written back-propagation (checked
// against finite differences, the match module's included): per answer in
// parallel, each into its own sparse buffer, added to the accumulator in item
// order, so the result does not depend on the threads. Each answer finds its
// rows' slots through a dense index of the table's rows (one per thread at a
// time) and keeps the gradients in blocks of 256 rows; both are recycled across
// calls (gradsPool), which removed more than half of a training run's allocated
// bytes. Step is AdamW with bias correction, decoupled weight decay and
// global-norm clipping (worker.StepOptions). The reference policy is a copy of
// the weights taken by SnapshotReference. Save writes options and step count
// as a gob header, then weights, reference and moments as raw little-endian
// float64s (state.go); Load also reads the all-gob format of version 1.
//
// # Determinism
//
// Configure(seed) draws the weights from a PCG stream of math/rand/v2 seeded
// with seed; Generate samples each prompt from a PCG stream seeded with the
// call's seed and the prompt's episode id and step index, so the answers do not
// depend on the other prompts, their order or the goroutines.
package cpu
