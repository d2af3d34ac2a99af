# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Exports the trained policy as a Hugging Face folder, which transformers, peft and
vLLM load with nothing of this project:

- LoRA: the peft adapter (adapter_config.json, adapter_model.safetensors), and, when
  merge is asked for, the base model with the adapter merged in, in merged/;
- full fine-tuning: the model (config.json, generation_config.json, safetensors
  shards and their index).

Each model folder carries the tokenizer, and for a vision-language model the
processor, with the chat template the worker prompts with. Trained weights keep the
precision they trained in (float32). The folder is written beside its destination and
renamed into place once complete, with a manifest (espo-export.json) of the SHA-256 of
every file: a folder whose manifest is missing or does not match is no export
(verify).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from .backends import HFBackend

if TYPE_CHECKING:
    from collections.abc import Mapping

    import torch
    from peft import PeftModel

MANIFEST = "espo-export.json"
FORMAT = "espo-export/v1"
# The subfolder of a LoRA export that holds the merged model.
MERGED = "merged"


class ExportError(RuntimeError):
    """An export that cannot be written, or a folder that is no complete export."""


@dataclass
class Manifest:
    """What an export holds: the kind of training (lora or full), whether a merged model
    is beside the adapter, the optimizer step the weights are of, the base model's
    folder, and every file's SHA-256 by its path in the folder."""

    kind: str
    merged: bool
    step: int
    base: str
    files: dict[str, str] = field(default_factory=dict)
    format: str = FORMAT


def export(backend: HFBackend, dest: str, *, step: int, base: str, merge: bool = False,
           max_shard_size: str | int = "5GB") -> Manifest:
    """Writes the backend's model to the folder dest (replacing an export there) and
    returns its manifest. step is the optimizer step of the weights, base the model
    folder they were trained from; merge adds the merged model to a LoRA export, and
    max_shard_size bounds each safetensors file of a full model."""
    parent = os.path.dirname(os.path.abspath(dest)) or "."
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(dest) + ".partial-", dir=parent)
    except OSError as e:
        raise ExportError("export to %s: %s" % (dest, e)) from e
    try:
        kind = "lora" if backend.lora else "full"
        if backend.lora:
            save_adapter(backend.model, tmp)
            _save_preprocessing(backend, tmp)
            if merge:
                merged = copy.deepcopy(backend.model).merge_and_unload()
                _save_model(merged, backend, os.path.join(tmp, MERGED), max_shard_size)
        else:
            _save_model(backend.model, backend, tmp, max_shard_size)
        m = Manifest(kind=kind, merged=bool(merge and backend.lora), step=step, base=base, files=_digests(tmp))
        with open(os.path.join(tmp, MANIFEST), "w") as f:
            json.dump(asdict(m), f, indent=2, sort_keys=True)
        _replace(tmp, dest)
        return m
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def verify(folder: str) -> Manifest:
    """The manifest of the export in folder, once every file it names is there with its
    digest and no other file is; ExportError otherwise."""
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            m = Manifest(**json.load(f))
    except (OSError, ValueError, TypeError) as e:
        raise ExportError("%s is no complete export: %s: %s" % (folder, MANIFEST, e)) from None
    if m.format != FORMAT:
        raise ExportError("%s: %s is of format %r, want %r" % (folder, MANIFEST, m.format, FORMAT))
    got = _digests(folder)
    got.pop(MANIFEST, None)
    if got != m.files:
        differ = sorted(k for k in set(got) | set(m.files) if got.get(k) != m.files.get(k))
        raise ExportError("%s: files differ from its manifest: %s" % (folder, ", ".join(differ)))
    return m


def save_adapter(peft_model: PeftModel, folder: str, tensors: Mapping[str, torch.Tensor] | None = None) -> None:
    """Writes the peft model's current adapter to folder (adapter_config.json,
    adapter_model.safetensors): what an export holds and what the rollout engine is
    sent, one format for both; tensors (whole, by the model's parameter names) in
    place of the model's own, where it holds them sharded."""
    peft_model.save_pretrained(folder, state_dict=dict(tensors) if tensors is not None else None)


def _save_model(model: object, backend: HFBackend, folder: str, max_shard_size: str | int) -> None:
    """Saves a transformers model with its generation config and preprocessing."""
    model.save_pretrained(folder, max_shard_size=max_shard_size)
    _save_preprocessing(backend, folder)


def _save_preprocessing(backend: HFBackend, folder: str) -> None:
    """Saves what turns a prompt into the model's inputs: the processor (a VLM's, with
    its tokenizer) or the tokenizer, each with its chat template."""
    (backend.processor or backend.tok).save_pretrained(folder)


def _digests(folder: str) -> dict[str, str]:
    """The SHA-256 of every file under folder, by its path relative to it."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out[os.path.relpath(path, folder)] = h.hexdigest()
    return out


def _replace(tmp: str, dest: str) -> None:
    """Moves the complete folder tmp to dest; an export already at dest is moved aside
    first and removed after, so that dest is at every moment absent, the old export or
    the new one."""
    old = None
    if os.path.lexists(dest):
        old = tempfile.mkdtemp(prefix="." + os.path.basename(dest) + ".old-", dir=os.path.dirname(tmp))
        os.rmdir(old)
        os.rename(dest, old)
    os.rename(tmp, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
