# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The ESPO objective J computed directly in torch, and its gradient by autograd.

This is the independent side of the cross-language check of the loss weights
(trainer/worker/torch/torch_test.go): the Go trainer turns log-probs into per-token
weights w_t = dJ/dlogp_t (espo.LossWeights) and the worker back-propagates
-sum w_t logp_t; here J itself is written from the formulas of docs/algorithm.md, per token t
of candidate s with advantage A_s:

    rho    = exp(clamp(logp - logp_old, -20, 20))
    L_clip = min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A);  for A < 0: max(L_clip, c A)
    d      = logp_ref - logp
    KL     = k1: -d   k2: d^2 / 2   k3: clamp(e^d - d - 1, -10, 10)
    f      = L_clip - beta KL
    J      = token-mean: sum f / T;  seq-mean-token-mean: mean_s (mean_t f);  seq-mean-token-sum: mean_s (sum_t f)

and differentiated by autograd through the worker's model. Usage:

    python3 -m tests.espo_objective IN.json OUT.json

IN: {"state": path written by Save, "prompts": [base64 Prompt], "items": [{"prompt": i,
"token_ids": [...], "old": [...], "adv": A}], "configs": [{"eps_low", "eps_high",
"dual_clip", "beta", "kl", "agg"}]}. OUT: {"results": [{"objective": J, "grad": dJ/dtheta
flattened in the worker's parameter order}]}.
"""

import base64
import json
import sys

import torch

from espo_worker import policy as policylib
from espo_worker import protocol as pb


def kl_term(logp, ref, kind):
    d = ref - logp
    if kind == "k1":
        return -d
    if kind == "k2":
        return d * d / 2
    if kind == "k3":
        return torch.clamp(torch.exp(d) - d - 1, -10, 10)
    raise ValueError(kind)


def objective(logps, olds, refs, advs, cfg):
    """J of one batch: lists (per sequence) of float64 tensors and floats."""
    fs = []
    for logp, old, ref, a in zip(logps, olds, refs, advs):
        rho = torch.exp(torch.clamp(logp - old, -20, 20))
        l_clip = torch.minimum(rho * a, torch.clamp(rho, 1 - cfg["eps_low"], 1 + cfg["eps_high"]) * a)
        if a < 0 and cfg["dual_clip"]:
            l_clip = torch.maximum(l_clip, torch.full_like(l_clip, cfg["dual_clip"] * a))
        f = l_clip
        if cfg["beta"]:
            f = f - cfg["beta"] * kl_term(logp, ref, cfg["kl"])
        fs.append(f)
    agg = cfg["agg"]
    if agg == "token-mean":
        return torch.cat(fs).sum() / sum(len(f) for f in fs)
    if agg == "seq-mean-token-mean":
        return sum(f.mean() if len(f) else f.sum() for f in fs) / len(fs)
    if agg == "seq-mean-token-sum":
        return sum(f.sum() for f in fs) / len(fs)
    raise ValueError(agg)


def main(inp, outp):
    spec = json.load(open(inp))
    p = policylib.Policy({})
    p.load(spec["state"])
    b = p.backend
    b.model.train()
    prompts = [pb.Prompt.FromString(base64.b64decode(s)) for s in spec["prompts"]]
    inputs = [b.prompt_inputs(pr) for pr in prompts]
    items = spec["items"]
    p.swap_reference()
    with torch.no_grad():
        refs = [b.token_logprobs(inputs[it["prompt"]], it["token_ids"]).double() for it in items]
    p.swap_reference()
    olds = [torch.tensor(it["old"], dtype=torch.float64) for it in items]
    advs = [float(it["adv"]) for it in items]
    results = []
    for cfg in spec["configs"]:
        for q in p.params:
            q.grad = None
        logps = [b.token_logprobs(inputs[it["prompt"]], it["token_ids"]).double() for it in items]
        j = objective(logps, olds, refs, advs, cfg)
        j.backward()
        results.append({"objective": float(j), "grad": p.flat_grad().tolist()})
    json.dump({"results": results}, open(outp, "w"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
