# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Memory per worker of a training step, replicated on one worker and sharded (FSDP2
over gloo, on the CPU) on several, or hybrid (HSDP) in pods of --per-pod workers:

    python3 -m tests.random_models /tmp/wide --arch qwen3 --hidden 1024 --layers 8
    python3 -m bench.sharding_memory /tmp/wide [--workers 1,2,4] [--lora R] [--per-pod K]

Each worker takes a step on one prompt of its own after a first step (so that the
AdamW moments exist), and reports, as one JSON line per worker count with the
largest figure over the workers, in bytes:

- state: the tensors it keeps between steps, counted exactly from their local
  storage: the weights (frozen ones too), the reference and the AdamW moments;
- grads: the gradients it holds when the backward pass ends, counted the same way;
- backward, step: its peak resident memory during the backward pass and during the
  optimizer step (VmHWM, reset before each), less its resident memory before it:
  what each adds on top of what is kept (the gradients, the unit gathered, the
  activations, the optimizer's temporaries);
- rss: its resident memory before the step (the state, Python and torch).

The workers run with glibc's mmap threshold at 64 KiB, so that a freed tensor leaves
the resident memory at once and the peaks are the tensors', not the allocator's
cache. One worker is replicated, as sharding a group of one is.
"""

import argparse
import ctypes
import gc
import json
import os
import socket

import torch
import torch.multiprocessing as mp

from espo_worker import dist as distlib
from espo_worker import policy as policylib
from espo_worker import protocol as pb
from espo_worker import wire

PROMPT = "book a quiet hotel near the park for two nights next week, breakfast included"
ANSWER = "<answer>[{'action': 'click', 'point': [0.52, 0.31], 'input_text': 'no input text'}]</answer>"


def status(field):
    """A field of /proc/self/status, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def settle():
    """Frees what Python and the allocator hold but no tensor uses."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def local_bytes(t):
    t = t.to_local() if hasattr(t, "to_local") else t
    return t.numel() * t.element_size()


def state_bytes(p):
    weights = sum(local_bytes(q) for q in p.backend.model.parameters())
    reference = sum(local_bytes(r) for r in p.reference)
    moments = sum(local_bytes(v) for st in p.optimizer.state.values() for v in st.values() if torch.is_tensor(v))
    return weights + reference + moments


def backward(p, k):
    prompt = pb.Prompt(episode_id="bench", step_index=k, stage=pb.STAGE_GUI, instruction=PROMPT)
    wire.backward(p, pb.BackwardRequest(items=[pb.Weighted(prompt=prompt, answer=pb.Answer(text=ANSWER),
                                                           sequence_weight=1.0)]))


def step(p):
    wire.step(p, pb.StepRequest(learning_rate=1e-5))


def added_peak(fn):
    """The peak resident memory fn adds to what is resident before it."""
    settle()
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak resident memory
    fn()
    return status("VmHWM") - before


def worker(rank, world, port, model, lora, per_pod, out):
    torch.set_num_threads(1)
    group = distlib.Group(rank, world, "127.0.0.1", port, "gloo", timeout_s=600, per_pod=per_pod) if world > 1 else None
    p = policylib.Policy({"pretrained": model, "dtype": "float32", "sharding": "hybrid" if per_pod else "sharded"},
                         dist=group)
    p.configure(1, {"lora_r": str(lora)} if lora else {})
    backward(p, 0)
    step(p)
    settle()
    rss = status("VmRSS")
    r = {"backward": added_peak(lambda: backward(p, 1))}
    r["grads"] = sum(local_bytes(q.grad) for q in p.params if q.grad is not None)
    r["step"] = added_peak(lambda: step(p))
    out[rank] = dict(r, state=state_bytes(p), rss=rss)


def measure(model, world, lora, per_pod=0):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as mgr:
        out = mgr.dict()
        mp.start_processes(worker, args=(world, port, model, lora, per_pod, out), nprocs=world, start_method="spawn")
        ranks = [out[r] for r in range(world)]
    return {"workers": world, "sharded": world > 1, "per_pod": per_pod or world,
            **{k: max(r[k] for r in ranks) for k in ("state", "grads", "backward", "step", "rss")}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank (0: full fine-tuning)")
    ap.add_argument("--per-pod", type=int, default=0, help="hybrid sharding in pods of this many workers (0: sharded "
                                                            "over all)")
    a = ap.parse_args()
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"  # the workers' allocator: see the module's doc
    for n in [int(x) for x in a.workers.split(",")]:
        print(json.dumps(dict(measure(a.model, n, a.lora, a.per_pod), lora=a.lora)), flush=True)


if __name__ == "__main__":
    main()
