# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The policy: the state of one worker and the math of every protocol call.

State: the model (a Backend), the reference (a frozen copy of the trainable tensors:
all weights for full fine-tuning, the adapters for LoRA, whose frozen base weights
are shared), torch.optim.AdamW over the trainable tensors, the step count, and the
gradient accumulated in each tensor's .grad. Scoring under the reference swaps the
reference tensors in, scores and swaps back; with LoRA before SnapshotReference this
is the base model (adapters start at zero), afterwards the snapshot.

Every call runs under one lock (one device per worker process). The server
(espo_worker.server) maps InvalidError to INVALID_ARGUMENT, NotConfiguredError and
modelfiles.ModelIncompleteError (a model folder that lacks files) to
FAILED_PRECONDITION, and everything else to INTERNAL.
"""

import collections
import hashlib
import inspect
import io
import json
import math
import struct
import threading
import time

import torch

from . import dist as distlib
from . import encoder as encoderlib
from . import models
from . import protocol as pb
from . import rollout as rolloutlib

# A state file holds tensors, and dicts, lists, strings and ints of them, only: what
# torch.load(weights_only=True) reads on every supported torch (1.13 reads no Python
# float), so that loading a file never unpickles an arbitrary object. Model options,
# the step count and the optimizer's hyperparameters travel as JSON under "meta".
STATE_FORMAT = "espo-torch-worker/v2"
# v1 held Python floats; a torch whose safe unpickler reads them (2.x) still loads it.
STATE_FORMAT_V1 = "espo-torch-worker/v1"

if "weights_only" not in inspect.signature(torch.load).parameters:
    raise ImportError("espo_worker needs torch >= 1.13, whose torch.load(weights_only=True) loads tensors without "
                      "unpickling arbitrary objects; this is torch %s" % torch.__version__)


class InvalidError(ValueError):
    """The request is at fault (INVALID_ARGUMENT)."""


class NotConfiguredError(RuntimeError):
    """A call before Configure or Load (FAILED_PRECONDITION)."""


def _int(name, v):
    try:
        return int(v)
    except ValueError:
        raise InvalidError("option %s=%r: want an integer" % (name, v)) from None


def _bool(name, v):
    return v.lower() in ("1", "true", "yes")


def _float(name, v):
    try:
        return float(v)
    except ValueError:
        raise InvalidError("option %s=%r: want a number" % (name, v)) from None


# Configure options: name -> parser. The trainer sends "pretrained" (spec.model.pretrained);
# the others override the command-line defaults.
OPTIONS = {
    "pretrained": str, "dtype": str, "lora_r": _int, "lora_alpha": _int, "lora_dropout": _float,
    "lora_targets": str, "max_new_tokens": _int, "max_prompt_tokens": _int, "tiny_embed": _int,
    "tiny_hidden": _int, "gradient_checkpointing": _bool,
    "attn_implementation": str, "embedder_model": str,
    "rollout_engine": str, "vllm_gpu_memory_utilization": _float, "vllm_max_model_len": _int,
    "vllm_enforce_eager": _bool, "vllm_cpu_kv_cache_gib": _int,
}

# The rollout engines (option rollout_engine): the training model's own generate, or
# vLLM in a process beside the worker (espo_worker.rollout).
ENGINES = ("huggingface", "vllm")


def is_rollout_option(name):
    """Whether an option sets the rollout engine rather than the model."""
    return name == "rollout_engine" or name.startswith("vllm_")


# MAX_EMBED_TEXTS bounds the texts of one Embed call (EmbedRequest.texts).
MAX_EMBED_TEXTS = 2048


def prompt_seed(seed, prompt):
    """The sampling seed of one prompt: SHA-256 of (seed, episode id, step index), so
    a prompt's candidates do not depend on the batch it is in."""
    h = hashlib.sha256(struct.pack("<Q", seed & (2 ** 64 - 1)) + prompt.episode_id.encode() +
                       struct.pack("<i", prompt.step_index))
    return int.from_bytes(h.digest()[:8], "little") & (2 ** 63 - 1)


class Policy:
    def __init__(self, defaults, device="cpu", dist=None):
        """defaults: the command line's model settings, the same keys as OPTIONS."""
        self.defaults = dict(defaults)
        self.device = device
        self.dist = dist or distlib.Single()
        self.lock = threading.RLock()
        self.backend = None
        self.options = None
        self.params = []
        self.reference = []
        self.optimizer = None
        self.steps = 0
        self.encoder = None
        # The vLLM engine (rollout_engine=vllm), and the version of the weights it
        # serves: weights_version counts every change of the trainable weights (build,
        # step, load), and Generate pushes them first when the two differ.
        self.rollout = None
        self.weights_version = 0
        self.rollout_version = 0
        self.score_seconds = 0.0

    # -- configuration ---------------------------------------------------------

    def resolve_options(self, options):
        o = dict(self.defaults)
        for k, v in options.items():
            if k not in OPTIONS:
                raise InvalidError("unknown option %r; the torch worker understands %s" % (k, ", ".join(sorted(OPTIONS))))
            o[k] = OPTIONS[k](k, v) if OPTIONS[k] is not str else v
        if not o.get("pretrained"):
            raise InvalidError("no model: set spec.model.pretrained (Configure option pretrained) or --model")
        if (o.get("rollout_engine") or "huggingface") not in ENGINES:
            raise InvalidError("option rollout_engine=%r: want one of %s (spec.model.rollout.engine)" %
                               (o["rollout_engine"], ", ".join(ENGINES)))
        return o

    def build(self, o, seed):
        torch.manual_seed(seed & (2 ** 63 - 1))
        path = o["pretrained"]
        if path == "tiny":
            b = models.TinyBackend(self.device, embed=o.get("tiny_embed") or 32, hidden=o.get("tiny_hidden") or 64,
                                   max_new_tokens=o.get("max_new_tokens") or 96,
                                   max_prompt_tokens=o.get("max_prompt_tokens") or 256)
        else:
            b = models.HFBackend(path, self.device, dtype=o.get("dtype") or "bfloat16", lora_r=o.get("lora_r") or 0,
                                 lora_alpha=o.get("lora_alpha") or 0, lora_dropout=o.get("lora_dropout") or 0.0,
                                 lora_targets=o.get("lora_targets") or "",
                                 max_new_tokens=o.get("max_new_tokens") or 256,
                                 max_prompt_tokens=o.get("max_prompt_tokens") or 0,
                                 gradient_checkpointing=bool(o.get("gradient_checkpointing")),
                                 attn_implementation=o.get("attn_implementation") or "")
        self.backend, self.options = b, o
        self.params = [p for p in b.model.parameters() if p.requires_grad]
        self.dist.broadcast_tensors(self.params)  # every rank starts from rank 0's weights
        self.reference = [p.detach().clone() for p in self.params]
        self.optimizer = torch.optim.AdamW(self.params, lr=0.0, weight_decay=0.0)
        self.steps = 0
        self.start_rollout(o, seed)

    def start_rollout(self, o, seed):
        """Starts the vLLM engine on the model folder when o asks for it (closing the
        one of an earlier Configure either way). Every rank has an engine of its own."""
        self.close_rollout()
        self.weights_version += 1
        if o.get("rollout_engine") != "vllm":
            return
        if o["pretrained"] == "tiny":
            raise InvalidError("option rollout_engine=vllm: the test model tiny is no Hugging Face model vLLM can "
                               "serve; use the huggingface engine or a model folder")
        try:
            self.rollout = rolloutlib.VLLMEngine(
                o["pretrained"], dtype=o.get("dtype") or "bfloat16", seed=seed, device=self.device,
                gpu_memory_utilization=o.get("vllm_gpu_memory_utilization") or 0.0,
                max_model_len=o.get("vllm_max_model_len") or 0, enforce_eager=bool(o.get("vllm_enforce_eager")),
                cpu_kv_cache_gib=o.get("vllm_cpu_kv_cache_gib") or 0, lora_rank=o.get("lora_r") or 0)
        except rolloutlib.EngineUnavailableError as e:
            raise InvalidError(str(e)) from None

    def with_rollout(self, options):
        """options (a state's) with the rollout settings of the worker's configuration
        in place of the state's: the engine is how answers are sampled, not part of the
        model a state holds, so a state written with another engine (an initial
        checkpoint of a huggingface run) keeps this worker's."""
        if self.options is None:
            return options
        o = {k: v for k, v in options.items() if not is_rollout_option(k)}
        o.update({k: v for k, v in self.options.items() if is_rollout_option(k)})
        return o

    def rollout_stats(self):
        """The engine's figures so far, or None without one: weight pushes and their
        seconds, the engine's sampling seconds and the trainer's scoring seconds of
        its answers."""
        r = self.rollout
        if r is None:
            return None
        return {"engine": "vllm", "pushes": r.pushes, "push_seconds": r.push_seconds, "sample_seconds": r.sample_seconds,
                "score_seconds": self.score_seconds}

    def close_rollout(self):
        if self.rollout is not None:
            self.rollout.close()
            self.rollout = None

    def sync_rollout(self):
        """Pushes the trainable weights to the engine when they changed since the last
        push: the LoRA adapter under a new id, or every trainable tensor whole."""
        if self.rollout is None or self.rollout_version == self.weights_version:
            return
        if self.backend.lora:
            self.rollout.push_lora(self.backend.model)
        else:
            self.rollout.push_full(self.backend.engine_tensors())
        self.rollout_version = self.weights_version

    def configure(self, seed, options):
        with self.lock:
            o = self.resolve_options(options)
            self.dist.init()
            self.backend = None
            self.build(o, seed)
            self.load_encoder(o.get("embedder_model") or "")

    def load_encoder(self, folder):
        """Loads the sentence encoder of folder for Embed (none for ""); one already
        loaded from the same folder is kept."""
        if not folder:
            self.encoder = None
        elif self.encoder is None or self.encoder.folder != folder:
            try:
                self.encoder = encoderlib.SentenceEncoder(folder, self.device)
            except (encoderlib.EncoderError, OSError) as e:
                raise InvalidError("option embedder_model: %s" % e) from None

    def embed(self, texts):
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

    def describe(self):
        b = self.backend
        return pb.InfoResponse(
            model=b.name if b else "torch worker (not configured)",
            device=self.device + (" x%d ranks" % self.dist.world if self.dist.world > 1 else ""),
            parameters=sum(p.numel() for p in self.params),
            reduces_gradients=self.dist.world > 1, steps=self.steps,
            model_config_sha256=b.config_sha256 if b else "",
            encoder=self.encoder.name if self.encoder else "", encoder_sha256=self.encoder.sha256 if self.encoder else "")

    def need(self):
        if self.backend is None:
            raise NotConfiguredError("worker: not configured: call Configure (or Load) first")

    # -- scoring ---------------------------------------------------------------

    def answer_ids(self, answer):
        ids = self._answer_ids(answer)
        banned = set(self.backend.banned_ids)
        if banned and banned.intersection(ids):
            raise InvalidError("answer holds image or video placeholder tokens %s, which only a prompt may hold" %
                               sorted(banned.intersection(ids)))
        return ids

    def _answer_ids(self, answer):
        if answer.token_ids:
            vocab = None
            emb = getattr(self.backend.model, "get_input_embeddings", None)
            if emb is not None:
                vocab = emb().num_embeddings
            elif hasattr(self.backend.model, "embed"):
                vocab = self.backend.model.embed.num_embeddings
            ids = list(answer.token_ids)
            if vocab is not None and any(i < 0 or i >= vocab for i in ids):
                raise InvalidError("answer token ids outside the vocabulary [0, %d)" % vocab)
            return ids
        if not answer.text:
            raise InvalidError("answer has neither token ids nor text")
        return self.backend.answer_ids(answer.text)

    def _grouped(self, items):
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

    def _scores(self, groups, n):
        """The log-probs (lists of floats) of the n answers of groups, by index, each
        group scored in one batch (Backend.score_group)."""
        out = [None] * n
        with torch.no_grad():
            for inputs, members in groups:
                logps = self.backend.score_group(inputs, [ids for _, ids in members])
                for (i, _), lp in zip(members, logps):
                    out[i] = lp.double().cpu().tolist()
        return out

    def swap_reference(self):
        with torch.no_grad():
            for p, r in zip(self.params, self.reference):
                tmp = p.detach().clone()
                p.copy_(r)
                r.copy_(tmp)

    def generate(self, req):
        """Samples req.samples answers of each prompt and their per-token log-probs, the
        answers of a prompt scored together as LogProbs scores them."""
        with self.lock:
            self.need()
            n = max(req.samples, 1)
            temperature = req.temperature or 1.0
            if temperature < 0 or req.samples < 0 or req.max_tokens < 0:
                raise InvalidError("generate: negative samples, temperature or max_tokens")
            resp = pb.GenerateResponse()
            self.backend.model.eval()
            if self.rollout is not None:
                return self.generate_with_engine(req, n, temperature, resp)
            for prompt in req.prompts:
                inputs = self.backend.prompt_inputs(prompt)
                g = torch.Generator().manual_seed(prompt_seed(req.seed, prompt))
                answers = self.backend.sample(inputs, n, temperature, req.greedy, g, req.max_tokens)
                cands = resp.candidates.add()
                for ids, lp in zip(answers, self._scores([(inputs, list(enumerate(answers)))], len(answers))):
                    s = cands.samples.add()
                    s.answer.text = self.backend.decode_answer(ids)
                    s.answer.token_ids.extend(ids)
                    s.logprobs.extend(lp)
            return resp

    def generate_with_engine(self, req, n, temperature, resp):
        """generate, sampled by the vLLM engine in one batch of every prompt: each
        sample carries the engine's per-token log-probs (sampler_logprobs) beside the
        training model's (logprobs), which score the answers as LogProbs does."""
        self.sync_rollout()
        b = self.backend
        inputs = [b.prompt_inputs(p) for p in req.prompts]
        cap = req.max_tokens or b.max_new_tokens
        sampled = self.rollout.generate(
            [dict(b.engine_prompt(p, x), seed=prompt_seed(req.seed, p)) for p, x in zip(req.prompts, inputs)],
            n, temperature, req.greedy, cap, b.eos_ids, b.banned_ids)
        start = time.perf_counter()
        for x, answers in zip(inputs, sampled):
            kept = []
            for ids, lps in answers:
                ids = b.strip_answer(ids, cap)
                kept.append((ids, lps[:len(ids)]))
            cands = resp.candidates.add()
            scores = self._scores([(x, list(enumerate(ids for ids, _ in kept)))], len(kept))
            for (ids, lps), lp in zip(kept, scores):
                s = cands.samples.add()
                s.answer.text = b.decode_answer(ids)
                s.answer.token_ids.extend(ids)
                s.logprobs.extend(lp)
                s.sampler_logprobs.extend(lps)
        self.score_seconds += time.perf_counter() - start
        return resp

    def logprobs(self, req):
        """Token ids of each answer with their log-probs under the current policy (left
        empty when req.reference_only) and, when req.reference, the reference policy.
        The answers of one prompt are scored in one batch: the candidates of a prompt,
        sent as Generate returned them, get Generate's log-probs bit for bit."""
        with self.lock:
            self.need()
            self.backend.model.eval()
            ids = [self.answer_ids(it.answer) for it in req.items]
            groups = self._grouped([(it.prompt, a) for it, a in zip(req.items, ids)])
            resp = pb.LogProbsResponse()
            for a in ids:
                resp.items.add().token_ids.extend(a)
            if not req.reference_only:
                for r, lp in zip(resp.items, self._scores(groups, len(ids))):
                    r.current.extend(lp)
            if req.reference:
                self.swap_reference()
                try:
                    for r, lp in zip(resp.items, self._scores(groups, len(ids))):
                        r.reference.extend(lp)
                finally:
                    self.swap_reference()
            return resp

    # -- training --------------------------------------------------------------

    def backward(self, req):
        """Accumulates the gradient of -sum_items sum_t w_t logp_t, the answers of a
        prompt scored in one batch and differentiated together; returns the objective
        sum w_t logp_t and the number of tokens."""
        with self.lock:
            self.need()
            items, weights = [], []
            for i, it in enumerate(req.items):
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
                items.append((it.prompt, ids))
                weights.append(w)
            groups = self._grouped(items)
            self.backend.model.train()
            objective, tokens = 0.0, 0
            for inputs, members in groups:
                logps = self.backend.score_group(inputs, [ids for _, ids in members])
                obj = torch.stack([self._weighted(lp, weights[i]) for (i, _), lp in zip(members, logps)]).sum()
                (-obj).backward()
                objective += float(obj.detach())
                tokens += sum(len(ids) for _, ids in members)
            return objective, tokens

    @staticmethod
    def _weighted(logp, w):
        return (torch.tensor(w, dtype=torch.float64, device=logp.device) * logp.double()).sum()

    def flat_grad(self):
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).float().cpu()
                          for p in self.params]) if self.params else torch.zeros(0)

    def gradients(self):
        with self.lock:
            self.need()
            return self.flat_grad()

    def step(self, req):
        with self.lock:
            self.need()
            beta1, beta2, eps = req.beta1 or 0.9, req.beta2 or 0.999, req.epsilon or 1e-8
            if req.gradient:
                n = sum(p.numel() for p in self.params)
                if len(req.gradient) != n:
                    raise InvalidError("step: gradient has %d values, the model %d parameters" % (len(req.gradient), n))
                flat = torch.tensor(req.gradient, dtype=torch.float32)
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
                self.dist.all_reduce_sum([p.grad for p in self.params])
            norm = torch.norm(torch.stack([p.grad.detach().double().norm() for p in self.params])).item() \
                if self.params else 0.0
            if not math.isfinite(norm):
                self.optimizer.zero_grad(set_to_none=True)
                raise RuntimeError("step: the gradient norm is %r; step skipped" % norm)
            if req.max_grad_norm > 0:
                coef = min(1.0, req.max_grad_norm / (norm + 1e-6))
                if coef < 1.0:
                    for p in self.params:
                        p.grad.mul_(coef)
            for g in self.optimizer.param_groups:
                g.update(lr=req.learning_rate, betas=(beta1, beta2), eps=eps, weight_decay=req.weight_decay)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.steps += 1
            self.weights_version += 1
            return norm, self.steps

    def snapshot_reference(self):
        with self.lock:
            self.need()
            with torch.no_grad():
                for p, r in zip(self.params, self.reference):
                    r.copy_(p)

    # -- state -----------------------------------------------------------------

    def state_dict(self):
        """The full state in the types of STATE_FORMAT."""
        opt = self.optimizer.state_dict()
        tensors = {i: {k: v for k, v in st.items() if torch.is_tensor(v)} for i, st in opt["state"].items()}
        values = {str(i): {k: v for k, v in st.items() if not torch.is_tensor(v)} for i, st in opt["state"].items()}
        meta = {"options": self.options, "steps": self.steps, "param_groups": opt["param_groups"],
                "optimizer_values": values}
        return {
            "format": STATE_FORMAT,
            "meta": json.dumps(meta),
            "params": [p.detach().cpu() for p in self.params],
            "reference": [r.detach().cpu() for r in self.reference],
            "optimizer_state": tensors,
        }

    def save(self, f):
        with self.lock:
            self.need()
            torch.save(self.state_dict(), f)

    def load(self, path, seed=0):
        """Restores a state Save wrote, from path: a file's path, or a file object
        (server.InlineState, a state sent inline). With several ranks, rank 0 reads it
        (only it may have the checkpoint volume) and broadcasts the state."""
        with self.lock:
            self.dist.init()
            st = None
            if self.dist.rank == 0:
                try:
                    st = parse_state(read_state(path), path)
                except OSError:  # a missing file (NOT_FOUND), an unreadable one (DATA_LOSS)
                    raise
                except Exception as e:  # noqa: BLE001 - any unreadable file is data loss
                    raise OSError("load %s: %s" % (path, e)) from e
            options = self.with_rollout(self.dist.broadcast_object(st.options if st else None))
            if self.backend is None or options != self.options:
                self.build(options, seed)
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
            for p in self.params:
                p.grad = None
            self.weights_version += 1
            return self.steps


def read_state(path):
    """The state file at path, read with torch.load(weights_only=True): tensors and
    plain types only, never an arbitrary object (a file that holds one is refused)."""
    return torch.load(path, map_location="cpu", weights_only=True)


State = collections.namedtuple("State", "options params reference optimizer steps")


def parse_state(st, path):
    """The State of a file's content st, or IOError naming path."""
    if not isinstance(st, dict) or st.get("format") not in (STATE_FORMAT, STATE_FORMAT_V1):
        raise IOError("load %s: not a torch worker state (%s)" % (path, STATE_FORMAT))
    try:
        if st["format"] == STATE_FORMAT_V1:
            return State(st["options"], st["params"], st["reference"], st["optimizer"], int(st["steps"]))
        meta = json.loads(st["meta"])
        values = meta["optimizer_values"]
        opt = {"state": {i: dict(ts, **values.get(str(i), {})) for i, ts in st["optimizer_state"].items()},
               "param_groups": meta["param_groups"]}
        return State(meta["options"], st["params"], st["reference"], opt, int(meta["steps"]))
    except (KeyError, TypeError, ValueError) as e:
        raise IOError("load %s: a damaged torch worker state (%s): %s" % (path, st["format"], e)) from None


def state_bytes(policy):
    buf = io.BytesIO()
    policy.save(buf)
    return buf.getvalue()
