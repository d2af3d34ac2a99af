# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""WorkerConfig: the worker's model and rollout settings, the one place of each
setting's default, help text, command-line flag and environment variable.

A setting comes, in order of precedence, from the trainer's Configure option of its
name (the job's spec.model, as a string), the command line (--lora-r), the
environment ($ESPO_WORKER_LORA_R, set in spec.trainer.env) and its default here. The
settings that only Configure sends (the test model's sizes, the sentence encoder, the
rollout engine) have no flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import typing
from collections.abc import Mapping
from typing import Any

# The rollout engines (option rollout_engine): the training model's own generate, or
# vLLM in a process beside the worker (espo_worker.rollout).
ENGINES = ("huggingface", "vllm")
# How the workers of a group hold the model (option sharding; espo_worker.sharding).
SHARDINGS = ("replicated", "sharded", "hybrid")

# The answer cap when neither Generate nor max_new_tokens gives one, and the prompt
# cap of a text-only prompt when max_prompt_tokens gives none (0: the whole prompt):
# a Hugging Face model's, and the test model's.
HF_MAX_NEW_TOKENS, HF_MAX_PROMPT_TOKENS = 256, 0
TINY_MAX_NEW_TOKENS, TINY_MAX_PROMPT_TOKENS = 96, 256

# The model name of the tiny test model (option pretrained).
TINY = "tiny"


class InvalidError(ValueError):
    """The request is at fault (INVALID_ARGUMENT)."""


def parse_bool(name: str, v: str) -> bool:
    """A boolean setting as the trainer and the environment write it: 1, true or yes
    (any case) is true, anything else false."""
    return v.strip().lower() in ("1", "true", "yes")


def parse_int(name: str, v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise InvalidError("option %s=%r: want an integer" % (name, v)) from None


def parse_float(name: str, v: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise InvalidError("option %s=%r: want a number" % (name, v)) from None


def parse_str(name: str, v: str) -> str:
    return v


_PARSERS = {"bool": parse_bool, "int": parse_int, "float": parse_float, "str": parse_str}


def setting(default: Any, help: str, *, flag: str | None = "", choices: tuple[str, ...] = ()) -> Any:  # noqa: ANN401
    """A field of WorkerConfig: its default and help; flag is the command-line flag's
    name without dashes ("" for the field's name with dashes, None for a setting that
    only Configure sends), and choices its allowed values."""
    return dataclasses.field(default=default, metadata={"help": help, "flag": flag, "choices": choices})


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    """The worker's settings. Zero (or empty) asks for the default named in the help."""

    pretrained: str = setting("", "local folder of a Hugging Face model, or 'tiny' for the test model; the Configure "
                                  "option pretrained (spec.model.pretrained) wins", flag="model")
    dtype: str = setting("bfloat16", "compute dtype on CUDA (autocast); trainable weights stay float32",
                         choices=("bfloat16", "float16", "float32"))
    lora_r: int = setting(0, "LoRA rank; 0: full fine-tuning")
    lora_alpha: int = setting(0, "LoRA alpha (0: 2r)")
    lora_dropout: float = setting(0.0, "LoRA dropout")
    lora_targets: str = setting("", "comma-separated module names (empty: all linear layers)")
    max_new_tokens: int = setting(0, "answer cap when Generate gives none (0: %d; tiny %d)" %
                                  (HF_MAX_NEW_TOKENS, TINY_MAX_NEW_TOKENS))
    max_prompt_tokens: int = setting(0, "keep the last N prompt tokens of a text-only prompt (0: all; tiny %d)" %
                                     TINY_MAX_PROMPT_TOKENS)
    gradient_checkpointing: bool = setting(False, "recompute activations in the backward pass to save memory")
    attn_implementation: str = setting("", "transformers attn_implementation, e.g. sdpa or flash_attention_2")
    tiny_embed: int = setting(32, "the test model's embedding width", flag=None)
    tiny_hidden: int = setting(64, "the test model's hidden width", flag=None)
    embedder_model: str = setting("", "the sentence encoder folder Embed answers with (spec.rewards.intent.embedder."
                                      "worker); empty: none", flag=None)
    rollout_engine: str = setting("huggingface", "what samples Generate's answers (spec.model.rollout.engine)",
                                  flag=None, choices=ENGINES)
    vllm_gpu_memory_utilization: float = setting(0.0, "the vLLM engine's share of the GPU's memory (0: the "
                                                      "engine's default)", flag=None)
    vllm_max_model_len: int = setting(0, "the vLLM engine's longest prompt and answer (0: the model's)", flag=None)
    vllm_enforce_eager: bool = setting(False, "run the vLLM engine without CUDA graphs", flag=None)
    vllm_cpu_kv_cache_gib: int = setting(0, "the vLLM engine's KV cache on a CPU, in GiB (0: the engine's "
                                            "default)", flag=None)
    sharding: str = setting("replicated", "how the workers of a group hold the model: replicated (each the whole "
                                          "model), sharded (FSDP2 over all) or hybrid (FSDP2 within a pod, replicated "
                                          "across pods; spec.model.sharding)", flag=None,
                            choices=SHARDINGS)

    # -- where settings come from ---------------------------------------------

    @classmethod
    def names(cls) -> list[str]:
        """The settings' names: the Configure options the worker understands."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> WorkerConfig:
        """The defaults with values (typed, as a state file or a test holds them) in
        their place; an unknown name is an InvalidError."""
        return cls().replace(values)

    def replace(self, values: Mapping[str, Any]) -> WorkerConfig:
        """This config with values (typed) in place of its own."""
        unknown = sorted(set(values) - set(self.names()))
        if unknown:
            raise InvalidError("unknown option %s; the torch worker understands %s" %
                               (", ".join(map(repr, unknown)), ", ".join(sorted(self.names()))))
        return dataclasses.replace(self, **values)

    def with_options(self, options: Mapping[str, str]) -> WorkerConfig:
        """This config with the Configure options (strings) parsed in place of its
        own, checked: a model is named and the rollout engine is a known one."""
        unknown = sorted(set(options) - set(self.names()))
        if unknown:
            raise InvalidError("unknown option %r; the torch worker understands %s" %
                               (unknown[0], ", ".join(sorted(self.names()))))
        types = _field_types()
        c = self.replace({k: _PARSERS[types[k]](k, v) for k, v in options.items()})
        if not c.pretrained:
            raise InvalidError("no model: set spec.model.pretrained (Configure option pretrained) or --model")
        if c.rollout_engine not in ENGINES:
            raise InvalidError("option rollout_engine=%r: want one of %s (spec.model.rollout.engine)" %
                               (c.rollout_engine, ", ".join(ENGINES)))
        if c.sharding not in SHARDINGS:
            raise InvalidError("option sharding=%r: want one of %s (spec.model.sharding)" %
                               (c.sharding, ", ".join(SHARDINGS)))
        if c.sharding != "replicated" and c.tiny:
            raise InvalidError("option sharding=%s: the test model tiny has no decoder layers to shard" % c.sharding)
        return c

    @classmethod
    def add_arguments(cls, ap: argparse.ArgumentParser, environ: Mapping[str, str] = os.environ) -> None:
        """Adds a flag for each setting that has one, its default from environ
        ($ESPO_WORKER_<NAME>, the flag's name) or the field's."""
        types = _field_types()
        for f in dataclasses.fields(cls):
            flag = f.metadata["flag"]
            if flag is None:
                continue
            flag = flag or f.name
            env = "ESPO_WORKER_" + flag.upper()
            raw = environ.get(env, "")
            default = _PARSERS[types[f.name]](f.name, raw) if raw else f.default
            help = "%s (default $%s or %r)" % (f.metadata["help"], env, f.default)
            dest, name = f.name, "--" + flag.replace("_", "-")
            if types[f.name] == "bool":
                ap.add_argument(name, dest=dest, action="store_true", default=default, help=help)
            else:
                ap.add_argument(name, dest=dest, type=_argtype(types[f.name]), default=default,
                                choices=f.metadata["choices"] or None, help=help)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> WorkerConfig:
        """The settings of parsed flags (add_arguments), the others at their defaults."""
        return cls.from_mapping({f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})

    def options(self) -> dict[str, Any]:
        """The settings by name, as a state file records them."""
        return dataclasses.asdict(self)

    # -- what the settings mean -------------------------------------------------

    @property
    def tiny(self) -> bool:
        """Whether the model is the tiny test model."""
        return self.pretrained == TINY

    @property
    def answer_cap(self) -> int:
        """The answer cap when Generate gives none."""
        return self.max_new_tokens or (TINY_MAX_NEW_TOKENS if self.tiny else HF_MAX_NEW_TOKENS)

    @property
    def prompt_cap(self) -> int:
        """The prompt tokens a text-only prompt keeps (its last ones; 0: all)."""
        return self.max_prompt_tokens or (TINY_MAX_PROMPT_TOKENS if self.tiny else HF_MAX_PROMPT_TOKENS)

    @property
    def vllm(self) -> bool:
        """Whether the vLLM engine samples the answers."""
        return self.rollout_engine == "vllm"


def is_runtime_option(name: str) -> bool:
    """Whether a setting says how the model is run rather than what it is: the rollout
    engine (how answers are sampled) and the sharding (how the workers hold it). A
    state holds the model; a worker that loads it keeps its own runtime settings."""
    return name in ("rollout_engine", "sharding") or name.startswith("vllm_")


def _field_types() -> dict[str, str]:
    """The type of each setting, by name: bool, int, float or str."""
    hints = typing.get_type_hints(WorkerConfig)
    return {f.name: hints[f.name].__name__ for f in dataclasses.fields(WorkerConfig)}


def _argtype(kind: str) -> type:
    return {"int": int, "float": float, "str": str}[kind]
