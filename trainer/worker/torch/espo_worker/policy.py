# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The policy: the state of one worker and the math of every protocol call.

State: the model (a Backend), the reference (a frozen copy of the trainable tensors:
all weights for full fine-tuning, the adapters for LoRA, whose frozen base weights
are shared), torch.optim.AdamW over the trainable tensors, the step count, and the
gradient accumulated in each tensor's .grad. Scoring under the reference swaps the
reference tensors in, scores and swaps back; with LoRA before SnapshotReference this
is the base model (adapters start at zero), afterwards the snapshot.

The model's settings are a config.WorkerConfig: the command line's (and the
environment's), with the trainer's Configure options in their place. The calls take
and return plain values (the dataclasses below, lists and tensors); prompts are the
protocol's Prompt records, which espo_worker.prompt renders. espo_worker.wire turns
the protocol's requests into these calls and their results into its responses.

Every call runs under one lock (one device per worker process). The server
(espo_worker.server) maps InvalidError to INVALID_ARGUMENT, NotConfiguredError and
modelfiles.ModelIncompleteError (a model folder that lacks files) to
FAILED_PRECONDITION, a permanent refusal (espo_worker.refusal) to its code with its
reason, and everything else to INTERNAL.
"""

from __future__ import annotations

import collections
import hashlib
import inspect
import math
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import torch

from . import backends
from . import dist as distlib
from . import encoder as encoderlib
from . import export as exportlib
from . import protocol as pb
from . import rollout as rolloutlib
from . import sharding as shardinglib
from . import state as statelib
from .config import InvalidError, WorkerConfig, is_runtime_option

if "weights_only" not in inspect.signature(torch.load).parameters:
    raise ImportError("espo_worker needs torch >= 1.13, whose torch.load(weights_only=True) loads tensors without "
                      "unpickling arbitrary objects; this is torch %s" % torch.__version__)


__all__ = ["Answer", "Description", "InvalidError", "NotConfiguredError", "Policy", "Sample", "Scored", "StepOptions",
           "Weighted"]

# The answers of one prompt: its model inputs, and each answer's index among the
# call's answers with its token ids.
Group = tuple[backends.PromptInputs, list[tuple[int, list[int]]]]


class NotConfiguredError(RuntimeError):
    """A call before Configure or Load (FAILED_PRECONDITION)."""


@dataclass
class Answer:
    """An answer to a prompt: its token ids, or (without them) its text."""

    text: str = ""
    token_ids: list[int] = field(default_factory=list)


@dataclass
class Sample:
    """A sampled answer: its text and token ids, the policy's log-prob of each token
    and, when a serving engine sampled it, the engine's."""

    answer: Answer
    logprobs: list[float]
    sampler_logprobs: list[float] = field(default_factory=list)


@dataclass
class Scored:
    """An answer's token ids with their log-probs under the current policy (empty when
    not asked for) and the reference policy (empty when not asked for)."""

    token_ids: list[int]
    current: list[float] = field(default_factory=list)
    reference: list[float] = field(default_factory=list)


@dataclass
class Weighted:
    """An answer to train on: a weight per token, or one for every token."""

    prompt: pb.Prompt
    answer: Answer
    token_weights: list[float] = field(default_factory=list)
    sequence_weight: float = 0.0


@dataclass
class StepOptions:
    """An optimizer step: AdamW's learning rate, betas (0: 0.9, 0.999), epsilon (0:
    1e-8) and weight decay; the gradient-norm clip (0: none); and the batch's gradient
    when the trainer sums it (empty: the workers all-reduce their own)."""

    learning_rate: float
    max_grad_norm: float = 0.0
    beta1: float = 0.0
    beta2: float = 0.0
    epsilon: float = 0.0
    weight_decay: float = 0.0
    gradient: Sequence[float] = ()


@dataclass
class Description:
    """What the worker runs: its model, device, trainable parameters and steps, and the
    digests of the model's and the encoder's configurations."""

    model: str
    device: str
    parameters: int
    reduces_gradients: bool
    steps: int
    sharded: bool
    model_config_sha256: str
    encoder: str
    encoder_sha256: str


# MAX_EMBED_TEXTS bounds the texts of one Embed call (EmbedRequest.texts).
MAX_EMBED_TEXTS = 2048


def prompt_seed(seed: int, prompt: pb.Prompt) -> int:
    """The sampling seed of one prompt: SHA-256 of (seed, episode id, step index), so
    a prompt's candidates do not depend on the batch it is in."""
    h = hashlib.sha256(struct.pack("<Q", seed & (2 ** 64 - 1)) + prompt.episode_id.encode() +
                       struct.pack("<i", prompt.step_index))
    return int.from_bytes(h.digest()[:8], "little") & (2 ** 63 - 1)


class Policy:
    def __init__(self, defaults: WorkerConfig | Mapping[str, Any], device: str = "cpu",
                 dist: distlib.Single | None = None) -> None:
        """defaults: the command line's settings (a WorkerConfig, or its fields by name)."""
        self.defaults = defaults if isinstance(defaults, WorkerConfig) else WorkerConfig.from_mapping(defaults)
        self.device = device
        self.dist = dist or distlib.Single()
        self.lock = threading.RLock()
        self.backend: backends.Backend | None = None
        self.config: WorkerConfig | None = None
        self.sharding: shardinglib.Replicated = shardinglib.Replicated()
        self.params: list[torch.nn.Parameter] = []
        self.reference: list[torch.Tensor] = []
        self.optimizer: torch.optim.AdamW | None = None
        self.steps = 0
        self.encoder: encoderlib.SentenceEncoder | None = None
        # The vLLM engine (rollout_engine=vllm), and the version of the weights it
        # serves: weights_version counts every change of the trainable weights (build,
        # step, load), and Generate pushes them first when the two differ.
        self.rollout: backends.Sampler | None = None
        self.weights_version = 0
        self.rollout_version = 0
        self.score_seconds = 0.0

    # -- configuration ---------------------------------------------------------

    @property
    def options(self) -> dict[str, Any] | None:
        """The settings of the model built, by name, as a state file records them."""
        return self.config.options() if self.config is not None else None

    @property
    def sharded(self) -> bool:
        """Whether the workers hold the model sharded (espo_worker.sharding)."""
        return self.sharding.mode != shardinglib.REPLICATED

    @staticmethod
    def new_backend(c: WorkerConfig, device: str, place: bool = True) -> backends.Backend:
        """The model of c, for device, as it is before any training step; place False
        leaves an HF model's weights on the CPU (HFBackend)."""
        if c.tiny:
            return backends.TinyBackend(device, embed=c.tiny_embed, hidden=c.tiny_hidden,
                                        max_new_tokens=c.answer_cap, max_prompt_tokens=c.prompt_cap)
        return backends.HFBackend(c.pretrained, device, dtype=c.dtype, lora_r=c.lora_r, lora_alpha=c.lora_alpha,
                                  lora_dropout=c.lora_dropout, lora_targets=c.lora_targets,
                                  max_new_tokens=c.answer_cap, max_prompt_tokens=c.prompt_cap,
                                  gradient_checkpointing=c.gradient_checkpointing,
                                  attn_implementation=c.attn_implementation, place=place)

    def build(self, c: WorkerConfig, seed: int) -> None:
        torch.manual_seed(seed & (2 ** 63 - 1))
        b = self.new_backend(c, self.device, place=not shardinglib.shards(c.sharding, self.dist))
        self.backend, self.config = b, c
        # every rank starts from rank 0's weights (a LoRA adapter's initialisation)
        self.dist.broadcast_tensors([p for p in b.model.parameters() if p.requires_grad])
        self.sharding = shardinglib.new(c.sharding, self.dist, self.device)
        self.sharding.wrap(b.model)
        b.sharded = self.sharded
        self.params = [p for p in b.model.parameters() if p.requires_grad]
        self.reference = [p.detach().clone() for p in self.params]
        self.optimizer = torch.optim.AdamW(self.params, lr=0.0, weight_decay=0.0)
        self.steps = 0
        self.start_rollout(c, seed)

    def start_rollout(self, c: WorkerConfig, seed: int) -> None:
        """Starts the vLLM engine on the model folder when c asks for it (closing the
        one of an earlier Configure either way). Every rank has an engine of its own."""
        self.close_rollout()
        self.weights_version += 1
        if not c.vllm:
            return
        if c.tiny:
            raise InvalidError("option rollout_engine=vllm: the test model tiny is no Hugging Face model vLLM can "
                               "serve; use the huggingface engine or a model folder")
        try:
            self.rollout = rolloutlib.VLLMEngine(
                c.pretrained, dtype=c.dtype, seed=seed, device=self.device,
                gpu_memory_utilization=c.vllm_gpu_memory_utilization, max_model_len=c.vllm_max_model_len,
                enforce_eager=c.vllm_enforce_eager, cpu_kv_cache_gib=c.vllm_cpu_kv_cache_gib, lora_rank=c.lora_r)
        except rolloutlib.EngineUnavailableError as e:
            raise InvalidError(str(e)) from None

    def with_runtime(self, c: WorkerConfig) -> WorkerConfig:
        """c (a state's) with the runtime settings of the worker's configuration in
        place of the state's: the rollout engine and the sharding are how the model is
        run, not part of the model a state holds, so a state written with another
        engine or sharding (an initial checkpoint of a huggingface run, a checkpoint of
        a replicated run) keeps this worker's."""
        if self.config is None:
            return c
        return c.replace({k: v for k, v in self.config.options().items() if is_runtime_option(k)})

    def rollout_stats(self) -> dict[str, Any] | None:
        """The engine's figures so far, or None without one: weight pushes and their
        seconds, the engine's sampling seconds and the trainer's scoring seconds of
        its answers."""
        r = self.rollout
        if r is None:
            return None
        return {"engine": "vllm", "pushes": r.pushes, "push_seconds": r.push_seconds, "sample_seconds": r.sample_seconds,
                "score_seconds": self.score_seconds}

    def weight_sync_seconds(self) -> float:
        """The seconds spent so far copying the weights into the engine (0 without one)."""
        return self.rollout.push_seconds if self.rollout is not None else 0.0

    def close_rollout(self) -> None:
        if self.rollout is not None:
            self.rollout.close()
            self.rollout = None

    def sync_rollout(self) -> None:
        """Pushes the trainable weights to the engine when they changed since the last
        push: the LoRA adapter under a new id, or every trainable tensor whole. Sharded
        workers gather them one unit at a time (every worker pushes to its engine)."""
        if self.rollout is None or self.rollout_version == self.weights_version:
            return
        parts = self.sharding.trainable_parts(self.backend.model)
        if self.backend.lora:
            self.rollout.push_lora(self.backend.model, {k: v for part in parts for k, v in part.items()}
                                   if self.sharded else None)
        else:
            self.rollout.push_full(parts)
        self.rollout_version = self.weights_version

    def configure(self, seed: int, options: Mapping[str, str]) -> None:
        with self.lock:
            c = self.defaults.with_options(options)
            self.dist.init()
            self.backend = None
            self.build(c, seed)
            self.load_encoder(c.embedder_model)

    def load_encoder(self, folder: str) -> None:
        """Loads the sentence encoder of folder for Embed (none for ""); one already
        loaded from the same folder is kept."""
        if not folder:
            self.encoder = None
        elif self.encoder is None or self.encoder.folder != folder:
            try:
                self.encoder = encoderlib.SentenceEncoder(folder, self.device)
            except (encoderlib.EncoderError, OSError) as e:
                raise InvalidError("option embedder_model: %s" % e) from None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The encoder's embeddings of texts (lists of floats); a blank text is the zero
        vector."""
        with self.lock:
            if self.encoder is None:
                raise NotConfiguredError("embed: no sentence encoder: set spec.rewards.intent.embedder.worker "
                                         "(Configure option embedder_model)")
            if len(texts) > MAX_EMBED_TEXTS:
                raise InvalidError("embed: %d texts, at most %d in one call" % (len(texts), MAX_EMBED_TEXTS))
            todo = [i for i, t in enumerate(texts) if t.strip()]
            out = [[0.0] * self.encoder.dim for _ in texts]
            if todo:
                for i, v in zip(todo, self.encoder.embed([texts[i] for i in todo]).tolist()):
                    out[i] = v
            return out

    def describe(self) -> Description:
        b = self.backend
        return Description(
            model=b.name if b else "torch worker (not configured)",
            device=self.device + (" x%d ranks" % self.dist.world if self.dist.world > 1 else ""),
            parameters=sum(p.numel() for p in self.params),
            reduces_gradients=self.dist.world > 1, steps=self.steps, sharded=self.sharded,
            model_config_sha256=b.config_sha256 if b else "",
            encoder=self.encoder.name if self.encoder else "", encoder_sha256=self.encoder.sha256 if self.encoder else "")

    def need(self) -> None:
        if self.backend is None:
            raise NotConfiguredError("worker: not configured: call Configure (or Load) first")

    # -- scoring ---------------------------------------------------------------

    def answer_ids(self, answer: Answer) -> list[int]:
        ids = self._answer_ids(answer)
        banned = set(self.backend.banned_ids)
        if banned and banned.intersection(ids):
            raise InvalidError("answer holds image or video placeholder tokens %s, which only a prompt may hold" %
                               sorted(banned.intersection(ids)))
        return ids

    def _answer_ids(self, answer: Answer) -> list[int]:
        if answer.token_ids:
            vocab = self.backend.vocab_size
            ids = list(answer.token_ids)
            if any(i < 0 or i >= vocab for i in ids):
                raise InvalidError("answer token ids outside the vocabulary [0, %d)" % vocab)
            return ids
        if not answer.text:
            raise InvalidError("answer has neither token ids nor text")
        return self.backend.answer_ids(answer.text)

    def _grouped(self, items: Sequence[tuple[pb.Prompt, list[int]]]) -> list[Group]:
        """items, (prompt, token ids) pairs, as groups of the items that share a prompt,
        in the order of first appearance: [(inputs, [(index, ids), ...]), ...]. Each
        prompt is turned into model inputs (its image processed) once."""
        groups = collections.OrderedDict()
        for i, (prompt, ids) in enumerate(items):
            key = prompt.SerializeToString(deterministic=True)
            if key not in groups:
                groups[key] = (self.backend.prompt_inputs(prompt), [])
            groups[key][1].append((i, ids))
        return list(groups.values())

    def _scores(self, groups: Sequence[Group], n: int) -> list[list[float]]:
        """The log-probs (lists of floats) of the n answers of groups, by index, each
        group scored in one batch (Backend.score_group)."""
        out = [None] * n
        with torch.no_grad():
            for inputs, members in groups:
                logps = self.backend.score_group(inputs, [ids for _, ids in members])
                for (i, _), lp in zip(members, logps):
                    out[i] = lp.double().cpu().tolist()
        return out

    def swap_reference(self) -> None:
        with torch.no_grad():
            for p, r in zip(self.params, self.reference):
                tmp = p.detach().clone()
                p.copy_(r)
                r.copy_(tmp)

    def generate(self, prompts: Sequence[pb.Prompt], samples: int = 1, temperature: float = 1.0, greedy: bool = False,
                 seed: int = 0, max_tokens: int = 0) -> list[list[Sample]]:
        """Samples samples answers of each prompt (at most max_tokens each; 0: the
        model's cap) and their per-token log-probs, the answers of a prompt scored
        together as logprobs scores them; seed and each prompt's episode and step seed
        its answers (prompt_seed)."""
        with self.lock:
            self.need()
            n = max(samples, 1)
            if temperature < 0 or samples < 0 or max_tokens < 0:
                raise InvalidError("generate: negative samples, temperature or max_tokens")
            self.backend.model.eval()
            if self.rollout is not None:
                return self.generate_with_engine(prompts, n, temperature, greedy, seed, max_tokens)
            with self.sharding.gathered(self.backend.model):
                out = []
                for prompt in prompts:
                    inputs = self.backend.prompt_inputs(prompt)
                    g = torch.Generator().manual_seed(prompt_seed(seed, prompt))
                    answers = self.backend.sample(inputs, n, temperature, greedy, g, max_tokens)
                    scores = self._scores([(inputs, list(enumerate(answers)))], len(answers))
                    out.append([Sample(Answer(self.backend.decode_answer(ids), ids), lp)
                                for ids, lp in zip(answers, scores)])
                return out

    def generate_with_engine(self, prompts: Sequence[pb.Prompt], n: int, temperature: float, greedy: bool, seed: int,
                             max_tokens: int) -> list[list[Sample]]:
        """generate, sampled by the vLLM engine in one batch of every prompt: each
        sample carries the engine's per-token log-probs (sampler_logprobs) beside the
        training model's (logprobs), which score the answers as logprobs does (sharded,
        one unit gathered at a time, as many passes as the busiest worker)."""
        self.sync_rollout()
        b = self.backend
        inputs = [b.prompt_inputs(p) for p in prompts]
        cap = max_tokens or b.max_new_tokens
        self.check_engine_context(inputs, cap)
        sampled = self.rollout.generate(
            [dict(b.engine_prompt(p, x), seed=prompt_seed(seed, p)) for p, x in zip(prompts, inputs)],
            n, temperature, greedy, cap, b.eos_ids, b.banned_ids) if prompts else []
        start = time.perf_counter()
        kept, groups = [], []
        for x, answers in zip(inputs, sampled):
            group = []
            for ids, lps in answers:
                ids = b.strip_answer(ids, cap)
                group.append((len(kept), ids))
                kept.append((ids, lps[:len(ids)]))
            groups.append((x, group))
        scores = self._scores_in_step(groups, len(kept), self.sharding.passes(len(groups)))
        samples = [Sample(Answer(b.decode_answer(ids), ids), lp, list(lps)) for (ids, lps), lp in zip(kept, scores)]
        self.score_seconds += time.perf_counter() - start
        return [[samples[i] for i, _ in group] for _, group in groups]

    def check_engine_context(self, inputs: Sequence[backends.PromptInputs], cap: int) -> None:
        """Refuses (InvalidError) a prompt that with an answer of cap tokens is longer
        than the engine's context (option vllm_max_model_len, when set), naming the
        setting: the engine would refuse it, and every restart would meet it again."""
        limit = self.config.vllm_max_model_len
        longest = max((len(x["ids"]) for x in inputs), default=0)
        if limit and longest + cap > limit:
            raise InvalidError("generate: a prompt of %d tokens with an answer of up to %d is longer than the rollout "
                               "engine's context of %d tokens (spec.model.rollout.maxModelLen): raise maxModelLen to "
                               "at least %d, or bound the prompts with spec.model.maxPromptTokens" %
                               (longest, cap, limit, longest + cap))

    def logprobs(self, items: Sequence[tuple[pb.Prompt, Answer]], reference: bool = False,
                 reference_only: bool = False) -> list[Scored]:
        """Token ids of each answer with their log-probs under the current policy (left
        empty when reference_only) and, when reference, the reference policy. The
        answers of one prompt are scored in one batch: the candidates of a prompt, sent
        as generate returned them, get generate's log-probs bit for bit."""
        with self.lock:
            self.need()
            self.backend.model.eval()
            ids = [self.answer_ids(a) for _, a in items]
            groups = self._grouped([(prompt, a) for (prompt, _), a in zip(items, ids)])
            out = [Scored(a) for a in ids]
            passes = self.sharding.passes(len(groups))
            if not reference_only:
                for r, lp in zip(out, self._scores_in_step(groups, len(ids), passes)):
                    r.current = lp
            if reference:
                self.swap_reference()  # the shards' values: a sharded pass gathers from them
                try:
                    for r, lp in zip(out, self._scores_in_step(groups, len(ids), passes)):
                        r.reference = lp
                finally:
                    self.swap_reference()
            return out

    def _scores_in_step(self, groups: Sequence[Group], n: int, passes: int) -> list[list[float]]:
        """_scores, then idle forward passes up to passes: sharded workers gather one
        unit at a time, so each runs as many passes as the busiest (espo_worker.sharding)."""
        with self.sharding.stepwise():
            out = self._scores(groups, n)
            with torch.no_grad():
                for _ in range(passes - len(groups)):
                    self._idle_pass(backward=False)
            return out

    # -- training --------------------------------------------------------------

    def backward(self, items: Sequence[Weighted]) -> tuple[float, int]:
        """Accumulates the gradient of -sum_items sum_t w_t logp_t, the answers of a
        prompt scored in one batch and differentiated together; returns the objective
        sum w_t logp_t and the number of tokens."""
        with self.lock:
            self.need()
            pairs, weights = [], []
            for i, it in enumerate(items):
                ids = self.answer_ids(it.answer)
                if it.token_weights:
                    if len(it.token_weights) != len(ids):
                        raise InvalidError("backward: item %d has %d token weights for %d tokens" %
                                           (i, len(it.token_weights), len(ids)))
                    w = list(it.token_weights)
                else:
                    w = [it.sequence_weight] * len(ids)
                if not all(math.isfinite(x) for x in w):
                    raise InvalidError("backward: item %d has a non-finite weight" % i)
                pairs.append((it.prompt, ids))
                weights.append(w)
            groups = self._grouped(pairs)
            passes = self.sharding.passes(len(groups))  # before any pass: it is a collective too
            self.backend.model.train()
            objective, tokens = 0.0, 0
            for inputs, members in groups:
                logps = self.backend.score_group(inputs, [ids for _, ids in members])
                obj = torch.stack([self._weighted(lp, weights[i]) for (i, _), lp in zip(members, logps)]).sum()
                (-obj).backward()
                objective += float(obj.detach())
                tokens += sum(len(ids) for _, ids in members)
            for _ in range(passes - len(groups)):
                self._idle_pass()
            return objective, tokens

    def _idle_pass(self, backward: bool = True) -> None:
        """A forward (and backward) pass of weight 0 on a one-token answer to an empty
        prompt: a sharded worker with fewer passes than another runs these, so that
        every worker runs the same gathers and reduce-scatters (espo_worker.sharding)."""
        b = self.backend
        logps = b.score_group(b.prompt_inputs(pb.Prompt(stage=pb.STAGE_GUI)), [list(b.eos_ids[:1])])
        if backward:
            (logps[0].sum() * 0.0).backward()

    @staticmethod
    def _weighted(logp: torch.Tensor, w: Sequence[float]) -> torch.Tensor:
        return (torch.tensor(w, dtype=torch.float64, device=logp.device) * logp.double()).sum()

    def flat_grad(self) -> torch.Tensor:
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).float().cpu()
                          for p in self.params]) if self.params else torch.zeros(0)

    def gradients(self) -> torch.Tensor:
        with self.lock:
            self.need()
            return self.flat_grad()

    def step(self, o: StepOptions) -> tuple[float, int]:
        """Applies AdamW to the batch's gradient, clipped to o.max_grad_norm; returns the
        gradient's norm before clipping and the steps taken."""
        with self.lock:
            self.need()
            beta1, beta2, eps = o.beta1 or 0.9, o.beta2 or 0.999, o.epsilon or 1e-8
            if o.gradient:
                n = sum(p.numel() for p in self.params)
                if len(o.gradient) != n:
                    raise InvalidError("step: gradient has %d values, the model %d parameters" % (len(o.gradient), n))
                flat = torch.tensor(o.gradient, dtype=torch.float32)
                off = 0
                for p in self.params:
                    k = p.numel()
                    p.grad = flat[off:off + k].view_as(p).to(device=p.device, dtype=p.dtype)
                    off += k
            else:
                for p in self.params:
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                # the trainer's loss weights are normalised over the whole batch: SUM
                self.sharding.reduce_gradients([p.grad for p in self.params], self.dist)
            norm = self.sharding.norm([p.grad for p in self.params])
            if not math.isfinite(norm):
                self.optimizer.zero_grad(set_to_none=True)
                raise RuntimeError("step: the gradient norm is %r; step skipped" % norm)
            if o.max_grad_norm > 0:
                coef = min(1.0, o.max_grad_norm / (norm + 1e-6))
                if coef < 1.0:
                    for p in self.params:
                        p.grad.mul_(coef)
            for g in self.optimizer.param_groups:
                g.update(lr=o.learning_rate, betas=(beta1, beta2), eps=eps, weight_decay=o.weight_decay)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.steps += 1
            self.weights_version += 1
            return norm, self.steps

    def snapshot_reference(self) -> None:
        with self.lock:
            self.need()
            with torch.no_grad():
                for p, r in zip(self.params, self.reference):
                    r.copy_(p)

    # -- state -----------------------------------------------------------------

    def export(self, dest: str | None, merge: bool = False,
               max_shard_size: str | int = "5GB") -> exportlib.Manifest | None:
        """Writes the current policy to the folder dest as a Hugging Face model
        (espo_worker.export): the LoRA adapter, and the merged model when merge is set,
        or the fully fine-tuned model. Sharded, every worker gathers the whole weights
        (each must call it) and the first writes them; None (the others) writes
        nothing."""
        with self.lock:
            self.need()
            if not isinstance(self.backend, backends.HFBackend):
                raise InvalidError("export: the test model tiny is no Hugging Face model; export a model folder's run")
            backend = self.whole_backend() if self.sharded else self.backend
            if dest is None:
                return None
            return exportlib.export(backend, dest, step=self.steps, base=self.config.pretrained, merge=merge,
                                    max_shard_size=max_shard_size)

    def whole_backend(self) -> backends.HFBackend | None:
        """A sharded model's whole weights in a model of their own, on the CPU, on the
        first worker (None on the others, which take part in gathering them)."""
        whole = {k: self.sharding.whole(v) for k, v in self.backend.model.state_dict().items()}
        if self.dist.rank != 0:
            return None
        b = self.new_backend(self.config, "cpu")
        b.model.load_state_dict(whole)
        return b

    def whole_state(self) -> statelib.State:
        """The full state, whole tensors however the workers hold them (sharded, every
        worker gathers: each must call it)."""
        whole = self.sharding.whole
        opt = self.optimizer.state_dict()
        state = {i: {k: whole(v) if torch.is_tensor(v) else v for k, v in e.items()} for i, e in opt["state"].items()}
        return statelib.State(self.options, [whole(p) for p in self.params], [whole(r) for r in self.reference],
                              {"state": state, "param_groups": opt["param_groups"]}, self.steps)

    def save(self, f: str | IO[bytes] | None) -> None:
        """Writes the full state to f as one state file (espo_worker.state); None (a
        sharded worker but the first) takes part in gathering it and writes nothing."""
        with self.lock:
            self.need()
            state = statelib.file_content(self.whole_state())
            if f is not None:
                torch.save(state, f)

    def save_shards(self, path: str) -> int:
        """Writes the state as a sharded state folder at path (espo_worker.state), each
        worker of the sharded group its own shards: every worker calls it, with the
        same path, which each must be able to write. Returns the bytes written (the
        folder's on worker 0, this worker's shards' on the others)."""
        with self.lock:
            self.need()
            opt = self.optimizer.state_dict()
            meta = statelib.folder_meta(self.options, self.steps, statelib.optimizer_layout(opt, self.params),
                                        self.dist.world)
            return statelib.save_folder(path, statelib.folder_tensors(self.params, self.reference, opt), meta,
                                        self.dist.rank)

    def load(self, path: str | IO[bytes], seed: int = 0, overrides: Mapping[str, Any] | None = None,
             confine: Callable[[str], str] | None = None) -> int:
        """Restores a state Save or SaveShards wrote, from path: a state file's or a
        sharded state folder's path, or a file object (server.InlineState, a state sent
        inline). With several ranks, rank 0 reads it (only it may have the checkpoint
        volume) and broadcasts the state, except that sharded ranks read their shards
        of a sharded state folder each, at the path confine (given) admits. overrides
        (typed settings by name) replace the state's: a model folder that is elsewhere
        on this machine than where the state was written, say."""
        with self.lock:
            self.dist.init()
            st, meta = None, None
            if self.dist.rank == 0:
                st, meta = _read(path)
            meta = self.dist.broadcast_object(meta)
            options = meta["options"] if meta else self.dist.broadcast_object(st.options if st else None)
            c = self.with_runtime(WorkerConfig.from_mapping(options))
            if overrides:
                c = c.replace(overrides)
            if self.backend is None or c != self.config:
                self.build(c, seed)
            if meta and self.sharded:
                return self._load_own_shards(path if self.dist.rank == 0 or confine is None else confine(path), meta)
            if meta and self.dist.rank == 0:
                st = statelib.read_whole(path, meta)
            if self.sharded:
                return self._load_shards(st, path)
            if st is not None:
                if len(st.params) != len(self.params):
                    raise IOError("load %s: %d tensors, the model has %d" % (path, len(st.params), len(self.params)))
                with torch.no_grad():
                    for p, v in zip(self.params, st.params):
                        p.copy_(v)
                    for r, v in zip(self.reference, st.reference):
                        r.copy_(v)
                self.optimizer.load_state_dict(st.optimizer)
                self.steps = st.steps
            self.dist.broadcast_tensors(self.params)
            self.dist.broadcast_tensors(self.reference)
            self.steps = int(self.dist.broadcast_object(self.steps))
            self.dist.broadcast_optimizer(self.optimizer, self.params)
            return self._loaded()

    def _loaded(self) -> int:
        """Clears the gradients after a load; returns the steps loaded."""
        for p in self.params:
            p.grad = None
        self.weights_version += 1
        return self.steps

    def _load_own_shards(self, path: str, meta: Mapping[str, Any]) -> int:
        """load's second half for a sharded model and a sharded state folder (meta its
        meta.json): each worker reads its shards of every tensor, whatever the number
        of workers that wrote it."""
        state = {int(i): {k: torch.empty_like(self.params[int(i)]) if v is None else torch.tensor(v)
                          for k, v in entries.items()} for i, entries in meta["optimizer"].items()}
        tensors = statelib.folder_tensors(self.params, self.reference, {"state": state})
        if sum(1 for k in tensors if k.startswith("params/")) != len(self.params):
            raise IOError("load %s: the model has %d tensors" % (path, len(self.params)))
        statelib.load_folder(path, tensors)
        self.optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
        self.steps = int(meta["steps"])
        return self._loaded()

    def _load_shards(self, st: statelib.State | None, path: str | IO[bytes]) -> int:
        """load's second half for a sharded model and a whole state (a state file, or a
        folder read whole): worker 0 (st) sends each worker its shard of every tensor,
        so a state of any number of workers, replicated or sharded, loads."""
        d, distribute = self.dist, self.sharding.distribute
        n = d.broadcast_object(len(st.params) if st else None)
        if n != len(self.params):
            raise IOError("load %s: %d tensors, the model has %d" % (path, n, len(self.params)))
        with torch.no_grad():
            for i, (p, r) in enumerate(zip(self.params, self.reference)):
                p.copy_(distribute(st.params[i] if st else None, p))
                r.copy_(distribute(st.reference[i] if st else None, r))
        # the optimizer's layout: per parameter, which entries are shards of a tensor
        # of the parameter's shape and which are values (the step count)
        layout = d.broadcast_object(statelib.optimizer_layout(st.optimizer, st.params) if st else None)
        state = {}
        for i, entries in layout["state"].items():
            src = st.optimizer["state"][i] if st else {}
            state[i] = {k: distribute(src.get(k), self.params[i]) if v is None else torch.tensor(v)
                        for k, v in entries.items()}
        self.optimizer.load_state_dict({"state": state, "param_groups": layout["param_groups"]})
        self.steps = int(d.broadcast_object(st.steps if st else None))
        return self._loaded()


def _read(path: str | IO[bytes]) -> tuple[statelib.State | None, dict[str, Any] | None]:
    """What rank 0 reads of the state at path first: a state file's State, or a
    sharded state folder's meta.json (its tensors are read once the model is built)."""
    try:
        if statelib.is_folder(path):
            return None, statelib.read_meta(path)
        return statelib.parse_state(statelib.read_state(path), path), None
    except OSError:  # a missing file (NOT_FOUND), an unreadable one (DATA_LOSS)
        raise
    except Exception as e:  # noqa: BLE001 - any unreadable file is data loss
        raise OSError("load %s: %s" % (path, e)) from e
