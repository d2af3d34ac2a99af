# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Starts the ranks of a torch.distributed test (gloo, on CPU) as processes forked from
one fork server per test run, which imported torch, transformers' Qwen models, peft
and the worker once: a spawned rank imported them again, some four CPU-seconds each,
and a run of the tests starts some thirty ranks. Each rank is still a process of its
own, forked by a process that has run no torch operation and holds no other thread,
with the environment of the test that starts it (as a spawned rank has)."""

import multiprocessing
import os

import torch.multiprocessing as mp

# What the fork server imports before it forks a rank: what the ranks import while
# they run. Not the tests' modules, which define the ranks' functions (a rank
# unpickles its function by importing its module, a fraction of a second with these
# loaded): tests.test_policy sets torch's threads, which starts a thread, and the
# fork server must hold none.
PRELOAD = [
    "torch",
    "torch.distributed",
    "torch.distributed.fsdp",
    "torch.distributed.checkpoint",
    "transformers.models.auto.modeling_auto",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.qwen3.modeling_qwen3",
    "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
    "transformers.models.qwen2_5_vl.processing_qwen2_5_vl",
    "peft",
    "PIL.Image",
    "espo_worker.policy",
    "espo_worker.wire",
]

_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(PRELOAD)


def _run(rank, fn, env, args):
    # The environment of the test that started the ranks, as a spawned rank has it:
    # the fork server's is that of the test that started it.
    os.environ.clear()
    os.environ.update(env)
    fn(rank, *args)


def start(fn, args, nprocs):
    """Runs fn(rank, *args) in nprocs processes and waits for them, raising when one
    fails (torch.multiprocessing.start_processes)."""
    mp.start_processes(_run, args=(fn, dict(os.environ), args), nprocs=nprocs, start_method="forkserver")
