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

// Package torch holds the project's PyTorch policy worker, a Python package
// (espo_worker, beside this file) that serves the worker protocol for Hugging Face
// causal LMs and VLMs on CUDA, and the Go tests that drive it on CPU with a tiny
// torch model: the Go trainer trains it through SFT and ESPO over gRPC, Generate's
// log-probs equal LogProbs', and the gradient it applies equals the gradient of the
// ESPO objective computed in torch from the formulas (a cross-language check of
// espo.LossWeights). The tests run in the Python environment hack/setup-python.sh
// builds from the worker's locks (requirements.txt, requirements-test.txt; see
// test/pyenv), on first use, and fail without it.
//
// Run the worker with
//
//	cd trainer/worker/torch && python3 -m espo_worker --listen :50051 --model /models/qwen --device cuda
//
// docs/worker-protocol.md, "Running real models", describes the image, the options
// and several GPUs.
package torch
