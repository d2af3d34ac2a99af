# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The torch worker as the step benchmark runs it: python3 -m espo_worker unchanged,
with what the benchmark needs to know about its calls that the worker's own stats
($ESPO_WORKER_STATS: seconds per call, tokens generated and trained) do not say:

- the token positions the training model computes in each call (every forward pass's
  input rows times columns, padding included, counted by a forward pre-hook), so the
  table can say how often each side encodes the prompts;
- inside Generate: the seconds and token positions of the trainer's scoring of the
  samples (their log-probs, counted as "Scoring" apart from "Generate"), and with
  the vLLM engine the seconds of the engine's sampling, of the weight push before it
  (VLLMEngine.push_seconds, .pushes) and the prompt tokens sent to the engine;
- torch's thread count in the worker.

They are written as JSON to $ESPO_BENCH_PHASES after every Step (the last call of a
training step), inside that call: a few dozen microseconds of a step of seconds.
Usage: python3 -m bench.worker ARGS... (the arguments of python3 -m espo_worker).
"""

import json
import os
import sys
import time

import torch

from espo_worker import backends
from espo_worker import policy as policylib
from espo_worker import rollout as rolloutlib
from espo_worker.__main__ import main

PATH = os.environ.get("ESPO_BENCH_PHASES", "")

stats = {"encoded": {}, "scoring_seconds": 0.0, "engine_seconds": 0.0, "engine_calls": 0, "engine_prompt_tokens": 0,
         "engine_samples": 0, "push_seconds": 0.0, "pushes": 0, "threads": 0}
current = ["other"]


def count(module, args, kwargs):
    x = kwargs.get("input_ids")
    if x is None and args:
        x = args[0]
    if x is None:
        x = kwargs.get("inputs_embeds")
    if torch.is_tensor(x):
        n = x.shape[0] * x.shape[1] if x.dim() >= 2 else x.numel()
        stats["encoded"][current[0]] = stats["encoded"].get(current[0], 0) + int(n)


_init = backends.HFBackend.__init__


def init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.model.register_forward_pre_hook(count, with_kwargs=True)


backends.HFBackend.__init__ = init


def phase(name, fn):
    def call(self, *args, **kwargs):
        current[0] = name
        try:
            return fn(self, *args, **kwargs)
        finally:
            current[0] = "other"
            if name == "Step":
                write(self)
    return call


def write(policy):
    if policy.rollout is not None:
        stats["push_seconds"], stats["pushes"] = policy.rollout.push_seconds, policy.rollout.pushes
    stats["threads"] = torch.get_num_threads()
    if PATH:
        with open(PATH + ".tmp", "w") as f:
            json.dump(stats, f)
        os.replace(PATH + ".tmp", PATH)


for _name, _method in (("Generate", "generate"), ("LogProbs", "logprobs"), ("Backward", "backward"),
                       ("Step", "step")):
    setattr(policylib.Policy, _method, phase(_name, getattr(policylib.Policy, _method)))

_scores = policylib.Policy._scores


def scores(self, groups, n):
    if current[0] != "Generate":
        return _scores(self, groups, n)
    start = time.perf_counter()
    current[0] = "Scoring"
    try:
        return _scores(self, groups, n)
    finally:
        current[0] = "Generate"
        stats["scoring_seconds"] += time.perf_counter() - start


policylib.Policy._scores = scores

_generate = rolloutlib.VLLMEngine.generate


def engine_generate(self, prompts, n, *args, **kwargs):
    start = time.perf_counter()
    try:
        return _generate(self, prompts, n, *args, **kwargs)
    finally:
        stats["engine_seconds"] += time.perf_counter() - start
        stats["engine_calls"] += 1
        stats["engine_prompt_tokens"] += sum(len(p["ids"]) for p in prompts)
        stats["engine_samples"] += n * len(prompts)


rolloutlib.VLLMEngine.generate = engine_generate

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
