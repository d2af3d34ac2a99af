# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Sentence embeddings from a local sentence-transformers model folder, with transformers
alone (the worker image does not carry the sentence-transformers library).

A sentence-transformers folder lists its modules in modules.json. SentenceEncoder runs
the ones sentence encoders such as all-MiniLM-L6-v2 are made of, as that library runs
them:

  Transformer  the folder's (or the module's subfolder's) tokenizer and model; the text
               is tokenized with padding and truncation at sentence_bert_config.json's
               max_seq_length (else the tokenizer's limit) and the model's last hidden
               state taken per token;
  Pooling      1_Pooling/config.json's mode: mean over the attention mask (mean_tokens),
               the first token (cls_token), the largest value per dimension
               (max_tokens), the sum over the square root of the length
               (mean_sqrt_len_tokens) or the last real token (lasttoken); several modes
               are concatenated in that library's order;
  Normalize    each vector divided by its L2 norm.

Any other module (Dense, LayerNorm, ...) is refused with the module's name, as is a
folder without modules.json.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import torch

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
SUPPORTED = (TRANSFORMER, POOLING, NORMALIZE)

# The pooling modes of 1_Pooling/config.json, in the order sentence-transformers
# concatenates them.
POOLING_MODES = ("cls_token", "max_tokens", "mean_tokens", "mean_sqrt_len_tokens", "lasttoken")

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class EncoderError(ValueError):
    """A folder that is not a sentence encoder this module can run; the message names
    the folder and what is wrong with it."""


def _read_json(path: str) -> Any:  # noqa: ANN401 - a JSON document, whatever the file holds
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def weights_sha256(folder: str) -> str:
    """SHA-256 (hex) of the folder's weights file, "" when it has none."""
    for name in WEIGHT_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            return h.hexdigest()
    return ""


class SentenceEncoder:
    def __init__(self, folder: str, device: str = "cpu") -> None:
        """Loads the sentence-transformers model folder (local files only) onto device,
        in float32 and evaluation mode."""
        from transformers import AutoModel, AutoTokenizer

        modules_file = os.path.join(folder, "modules.json")
        if not os.path.isfile(modules_file):
            raise EncoderError("embedder model %s: no modules.json: not a sentence-transformers model folder" % folder)
        modules = sorted(_read_json(modules_file), key=lambda m: m.get("idx", 0))
        for m in modules:
            if m.get("type") not in SUPPORTED:
                raise EncoderError("embedder model %s: module %s (%s) is not supported: the worker runs %s" % (
                    folder, m.get("name"), m.get("type"), ", ".join(t.rsplit(".", 1)[1] for t in SUPPORTED)))
        types = [m["type"] for m in modules]
        if not types or types[0] != TRANSFORMER or types.count(POOLING) != 1:
            raise EncoderError("embedder model %s: modules.json lists %s; want a Transformer first, then one Pooling" % (
                folder, [t.rsplit(".", 1)[1] for t in types]))
        transformer = os.path.join(folder, modules[0].get("path", ""))
        pooling = os.path.join(folder, next(m for m in modules if m["type"] == POOLING).get("path", ""))
        self.normalize = NORMALIZE in types
        self.modes = self._pooling_modes(folder, pooling)
        st_config_file = os.path.join(transformer, "sentence_bert_config.json")
        st_config = _read_json(st_config_file) if os.path.isfile(st_config_file) else {}
        self.max_seq_length = st_config.get("max_seq_length")
        self.do_lower_case = st_config.get("do_lower_case", False)
        self.tokenizer = AutoTokenizer.from_pretrained(transformer, local_files_only=True)
        self.model = AutoModel.from_pretrained(transformer, local_files_only=True, dtype=torch.float32).to(device).eval()
        if self.max_seq_length is None:
            self.max_seq_length = min(self.tokenizer.model_max_length, self.model.config.max_position_embeddings)
        self.device, self.folder = device, folder
        self.dim = self.model.config.hidden_size * len(self.modes)
        self.name = "%s (%d dimensions)" % (os.path.basename(os.path.normpath(folder)), self.dim)
        self.sha256 = weights_sha256(transformer)

    @staticmethod
    def _pooling_modes(folder: str, pooling: str) -> list[str]:
        config_file = os.path.join(pooling, "config.json")
        if not os.path.isfile(config_file):
            raise EncoderError("embedder model %s: no %s" % (folder, os.path.relpath(config_file, folder)))
        config = _read_json(config_file)
        modes = [m for m in POOLING_MODES if config.get("pooling_mode_" + m)]
        unknown = sorted(k for k, v in config.items() if k.startswith("pooling_mode_") and v
                         and k[len("pooling_mode_"):] not in POOLING_MODES)
        if unknown or not modes:
            raise EncoderError("embedder model %s: pooling %s is not supported: the worker pools by %s" % (
                folder, unknown or "none", ", ".join(POOLING_MODES)))
        return modes

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """The embeddings of texts, a float32 tensor [len(texts), dim] on the CPU."""
        if not texts:
            return torch.zeros((0, self.dim))
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        batch = self.tokenizer(list(texts), padding=True, truncation="longest_first", return_tensors="pt",
                               max_length=self.max_seq_length)
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with torch.no_grad():
            tokens = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        pooled = torch.cat([self._pool(m, tokens, mask) for m in self.modes], dim=1)
        if self.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.float().cpu()

    @staticmethod
    def _pool(mode: str, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if mode == "cls_token":
            return tokens[:, 0]
        if mode == "max_tokens":
            return tokens.masked_fill(mask == 0, -1e9).max(dim=1).values
        summed, count = (tokens * mask).sum(dim=1), mask.sum(dim=1).clamp(min=1e-9)
        if mode == "mean_tokens":
            return summed / count
        if mode == "mean_sqrt_len_tokens":
            return summed / count.sqrt()
        # lasttoken: the last position the mask keeps, whichever side the padding is on
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        last = (mask.squeeze(-1) * positions).argmax(dim=1)
        return tokens[torch.arange(tokens.shape[0], device=tokens.device), last]
