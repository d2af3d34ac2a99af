# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""A tiny byte-level language model in plain torch, standing in for a real model.

Tokens are the 256 byte values plus BOS (256) and EOS (257). The model embeds each
token, runs a one-layer GRU and projects to the vocabulary. It is what the CPU tests
train: the same protocol code paths as a Hugging Face model, at a size two CPU cores
train in seconds.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

BOS = 256
EOS = 257
VOCAB = 258


class ByteTokenizer:
    eos_token_id = EOS
    bos_token_id = BOS

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Iterable[int]) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")


class TinyLM(nn.Module):
    """Embedding -> GRU -> linear head over VOCAB tokens."""

    def __init__(self, embed: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, ids: torch.Tensor, state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [B, T] -> logits [B, T, VOCAB] (float32) and the final GRU state."""
        out, state = self.rnn(self.embed(ids), state)
        return self.head(out), state
