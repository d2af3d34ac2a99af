# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Model backends: what the policy needs from a model (the Backend protocol), for the
tiny torch model and for Hugging Face causal LMs and VLMs loaded from a local path,
and what it needs from a serving engine that samples beside the model (the Sampler
protocol, espo_worker.rollout's VLLMEngine).

A backend turns a protocol Prompt into model inputs (prompt_inputs), tokenizes and
decodes answers (answer_ids, decode), scores answer tokens and samples answers
(sample). Scoring gives one log-prob per answer token at temperature 1, differentiable
when grad is enabled: score_group scores the answers of one prompt together (the policy
scores every Generate, LogProbs and Backward this way, so a prompt's candidates get the
same log-probs from Generate and LogProbs, bit for bit); token_logprobs scores one
answer alone in a plain forward pass, equal to the batch to float rounding (the tests'
independent side). A Hugging Face model encodes the prompt, its image included, once
for all of a prompt's answers, when scoring and when sampling (HFBackend.encode_prefix).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ContextManager, Protocol, TypedDict

import torch

from . import config, modelfiles, refusal, tiny
from . import prompt as promptlib

if TYPE_CHECKING:
    from peft import PeftModel

    from . import protocol as pb


class EnginePrompt(TypedDict):
    """A prompt as a serving engine takes it: token ids, and for a prompt with a
    screenshot the ids of its text with one image placeholder and the image's bytes."""

    ids: list[int]
    image: bytes | None


class PromptInputs(TypedDict, total=False):
    """A prompt turned into model inputs (Backend.prompt_inputs): its token ids, the
    processor's other inputs (an image's pixels and grid), and for a prompt with a
    screenshot what a serving engine takes instead."""

    ids: list[int]
    extra: dict[str, Any]
    engine: EnginePrompt


# A sampled answer: its token ids and the sampling engine's log-prob of each.
Sampled = tuple[list[int], list[float]]


class Backend(Protocol):
    """What the policy needs from a model: it turns a protocol Prompt into inputs,
    tokenizes and decodes answers, scores answer tokens and samples answers."""

    name: str
    model: torch.nn.Module
    device: str
    eos_ids: tuple[int, ...]
    # Token ids an answer may not hold (a VLM's image and video placeholders): Generate
    # never samples them and LogProbs and Backward refuse them.
    banned_ids: tuple[int, ...]
    max_new_tokens: int
    # SHA-256 (hex) of the model folder's config.json; "" for a model without one.
    config_sha256: str
    # Whether only LoRA adapters train (the engine is then sent the adapter).
    lora: bool

    @property
    def vocab_size(self) -> int:
        """The number of token ids the model reads."""

    def prompt_inputs(self, prompt: pb.Prompt) -> PromptInputs:
        """The model inputs of prompt."""

    def answer_ids(self, text: str) -> list[int]:
        """The token ids of an answer's text, a stop token last."""

    def decode_answer(self, ids: Sequence[int]) -> str:
        """The text of an answer's token ids, without stop tokens."""

    def strip_answer(self, ids: Sequence[int], cap: int) -> list[int]:
        """Sampled ids cut after the first stop token (kept) and at cap tokens."""

    def score_group(self, inputs: PromptInputs, answers: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """The per-token log-probs of each answer after the prompt of inputs, scored
        together; differentiable when grad is enabled."""

    def sample(self, inputs: PromptInputs, n: int, temperature: float, greedy: bool, generator: torch.Generator,
               max_tokens: int) -> list[list[int]]:
        """n answers of the prompt of inputs (max_tokens at most; 0: max_new_tokens)."""

    def engine_prompt(self, prompt: pb.Prompt, inputs: PromptInputs) -> EnginePrompt:
        """The prompt of inputs as a serving engine takes it."""


class Sampler(Protocol):
    """A serving engine that samples the answers beside the training model: it is sent
    the trainable weights whenever they change, whole or as a LoRA adapter."""

    pushes: int
    push_seconds: float
    sample_seconds: float

    def generate(self, prompts: Sequence[Mapping[str, object]], n: int, temperature: float, greedy: bool, max_tokens: int,
                 stop_ids: Iterable[int], banned_ids: Iterable[int]) -> list[list[Sampled]]:
        """n answers of each prompt (an EnginePrompt with its seed), at most max_tokens
        each, stopping at stop_ids and never sampling banned_ids."""

    def push_full(self, parts: Iterable[Mapping[str, torch.Tensor]]) -> None:
        """Sends every trainable tensor, by its Hugging Face name, in parts."""

    def push_lora(self, peft_model: PeftModel, tensors: Mapping[str, torch.Tensor] | None = None) -> None:
        """Sends the model's current LoRA adapter, under a new id."""

    def close(self) -> None:
        """Stops the engine."""


class _Backend:
    """What both backends share."""

    device: str = "cpu"
    compute_dtype: torch.dtype = torch.float32
    eos_ids: tuple[int, ...] = ()
    banned_ids: tuple[int, ...] = ()
    max_new_tokens: int = config.HF_MAX_NEW_TOKENS
    max_prompt_tokens: int = config.HF_MAX_PROMPT_TOKENS
    config_sha256: str = ""
    lora: bool = False

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def autocast(self) -> ContextManager[None]:
        if self.device.startswith("cuda") and self.compute_dtype != torch.float32:
            return torch.autocast(device_type="cuda", dtype=self.compute_dtype)
        return contextlib.nullcontext()

    def _truncate(self, ids: list[int]) -> list[int]:
        if self.max_prompt_tokens and len(ids) > self.max_prompt_tokens:
            return ids[-self.max_prompt_tokens:]
        return ids

    def strip_answer(self, ids: Sequence[int], cap: int) -> list[int]:
        """Cuts sampled ids after the first stop token (kept) and at cap tokens."""
        out = []
        for t in ids[:cap]:
            out.append(int(t))
            if int(t) in self.eos_ids:
                break
        return out

    def decode_answer(self, ids: Sequence[int]) -> str:
        return self.decode([i for i in ids if i not in self.eos_ids])


class TinyBackend(_Backend):
    """The tiny byte-level GRU (espo_worker.tiny); prompt text from plain_template."""

    def __init__(self, device: str = "cpu", embed: int = 32, hidden: int = 64,
                 max_new_tokens: int = config.TINY_MAX_NEW_TOKENS,
                 max_prompt_tokens: int = config.TINY_MAX_PROMPT_TOKENS) -> None:
        self.name = "tiny-gru(embed=%d,hidden=%d)" % (embed, hidden)
        self.device = device
        self.tok = tiny.ByteTokenizer()
        self.model = tiny.TinyLM(embed, hidden).to(device)
        self.eos_ids = (tiny.EOS,)
        self.max_new_tokens = max_new_tokens
        self.max_prompt_tokens = max_prompt_tokens

    @property
    def vocab_size(self) -> int:
        return self.model.embed.num_embeddings

    def prompt_inputs(self, prompt: pb.Prompt) -> PromptInputs:
        ids = [tiny.BOS] + self._truncate(self.tok.encode(promptlib.plain_template(prompt)))
        return {"ids": ids}

    def answer_ids(self, text: str) -> list[int]:
        return self.tok.encode(text) + [tiny.EOS]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(ids)

    def token_logprobs(self, inputs: PromptInputs, answer: Sequence[int]) -> torch.Tensor:
        p = inputs["ids"]
        seq = torch.tensor([p + list(answer)], dtype=torch.long, device=self.device)
        logits, _ = self.model(seq[:, :-1])
        logits = logits[0, len(p) - 1:].float()
        return torch.log_softmax(logits, -1).gather(-1, seq[0, len(p):, None])[:, 0]

    def score_group(self, inputs: PromptInputs, answers: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        return self.token_logprobs_batch([(inputs, a) for a in answers])

    def token_logprobs_batch(self, pairs: Sequence[tuple[PromptInputs, Sequence[int]]]) -> list[torch.Tensor]:
        """token_logprobs of each (inputs, answer) of pairs, from one forward pass over
        the sequences right-padded to the longest (the GRU reads left to right, so the
        padding after a sequence does not change its positions)."""
        seqs = [inputs["ids"] + list(answer) for inputs, answer in pairs]
        width = max(len(q) for q in seqs) - 1
        x = torch.tensor([q[:-1] + [tiny.EOS] * (width - len(q) + 1) for q in seqs], dtype=torch.long, device=self.device)
        logp = torch.log_softmax(self.model(x)[0].float(), -1)
        out = []
        for b, (q, (inputs, answer)) in enumerate(zip(seqs, pairs)):
            start = len(inputs["ids"]) - 1
            target = torch.tensor(q[start + 1:], dtype=torch.long, device=self.device)
            out.append(logp[b, start:start + len(answer)].gather(-1, target[:, None])[:, 0])
        return out

    @torch.no_grad()
    def sample(self, inputs: PromptInputs, n: int, temperature: float, greedy: bool, generator: torch.Generator,
               max_tokens: int) -> list[list[int]]:
        cap = max_tokens or self.max_new_tokens
        p = torch.tensor([inputs["ids"]], dtype=torch.long, device=self.device)
        logits, state = self.model(p)
        last = logits[:, -1].expand(n, -1)
        state = state.expand(-1, n, -1).contiguous()
        out = torch.empty(n, 0, dtype=torch.long, device=self.device)
        done = torch.zeros(n, dtype=torch.bool, device=self.device)
        for _ in range(cap):
            if greedy:
                nxt = last.argmax(-1)
            else:
                probs = torch.softmax(last.float() / temperature, -1)
                nxt = torch.multinomial(probs.cpu(), 1, generator=generator)[:, 0].to(self.device)
            nxt = torch.where(done, torch.full_like(nxt, tiny.EOS), nxt)
            out = torch.cat([out, nxt[:, None]], 1)
            done |= nxt == tiny.EOS
            if bool(done.all()):
                break
            logits, state = self.model(nxt[:, None], state)
            last = logits[:, -1]
        return [self.strip_answer(row.tolist(), cap) for row in out]


class HFBackend(_Backend):
    """A Hugging Face causal LM or VLM from a local folder, or a model id's snapshot in
    the Hugging Face cache (never the hub): modelfiles.resolve. A folder that lacks
    files the model needs raises modelfiles.ModelIncompleteError, a path that is no
    folder modelfiles.ModelNotAFolderError, a model the worker cannot train
    modelfiles.ModelUnsupportedError; LoRA targets no module matches raise
    LoRATargetsError, an attention implementation that cannot run
    AttnUnavailableError: the permanent refusals of espo_worker.refusal.

    The prompt goes through the processor's (or tokenizer's) chat template: a system
    turn and a user turn, the user turn led by the screenshot for a VLM when the
    prompt has one. With lora_r > 0 only LoRA adapters (peft) train; otherwise every
    parameter does. Trainable parameters are kept in float32 and the forward pass
    runs under autocast to the compute dtype on CUDA.
    """

    def __init__(self, path: str, device: str = "cuda", dtype: str = "bfloat16", lora_r: int = 0, lora_alpha: int = 0,
                 lora_dropout: float = 0.0, lora_targets: str = "", max_new_tokens: int = config.HF_MAX_NEW_TOKENS,
                 max_prompt_tokens: int = config.HF_MAX_PROMPT_TOKENS, gradient_checkpointing: bool = False,
                 attn_implementation: str = "", place: bool = True) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # before transformers: every missing file named at once; a cached model id's snapshot
        folder = modelfiles.resolve(path)
        with open(os.path.join(folder, "config.json"), "rb") as f:
            self.config_sha256 = hashlib.sha256(f.read()).hexdigest()
        import transformers
        transformers.utils.logging.disable_progress_bar()
        self.device = device
        self.compute_dtype = getattr(torch, dtype)
        self.max_new_tokens = max_new_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.gradient_checkpointing = gradient_checkpointing
        # whether the policy shards the model (espo_worker.sharding); it sets this
        self.sharded = False
        cfg = load_config(folder)
        self.vlm = model_class(cfg, folder) == "image-text-to-text"
        kw = {"local_files_only": True, "dtype": self.compute_dtype if lora_r > 0 else torch.float32}
        if attn_implementation:
            kw["attn_implementation"] = attn_implementation
        if self.vlm:
            self.processor = transformers.AutoProcessor.from_pretrained(folder, local_files_only=True)
            self.tok = self.processor.tokenizer
            auto = transformers.AutoModelForImageTextToText
        else:
            self.tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
            self.processor = None
            auto = transformers.AutoModelForCausalLM
        try:
            model = auto.from_pretrained(folder, **kw)
        except (ImportError, ValueError) as e:
            refused = attn_refusal(attn_implementation, auto, cfg) if attn_implementation else None
            if refused is None:
                raise
            raise refused from e
        if gradient_checkpointing:  # transformers 5.23 renamed it activation checkpointing
            (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
            if hasattr(model, "enable_input_require_grads"):
                model.enable_input_require_grads()
        if lora_r > 0:
            import peft
            targets = [t for t in lora_targets.split(",") if t] or "all-linear"
            lc = peft.LoraConfig(r=lora_r, lora_alpha=lora_alpha or 2 * lora_r, lora_dropout=lora_dropout,
                                 target_modules=targets, task_type="CAUSAL_LM")
            model = with_lora(model, lc, targets)
            for p in model.parameters():
                if p.requires_grad:
                    p.data = p.data.float()
        # place False leaves the model on the CPU for a sharding that moves each
        # worker's shards to the device itself: the device never holds it whole
        self.model = model.to(device) if place else model
        eos = set()
        for v in (self.tok.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
            if isinstance(v, int):
                eos.add(v)
            elif v:
                eos.update(int(x) for x in v)
        self.eos_ids = tuple(sorted(eos))
        self.banned_ids = vision_token_ids(cfg)
        self.keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
        self.pad_id = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos_ids[0]
        self.lora = lora_r > 0
        self.name = "%s%s" % (os.path.basename(os.path.normpath(path)), " lora r=%d" % lora_r if lora_r else "")

    @property
    def vocab_size(self) -> int:
        return self.model.get_input_embeddings().num_embeddings

    def _messages(self, prompt: pb.Prompt, image: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - a PIL image
        system, user = promptlib.render(prompt)
        if self.vlm:
            content = ([{"type": "image"}] if image is not None else []) + [{"type": "text", "text": user}]
            return [{"role": "system", "content": [{"type": "text", "text": system}]},
                    {"role": "user", "content": content}]
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def prompt_inputs(self, prompt: pb.Prompt) -> PromptInputs:
        image = None
        if self.vlm and prompt.screenshot_path:
            from PIL import Image
            image = Image.open(prompt.screenshot_path).convert("RGB")
        msgs = self._messages(prompt, image)
        if self.vlm:
            text = self.processor.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            enc = self.processor(text=[text], images=[image] if image is not None else None, return_tensors="pt")
        else:
            text = self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            enc = self.tok(text, return_tensors="pt", add_special_tokens=False)
        ids = enc["input_ids"][0].tolist()
        if image is None:
            ids = self._truncate(ids)
        extra = {k: v.to(self.device) for k, v in enc.items() if k not in ("input_ids", "attention_mask")}
        out: PromptInputs = {"ids": ids, "extra": extra}
        if image is not None:  # what a serving engine takes: the text's ids, one placeholder per image, and the image
            out["engine"] = {"ids": self.tok(text, add_special_tokens=False)["input_ids"],
                             "image": _file_bytes(prompt.screenshot_path)}
        return out

    def engine_prompt(self, prompt: pb.Prompt, inputs: PromptInputs) -> EnginePrompt:
        """The prompt of inputs as the vLLM engine takes it: {"ids", "image"}: the
        token ids the model reads, or for a prompt with a screenshot, the ids of its
        text with one image placeholder (vLLM's processor expands it) and the image
        file's bytes."""
        return EnginePrompt(**(inputs.get("engine") or {"ids": inputs["ids"], "image": None}))

    def answer_ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"] + [self.eos_ids[0]]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=True)

    def token_logprobs(self, inputs: PromptInputs, answer: Sequence[int]) -> torch.Tensor:
        """The per-token log-probs of answer after the prompt of inputs, from one plain
        forward pass over prompt + answer: no cache, no padding, no batch (the tests'
        independent side of score_group)."""
        p = inputs["ids"]
        seq = torch.tensor([p + list(answer)], dtype=torch.long, device=self.device)
        kw = batched_extra(inputs["extra"], 1, len(p), seq.shape[1])
        with self.autocast():
            out = self.model(input_ids=seq, use_cache=False, **kw)
        logits = out.logits[0, len(p) - 1:-1].float()
        return torch.log_softmax(logits, -1).gather(-1, seq[0, len(p):, None])[:, 0]

    def score_group(self, inputs: PromptInputs, answers: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """The per-token log-probs of each of answers after the prompt of inputs. The
        prompt, its image included, is encoded once (score_shared_prefix) unless the
        model recomputes its activations (gradient checkpointing, which keeps no cache)
        or is sharded (a sharded unit gathers its weights again for the backward pass
        only from the outputs of the pass that uses them, and the prompt's cache is none);
        then all rows go in one padded pass (score_padded)."""
        if (self.gradient_checkpointing or self.sharded) and torch.is_grad_enabled():
            return self.score_padded(inputs, answers)
        return self.score_shared_prefix(inputs, answers)

    def score_shared_prefix(self, inputs: PromptInputs, answers: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """score_group in two passes: the prompt but its last token, with its image,
        once, keeping its keys and values (encode_prefix: a cache that carries the
        gradient back into the prompt's pass); then the G rows last prompt token + answer, right-padded to
        the longest, attending to that cache repeated G times. A causal model's real
        tokens never attend to the padding after them, so no padding mask is needed, and
        the rows' positions follow the prompt's (for Qwen-VL's 3-D rope, the text
        positions after the image, from the offset the first pass records)."""
        p, width = inputs["ids"], max(len(a) for a in answers)
        rows = torch.tensor([p[-1:] + list(a) + [self.pad_id] * (width - len(a)) for a in answers],
                            dtype=torch.long, device=self.device)
        with self.autocast():
            cache = self.encode_prefix(inputs, len(answers))
            out = self.model(input_ids=rows, past_key_values=cache, use_cache=True)
        logp = torch.log_softmax(out.logits[:, :width].float(), -1).gather(-1, rows[:, 1:, None])[..., 0]
        return [logp[b, :len(a)] for b, a in enumerate(answers)]

    def score_padded(self, inputs: PromptInputs, answers: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """score_group in one forward pass over the G sequences prompt + answer,
        right-padded to the longest with an attention mask, the prompt's image with each
        row (as a processor batches G samples of one image). Only the answer positions'
        logits are computed where the model can (logits_to_keep)."""
        p, width = inputs["ids"], max(len(a) for a in answers)
        rows = [p + list(a) + [self.pad_id] * (width - len(a)) for a in answers]
        seq = torch.tensor(rows, dtype=torch.long, device=self.device)
        mask = torch.tensor([[1] * (len(p) + len(a)) + [0] * (width - len(a)) for a in answers], device=self.device)
        kw = batched_extra(inputs["extra"], len(answers), len(p), seq.shape[1])
        if self.keeps_logits:
            kw["logits_to_keep"] = width + 1  # positions len(p)-1 .. end: each predicts the next token
        with self.autocast():
            out = self.model(input_ids=seq, attention_mask=mask, use_cache=False, **kw)
        logits = out.logits[:, -(width + 1):-1].float()
        logp = torch.log_softmax(logits, -1).gather(-1, seq[:, len(p):, None])[..., 0]
        return [logp[b, :len(a)] for b, a in enumerate(answers)]

    @torch.no_grad()
    def sample(self, inputs: PromptInputs, n: int, temperature: float, greedy: bool, generator: torch.Generator,
               max_tokens: int) -> list[list[int]]:
        """n answers of the prompt of inputs (one, repeated, when greedy), sampled by
        the model's generate from the prompt's cache (encode_prefix): the prompt, its
        image included, is encoded once for all n, not once a row."""
        cap = max_tokens or self.max_new_tokens
        seed = int(torch.randint(0, 2 ** 62, (1,), generator=generator))
        torch.manual_seed(seed)  # model.generate samples from the global generators
        rows = 1 if greedy else n
        ids = torch.tensor([inputs["ids"]], dtype=torch.long, device=self.device).expand(rows, -1)
        # synced_gpus False: transformers would keep a sharded model's ranks in step,
        # but the policy samples from the whole weights, gathered (espo_worker.sharding)
        kw = dict(do_sample=not greedy, max_new_tokens=cap, suppress_tokens=list(self.banned_ids) or None,
                  pad_token_id=self.pad_id, eos_token_id=list(self.eos_ids), attention_mask=torch.ones_like(ids),
                  synced_gpus=False)
        if not greedy:
            kw.update(temperature=temperature, top_p=1.0, top_k=0)
        with self.autocast():
            cache = self.encode_prefix(inputs, rows)
            seqs = self.model.generate(input_ids=ids, past_key_values=cache, **kw)
        out = [self.strip_answer(row[ids.shape[1]:].tolist(), cap) for row in seqs]
        return out * n if greedy else out

    def encode_prefix(self, inputs: PromptInputs, rows: int) -> Any:  # noqa: ANN401 - a transformers Cache
        """The cache (keys and values) of the prompt of inputs but its last token, with
        its image, from one forward pass, repeated for rows rows; differentiable when
        grad is enabled. A Qwen-VL model records in it the offset of the text positions
        after the image, which the rows' pass then reads."""
        p = inputs["ids"]
        extra = {k: (v[:, :-1] if per_token(v, len(p)) else v) for k, v in inputs["extra"].items()}
        reset_rope_offsets(self.model)
        kw = {"logits_to_keep": 1} if self.keeps_logits else {}
        cache = self.model(input_ids=torch.tensor([p[:-1]], device=self.device), use_cache=True, **extra,
                           **kw).past_key_values
        if rows > 1:
            cache.batch_repeat_interleave(rows)
        return cache


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


SUPPORTED = ("a causal language model (what AutoModelForCausalLM loads: Qwen2, Qwen3, Llama, Mistral, ...) or a "
             "vision-language model (what AutoModelForImageTextToText loads: Qwen2-VL, Qwen2.5-VL, ...)")


def model_class(cfg: Any, path: str) -> str:  # noqa: ANN401 - a transformers PretrainedConfig
    """Which of the two kinds of model the worker trains cfg (the folder's config.json)
    is: "image-text-to-text" for a vision-language model (it has a vision_config),
    "causal-lm" for a text one. Any other model, one whose model_type has no model of
    that kind or whose saved architectures are another head (a masked LM, a
    classifier), is refused with modelfiles.ModelUnsupportedError, naming what the
    folder holds and what is supported, before its weights are read."""
    from transformers.models.auto import modeling_auto as auto
    kind = "image-text-to-text" if hasattr(cfg, "vision_config") else "causal-lm"
    names = auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES if kind == "image-text-to-text" \
        else auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    saved = list(getattr(cfg, "architectures", None) or [])
    heads = set(names.values())
    if cfg.model_type not in names or (saved and not any(a in heads for a in saved)):
        found = ", ".join(saved) or "no architecture"
        raise modelfiles.ModelUnsupportedError(path, "%s (model_type %s)" % (found, cfg.model_type), SUPPORTED)
    return kind


def load_config(folder: str) -> Any:  # noqa: ANN401 - a transformers PretrainedConfig
    """The transformers config of the model folder; a config.json whose model_type
    transformers does not know (or that has none) is refused with
    modelfiles.ModelUnsupportedError, naming it."""
    import transformers
    try:
        return transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    except ValueError:
        found = unknown_model_type(folder)
        if not found:
            raise
        raise modelfiles.ModelUnsupportedError(folder, found, SUPPORTED) from None


def unknown_model_type(folder: str) -> str:
    """What the config.json of folder holds when transformers does not know its
    model_type ("FooForCausalLM (model_type foo, which transformers 5.23.0 does not
    know)"), or "" when it knows it."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    cfg = modelfiles._json(os.path.join(folder, "config.json"))
    mt = cfg.get("model_type")
    if isinstance(mt, str) and mt in CONFIG_MAPPING_NAMES:
        return ""
    archs = cfg.get("architectures")
    found = ", ".join(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ""
    if not isinstance(mt, str) or not mt:
        return "%s (no model_type in config.json)" % (found or "no architecture")
    return "%s (model_type %s, which transformers %s does not know)" % (found or "no architecture", mt,
                                                                         transformers.__version__)


class LoRATargetsError(config.InvalidError, refusal.Refusal):
    """No module LoRA can adapt matches the LoRA targets (option lora_targets): a
    restart loads the same model. Reason refusal.LORA_TARGET_MODULES_NOT_FOUND."""

    def __init__(self, missing: Sequence[str], names: Iterable[str]) -> None:
        available, omitted = refusal.listed(names)
        more = " and %d more" % omitted if omitted else ""
        super().__init__("option lora_targets (spec.model.lora.targetModules): the model has no module LoRA can adapt "
                         "named %s; the names it could target are %s%s" % (", ".join(missing), available.replace(",", ", "),
                                                                         more))
        md = {"missing": ",".join(missing), "available": available}
        if omitted:
            md["omitted"] = str(omitted)
        self.refuse(refusal.LORA_TARGET_MODULES_NOT_FOUND, md, refusal.INVALID_ARGUMENT)


def lora_modules(model: torch.nn.Module) -> list[str]:
    """The names of the modules of model LoRA can adapt as the worker lists them: the
    leaf nn.Linear and Conv1D (GPT-2's) modules."""
    from transformers.pytorch_utils import Conv1D
    return [n for n, m in model.named_modules()
            if n and isinstance(m, (torch.nn.Linear, Conv1D)) and next(m.children(), None) is None]


def with_lora(model: torch.nn.Module, lc: Any, targets: Sequence[str] | str) -> torch.nn.Module:  # noqa: ANN401
    """model with the LoRA adapters of lc (a peft.LoraConfig of targets) added; when
    peft refuses targets that name no module it can adapt, LoRATargetsError names
    them and the modules' last names it could target."""
    import peft
    try:
        return peft.get_peft_model(model, lc)
    except ValueError:
        if isinstance(targets, str):
            raise
        names = lora_modules(model)
        # peft's rule for a list of targets: the module's name, or its last names
        missing = [t for t in targets if not any(n == t or n.endswith("." + t) for n in names)]
        if not missing:
            raise
        raise LoRATargetsError(missing, (n.rsplit(".", 1)[-1] for n in names)) from None


# The package each attention implementation needs beyond torch and transformers, as
# Python imports it (the pip package: flash-attn, flash-attn-3).
ATTN_PACKAGES = {"flash_attention_2": "flash_attn", "flash_attention_3": "flash_attn_interface"}
# The flag of a transformers model class that says it supports an implementation.
ATTN_SUPPORT = {"sdpa": "_supports_sdpa", "flex_attention": "_supports_flex_attn",
                "flash_attention_2": "_supports_flash_attn", "flash_attention_3": "_supports_flash_attn"}


class AttnUnavailableError(config.InvalidError, refusal.Refusal):
    """The attention implementation (option attn_implementation) cannot run: its
    package is not installed, or the model does not support it. A restart runs the
    same image and model. Reason refusal.ATTN_IMPLEMENTATION_UNAVAILABLE."""

    def __init__(self, implementation: str, available: Sequence[str], package: str = "", model: str = "") -> None:
        why = ("it needs the Python package %s, which the worker's image does not have" % package if package
               else "the model (%s) does not support it" % model)
        super().__init__("option attn_implementation=%s (spec.model.attnImplementation): %s; %s would run" %
                         (implementation, why, " or ".join(available)))
        md = {"implementation": implementation, "available": ",".join(available)}
        md.update({"package": package} if package else {"model": model})
        self.refuse(refusal.ATTN_IMPLEMENTATION_UNAVAILABLE, md, refusal.INVALID_ARGUMENT)


def attn_refusal(implementation: str, auto: Any, cfg: Any) -> AttnUnavailableError | None:  # noqa: ANN401
    """Why the attention implementation cannot run for the model of cfg (what the auto
    class auto loads), after loading it with the implementation failed: the model does
    not support it, or its package is not installed; None for any other failure."""
    try:
        cls = auto._model_mapping[type(cfg)]
    except (KeyError, ValueError):
        cls = None
    sdpa = cls is None or bool(getattr(cls, ATTN_SUPPORT["sdpa"], False))
    available = [i for i in ("sdpa", "eager") if i != implementation and (i == "eager" or sdpa)]
    flag = ATTN_SUPPORT.get(implementation)
    if cls is not None and flag and not getattr(cls, flag, False):
        return AttnUnavailableError(implementation, available, model=cls.__name__)
    package = ATTN_PACKAGES.get(implementation)
    if package and importlib.util.find_spec(package) is None:
        return AttnUnavailableError(implementation, available, package=package)
    return None


VISION_TOKENS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id", "image_token_index",
                 "video_token_index")


def vision_token_ids(cfg: Any) -> tuple[int, ...]:  # noqa: ANN401 - a transformers PretrainedConfig
    """The ids of a VLM's image and video placeholder tokens (config.json's
    image_token_id, vision_start_token_id, ...): the processor expands them into the
    image's patches, so an answer that held one would no longer match its image."""
    ids = set()
    for c in (cfg, getattr(cfg, "text_config", None)):
        for name in VISION_TOKENS:
            v = getattr(c, name, None) if c is not None else None
            if isinstance(v, int) and v >= 0:
                ids.add(v)
    return tuple(sorted(ids))


def per_token(v: object, prompt_len: int) -> bool:
    """Whether a processor's extra input v has one entry per prompt token (shape
    [1, prompt_len], such as transformers 5's mm_token_type_ids)."""
    return torch.is_tensor(v) and v.dim() == 2 and v.shape[0] == 1 and v.shape[1] == prompt_len


def reset_rope_offsets(model: torch.nn.Module) -> None:
    """Forgets the position offset a Qwen-VL model keeps from its last pass over an
    image (rope_deltas), so that a prompt without an image does not inherit it."""
    for m in model.modules():
        if getattr(m, "rope_deltas", None) is not None:
            m.rope_deltas = None


def batched_extra(extra: Mapping[str, Any], n: int, prompt_len: int, total_len: int) -> dict[str, Any]:
    """The processor's extra inputs of one prompt for a batch of n rows of total_len
    tokens: a per-token input of the prompt (shape [1, prompt_len], such as
    transformers 5's mm_token_type_ids) is extended with zeros (text tokens) over the
    answer and repeated per row; per-image inputs (pixel values, grids: one entry, or
    one patch row, per image) are stacked n times, one image per row."""
    out = {}
    for k, v in extra.items():
        if per_token(v, prompt_len):
            v = torch.cat([v, v.new_zeros((1, total_len - prompt_len))], dim=1).expand(n, -1)
        elif torch.is_tensor(v) and n > 1:
            v = torch.cat([v] * n, dim=0)
        out[k] = v
    return out
