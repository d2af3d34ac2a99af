# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The engine's side of the wire: one vLLM LLM, served request by request.

Every request is a dict with "op"; every reply is {"ok": value} or {"error": message,
"kind": "invalid" | "internal"}:

    start         {model, dtype, seed, device, gpu_memory_utilization, max_model_len,
                   enforce_eager, cpu_kv_cache_gib, lora_rank}
                  -> {"vllm": version}; loads the model folder (local files only)
    generate      {prompts: [{ids, image (PNG bytes or None), seed}], n, temperature,
                   greedy, max_tokens, stop_ids, banned_ids, lora (None or {id, path})}
                  -> [[(token ids, sampler log-probs), ...n] per prompt]
    load_weights  {path}: a safetensors file of full tensors in Hugging Face names,
                  loaded in place (every tensor of a fused layer must be in it) -> count
    load_weights_ipc  {handles: [(name, rebuild args of torch's reduce_tensor)]}: the
                  same, each tensor a CUDA IPC handle of the worker's -> count
    close         -> None, then the server exits

The log-probs are vLLM's raw ones: log_softmax of the logits before temperature,
the sampled token's, so at temperature 1 the sampling distribution's.
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypedDict

    from vllm import LLM

    class EnginePrompt(TypedDict):
        """A prompt of generate: its token ids, its image's PNG bytes (or None) and
        its sampling seed."""

        ids: Sequence[int]
        image: bytes | None
        seed: int

    class LoraRef(TypedDict):
        """The adapter generate serves: its id and the folder peft saved it to."""

        id: int
        path: str

# vLLM's CPU backend needs the KV cache size before it is imported; the in-process
# engine (no engine-core process of its own) starts in seconds where the default
# takes most of a minute, and leaves this process the only one to supervise.
_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "TOKENIZERS_PARALLELISM": "false"}

# The LoRA ranks vLLM serves (its max_lora_rank choices).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class Invalid(ValueError):
    """The request or the model is at fault: retrying will not help."""


def model_max_len(model: str) -> int:
    """The longest sequence the model folder's config allows (max_position_embeddings
    of its text model), 0 when it says none."""
    import transformers
    cfg = transformers.AutoConfig.from_pretrained(model, local_files_only=True)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return int(getattr(text, "max_position_embeddings", 0) or 0)


class Engine:
    def __init__(self) -> None:
        self.llm: LLM | None = None
        self.tied_cpu_head = False

    def start(self, model: str, dtype: str = "float32", seed: int = 0, device: str = "cpu",
              gpu_memory_utilization: float = 0.3, max_model_len: int = 0, enforce_eager: bool = False,
              cpu_kv_cache_gib: int = 4, lora_rank: int = 0) -> dict[str, str]:
        for k, v in _ENV.items():
            os.environ.setdefault(k, v)
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(int(cpu_kv_cache_gib or 4))
        import vllm
        kw = dict(model=model, tokenizer=model, dtype=dtype, seed=int(seed) & (2 ** 31 - 1),
                  gpu_memory_utilization=float(gpu_memory_utilization or 0.3), enforce_eager=bool(enforce_eager),
                  worker_extension_cls="espo_engine.extension.WeightLoader", enable_prefix_caching=True,
                  skip_tokenizer_init=False)
        if max_model_len:
            kw["max_model_len"] = int(max_model_len)
        if lora_rank:
            fit = [r for r in LORA_RANKS if r >= lora_rank]
            if not fit:
                raise Invalid("LoRA rank %d: vLLM serves ranks up to %d" % (lora_rank, LORA_RANKS[-1]))
            kw.update(enable_lora=True, max_lora_rank=fit[0], max_loras=1)
        try:
            if device == "cpu":
                # A prompt's prefill cut over two scheduler steps (chunked prefill, which a
                # batch of more prompt tokens than a step's budget, 4,096 on a CPU, leads to)
                # rewinds the request's seeded generator, which a CPU generator cannot do.
                # Whole prefills, with a step budget of at least one whole sequence.
                kw.update(enable_chunked_prefill=False,
                          max_num_batched_tokens=max(int(max_model_len or 0) or model_max_len(model), 4096))
            self.llm = vllm.LLM(**kw)
        except Exception as e:  # noqa: BLE001 - vLLM raises many kinds; all say the model or settings
            raise Invalid("vLLM %s could not load %s: %s: %s" % (vllm.__version__, model, type(e).__name__, e)) from e
        cfg = self.llm.llm_engine.model_config.hf_config
        text = getattr(cfg, "text_config", None) or cfg
        self.tied_cpu_head = device == "cpu" and bool(getattr(text, "tie_word_embeddings", False) or
                                                      getattr(cfg, "tie_word_embeddings", False))
        return {"vllm": vllm.__version__}

    def need(self) -> None:
        if self.llm is None:
            raise Invalid("engine: not started")

    def generate(self, prompts: Iterable[EnginePrompt], n: int, temperature: float = 1.0, greedy: bool = False,
                 max_tokens: int = 256, stop_ids: Iterable[int] = (), banned_ids: Iterable[int] = (),
                 lora: LoraRef | None = None) -> list[list[tuple[list[int], list[float]]]]:
        self.need()
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        inputs, params = [], []
        for p in prompts:
            tp = TokensPrompt(prompt_token_ids=list(p["ids"]))
            if p.get("image") is not None:
                from PIL import Image
                tp["multi_modal_data"] = {"image": Image.open(io.BytesIO(p["image"])).convert("RGB")}
            inputs.append(tp)
            params.append(SamplingParams(
                n=1 if greedy else n, temperature=0.0 if greedy else float(temperature), top_p=1.0,
                max_tokens=int(max_tokens), logprobs=0, seed=int(p["seed"]) & (2 ** 63 - 1),
                stop_token_ids=list(stop_ids), logit_bias={int(b): -100.0 for b in banned_ids} or None,
                detokenize=False))
        kw = {}
        if lora is not None:
            from vllm.lora.request import LoRARequest
            kw["lora_request"] = [LoRARequest("espo-%d" % lora["id"], int(lora["id"]), lora["path"])] * len(inputs)
        outs = self.llm.generate(inputs, params, use_tqdm=False, **kw)
        result = []
        for out in outs:
            answers = []
            for c in out.outputs:
                ids = list(c.token_ids)
                lps = [float(d[t].logprob) for d, t in zip(c.logprobs, ids)]
                answers.append((ids, lps))
            result.append(answers * n if greedy else answers)
        return result

    def load_weights(self, path: str) -> int:
        self.need()
        return self._loaded(self.llm.collective_rpc("espo_load", args=(path, self.tied_cpu_head))[0])

    def load_weights_ipc(self, handles: Sequence[tuple[str, Sequence[object]]]) -> int:
        self.need()
        return self._loaded(self.llm.collective_rpc("espo_load_ipc", args=(handles,))[0])

    def _loaded(self, count: int) -> int:
        # Nothing computed from the old weights may be reused: the prefix cache's keys
        # and values, and a VLM's image embeddings (the scheduler's record of them too).
        self.llm.reset_prefix_cache()
        self.llm.llm_engine.reset_encoder_cache()
        self.llm.reset_mm_cache()
        return count


def _reply(conn: Connection, fn: Callable[..., object], kw: Mapping[str, object]) -> None:
    try:
        conn.send({"ok": fn(**kw)})
    except Invalid as e:
        conn.send({"error": str(e), "kind": "invalid"})
    except Exception as e:  # noqa: BLE001 - reported to the worker, which fails the call
        traceback.print_exc()
        conn.send({"error": "%s: %s" % (type(e).__name__, e), "kind": "internal"})


def serve(fd: int) -> int:
    """Answers requests on the socket at fd until close or the worker's end closes."""
    conn = Connection(fd)
    engine = Engine()
    ops = {"start": engine.start, "generate": engine.generate, "load_weights": engine.load_weights,
           "load_weights_ipc": engine.load_weights_ipc}
    while True:
        try:
            req = conn.recv()
        except EOFError:  # the worker is gone
            return 0
        op = req.pop("op", None)
        if op == "close":
            conn.send({"ok": None})
            return 0
        if op not in ops:
            conn.send({"error": "unknown op %r" % op, "kind": "invalid"})
            continue
        _reply(conn, ops[op], req)
        sys.stderr.flush()
