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

// Package worker connects the trainer to policy workers: the gRPC server adapter
// (NewServer) over a small Go interface, Policy, that a worker implements; an
// in-process client (LocalClient) and a remote one (Dial), both
// workerpb.WorkerClient, which is all the trainer drives; and PromptFromStep, the
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
// accumulator. The server adapter owns what every worker shares: the order of
// calls (Configure first), locking (scoring calls run concurrently, calls that
// change the state run alone), the defaults of Step's options, atomic Save files,
// and the mapping of errors to gRPC status codes.
package worker
