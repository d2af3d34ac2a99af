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

// Package worker connects the trainer to policy workers. A worker implements a
// small Go interface, Policy; NewGRPCServer serves one over the worker protocol
// (gRPC). The trainer drives a Gang of Members in Go types: a Member is one worker,
// remote (Dial, over gRPC) or in process (NewLocal, calling the Policy directly);
// the Gang deals a batch's requests among its members, fans every call out to them
// and sums their gradients. NewPrompt (and PromptFromStep, its wire form) is the
// teacher-forced prompt of one step of a SmartSpot episode.
//
// The protocol and its contracts are described call by call in
// docs/worker-protocol.md. In short: a worker is a differentiable log-prob engine.
// Generate samples answers with per-token log-probs; LogProbs scores given answers
// under the current and the frozen reference policy; Backward accumulates the
// gradient of the loss
//
//	L = -sum_i sum_t w_{i,t} * logp_{i,t}
//
// (with every w_{i,t} = sequence_weight when no token weights are given, which is
// how the cold start asks for cross-entropy); Step applies one AdamW step to the
// accumulated gradient, or to the gradient it is given, and clears the
// accumulator. The server and the in-process member share what every worker owes
// its caller: the order of calls (Configure first), locking (scoring calls run
// concurrently, calls that change the state run alone), the defaults of the
// options, atomic Save files, Save and Load confined to the allowed folders (the
// job's checkpoint, initial-checkpoint and output folders: ErrPathNotAllowed), a
// state sent inline (Setup.State) bounded by MaxStateBytes; the server maps its
// errors to gRPC status codes. Resuming, the Gang sends the checkpoint's path to the
// members that can read it and its content to the others (workers in other pods
// than the trainer's; readsLoadPath is the rule).
//
// The server refuses every call of the Worker service that does not carry the
// job's token (ReadTokenFile; the metadata "authorization: Bearer <token>", which
// Dial sends) with Unauthenticated, comparing in constant time; the health service
// stays open for probes. The token authenticates the trainer; it does not encrypt
// the plaintext connection. Package workertest checks a running worker, Go or
// PyTorch, against both rules.
package worker
