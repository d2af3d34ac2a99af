# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Primes the step benchmark's random model, in place, so that both sides' steps
really train: a random model's answers never parse, every candidate of a group gets
the same reward, every advantage is 0 and the policy gradient with it. A few hundred
steps of cross-entropy teach it the benchmark's prompts' answers, half the time the
demonstrated one and half another of the episode, each padded with spaces (which
espo.ParseAnswer trims) to exactly the answer length, or cut there (a long pool-step
answer, which then never parses), and never ended by the stop token. Sampled at
temperature 1 it then answers in the GUI-R1 format, right or wrong by chance, or
garbles one, and fills the answer length: both sides generate the same number of
tokens without suppressing the stop token. Each step takes --batch prompts; the
gradient flows through the answer's positions only (the prompt's keys and values come
from a pass without gradient, with the current weights), a fraction of the cost of
back-propagating through prompts of a thousand tokens and more. Usage:

    python3 -m bench.prime MODEL DATA [--steps 200] [--lr 1e-3] [--batch 4]

prints {"seconds", "loss_first", "loss_last", "parse_rate"} as JSON.
"""

import argparse
import json
import random
import time

import torch

from espo_worker import backends

from . import common


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.prime")
    ap.add_argument("model")
    ap.add_argument("data")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=4, help="prompts per step")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    start = time.perf_counter()
    d = common.load(a.data)
    torch.manual_seed(a.seed)
    rnd = random.Random(a.seed)
    backend = backends.HFBackend(a.model, "cpu", dtype="float32")  # the worker's model and prompt token ids
    tok, model = backend.tok, backend.model
    space, length = common.pad_id(tok), d["tokens"]
    items = []
    for it in d["prompts"]:
        p = backend.prompt_inputs(it["message"])["ids"]
        targets = []
        for text in (it["answer"], it["wrong"]):
            ids = tok(text, add_special_tokens=False)["input_ids"][:length]
            targets.append(ids + [space] * (length - len(ids)))
        items.append((p, targets))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    model.train()
    losses, batch = [], min(a.batch, len(items))
    for _ in range(a.steps):
        opt.zero_grad()
        total = 0.0
        for p, targets in rnd.sample(items, batch):
            t = targets[rnd.randrange(2)]
            with torch.no_grad():  # the prompt's keys and values, with the current weights
                cache = model(input_ids=torch.tensor([p[:-1]]), use_cache=True).past_key_values
            out = model(input_ids=torch.tensor([p[-1:] + t[:-1]]), past_key_values=cache, use_cache=True)
            loss = torch.nn.functional.cross_entropy(out.logits[0], torch.tensor(t)) / batch
            loss.backward()
            total += float(loss.detach())
        opt.step()
        losses.append(total)
    model.eval()
    parsed = total = 0
    with torch.no_grad():
        for p, _ in items:
            out = model.generate(input_ids=torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                                 do_sample=True, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=length,
                                 num_return_sequences=4, pad_token_id=tok.pad_token_id)
            for row in out[:, len(p):]:
                total += 1
                parsed += common.action_of(tok.decode(row, skip_special_tokens=True)) is not None
    model.save_pretrained(a.model)
    print(json.dumps({"seconds": time.perf_counter() - start, "loss_first": losses[0], "loss_last": losses[-1],
                      "parse_rate": parsed / max(total, 1)}))


if __name__ == "__main__":
    main()
