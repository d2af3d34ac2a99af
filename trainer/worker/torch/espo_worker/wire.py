# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The worker protocol's messages to and from the policy's plain calls.

Each function takes a request of the protocol (espo_worker.protocol), calls the
policy with plain values and returns the protocol's response: the server
(espo_worker.server) answers every call through them, and the policy never sees a
request or builds a response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import protocol as pb
from .policy import Answer, Description, Sample, StepOptions, Weighted

if TYPE_CHECKING:
    from .policy import Policy


def answer(a: pb.Answer) -> Answer:
    """The policy's Answer of a protocol answer."""
    return Answer(a.text, list(a.token_ids))


def generate(p: Policy, req: pb.GenerateRequest) -> pb.GenerateResponse:
    """Generate: req.samples answers of each prompt (1 when unset), at temperature
    req.temperature (1 when unset)."""
    synced = p.weight_sync_seconds()
    out = p.generate(list(req.prompts), samples=req.samples, temperature=req.temperature or 1.0, greedy=req.greedy,
                     seed=req.seed, max_tokens=req.max_tokens)
    resp = pb.GenerateResponse(weight_sync_seconds=p.weight_sync_seconds() - synced)
    for samples in out:
        cands = resp.candidates.add()
        for s in samples:
            add_sample(cands.samples.add(), s)
    return resp


def add_sample(dst: pb.Sample, s: Sample) -> None:
    """Writes s into dst, a Sample of a GenerateResponse."""
    dst.answer.text = s.answer.text
    dst.answer.token_ids.extend(s.answer.token_ids)
    dst.logprobs.extend(s.logprobs)
    dst.sampler_logprobs.extend(s.sampler_logprobs)


def logprobs(p: Policy, req: pb.LogProbsRequest) -> pb.LogProbsResponse:
    """LogProbs: each item's token ids with their current and reference log-probs."""
    out = p.logprobs([(it.prompt, answer(it.answer)) for it in req.items], reference=req.reference,
                     reference_only=req.reference_only)
    resp = pb.LogProbsResponse()
    for s in out:
        r = resp.items.add()
        r.token_ids.extend(s.token_ids)
        r.current.extend(s.current)
        r.reference.extend(s.reference)
    return resp


def backward(p: Policy, req: pb.BackwardRequest) -> tuple[float, int]:
    """Backward: the objective and the tokens of the items' gradient."""
    return p.backward([Weighted(it.prompt, answer(it.answer), list(it.token_weights), it.sequence_weight)
                       for it in req.items])


def step(p: Policy, req: pb.StepRequest) -> tuple[float, int]:
    """Step: the gradient's norm before clipping and the steps taken."""
    return p.step(StepOptions(learning_rate=req.learning_rate, max_grad_norm=req.max_grad_norm, beta1=req.beta1,
                              beta2=req.beta2, epsilon=req.epsilon, weight_decay=req.weight_decay,
                              gradient=req.gradient))


def describe(p: Policy) -> pb.InfoResponse:
    """Info: what the worker runs."""
    return info(p.describe())


def info(d: Description) -> pb.InfoResponse:
    """The InfoResponse of a Description."""
    return pb.InfoResponse(model=d.model, device=d.device, parameters=d.parameters,
                           reduces_gradients=d.reduces_gradients, steps=d.steps,
                           model_config_sha256=d.model_config_sha256, encoder=d.encoder,
                           encoder_sha256=d.encoder_sha256, sharded=d.sharded)
