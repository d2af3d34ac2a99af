# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The rollout engine: vLLM sampling the policy's answers in a process of its own.

The PyTorch worker (espo_worker.rollout) starts `python -m espo_engine` with the
engine environment's interpreter (its own lock: vLLM pins torch and transformers
versions the worker's do not share) and talks to it over an inherited, unnamed socket
pair: no port, no socket file. Only the standard library, vLLM, torch and
safetensors are imported here, never espo_worker, so the two sides share no Python
package but the wire format below (pickled dicts of plain types, and weights as
safetensors files in Hugging Face names).
"""
