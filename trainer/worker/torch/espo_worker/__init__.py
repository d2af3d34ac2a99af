# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The espo-operator PyTorch policy worker.

A differentiable log-prob engine that serves the project's gRPC worker protocol
(trainer/workerpb/worker.proto, docs/worker-protocol.md) for Hugging Face causal LMs
and VLMs, and for a tiny byte-level language model in plain torch that the CPU tests
use. All of ESPO stays in the Go trainer; this package only does model math.
"""

__all__ = ["prompt", "tiny", "models", "policy", "server", "dist"]
