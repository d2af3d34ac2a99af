# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""What a Hugging Face model folder must hold for this worker to load it, checked
before transformers is imported, so that a folder missing files is refused at
Configure with every missing file named, rather than with transformers' first
complaint or at the first Generate.

HFBackend reads a folder with AutoConfig, AutoTokenizer (or, for a VLM, whose
config.json has a vision_config, AutoProcessor), AutoModelForCausalLM (or its
image-text-to-text twin) and the chat template. So the folder needs:

- config.json;
- the weights: model.safetensors or pytorch_model.bin, or a shard index
  (model.safetensors.index.json, pytorch_model.bin.index.json) and every shard its
  weight_map names;
- a tokenizer: tokenizer.json (a fast tokenizer), or the files of a slow one:
  tokenizer.model or spiece.model (SentencePiece), vocab.json with merges.txt (BPE),
  vocab.txt (WordPiece);
- a chat template: chat_template.jinja, chat_template.json, or a "chat_template" in
  tokenizer_config.json or processor_config.json;
- for a VLM, its image processor: preprocessor_config.json, or an "image_processor"
  in processor_config.json (where transformers 5 saves it).

A path that is not a folder is checked only when it is absolute: it then names a
folder that does not exist; a relative one may be a model id in the Hugging Face
cache, which transformers resolves.

The refusal crosses the protocol as FAILED_PRECONDITION whose message begins with
PREFIX; the Go side's twin is worker.ModelIncompletePrefix (trainer/worker), and
the torch tests check that the Go trainer reads it as worker.ModelIncompleteError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

PREFIX = "model incomplete: "

WEIGHTS = (("model.safetensors", "model.safetensors.index.json"), ("pytorch_model.bin", "pytorch_model.bin.index.json"))
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "vocab.txt")
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
CHAT_TEMPLATE_CONFIGS = ("tokenizer_config.json", "processor_config.json")


class ModelIncompleteError(Exception):
    """The model folder lacks files the model needs: a restart reads the same folder.
    str(e) begins with PREFIX and names the folder and every missing file."""

    def __init__(self, path: str, missing: Iterable[str]) -> None:
        self.path = path
        self.missing = list(missing)
        super().__init__("%sthe model folder %s lacks %s: copy every file of the model's Hugging Face repository "
                         "into it" % (PREFIX, path, "; ".join(self.missing)))


class ModelUnsupportedError(ModelIncompleteError):
    """The model folder holds an architecture the worker cannot train (an encoder, a
    classifier, ...): a restart reads the same folder. It crosses the protocol as a
    ModelIncompleteError does, so the run ends with the ModelIncomplete outcome;
    str(e) names the folder, what it holds and what is supported."""

    def __init__(self, path: str, found: str, supported: str) -> None:
        self.path = path
        self.missing = []
        Exception.__init__(self, "%sthe model folder %s holds %s, which the worker cannot train: it trains %s" %
                           (PREFIX, path, found, supported))


def _json(path: str) -> dict[str, Any]:
    """The JSON object in path, or {} when it is absent or not a JSON object."""
    try:
        with open(path) as f:
            v = json.load(f)
    except (OSError, ValueError):
        return {}
    return v if isinstance(v, dict) else {}


def _missing_weights(d: str, has: Callable[[str], bool]) -> list[str]:
    for single, index in WEIGHTS:
        if has(single):
            return []
        if has(index):
            shards = sorted(set(_json(os.path.join(d, index)).get("weight_map", {}).values()))
            if not shards:
                return ["the shards of %s (it names none in weight_map)" % index]
            return ["%s (a shard %s names)" % (s, index) for s in shards if not has(s)]
    return ["the weights (model.safetensors, pytorch_model.bin, or a shard index "
            "model.safetensors.index.json or pytorch_model.bin.index.json with its shards)"]


def _has_tokenizer(has: Callable[[str], bool]) -> bool:
    return any(has(f) for f in TOKENIZER_FILES) or (has("vocab.json") and has("merges.txt"))


def _has_chat_template(d: str, has: Callable[[str], bool]) -> bool:
    if any(has(f) for f in CHAT_TEMPLATE_FILES):
        return True
    return any(_json(os.path.join(d, f)).get("chat_template") for f in CHAT_TEMPLATE_CONFIGS if has(f))


def _has_image_processor(d: str, has: Callable[[str], bool]) -> bool:
    return has("preprocessor_config.json") or "image_processor" in _json(os.path.join(d, "processor_config.json"))


def missing_files(d: str) -> list[str]:
    """The files folder d lacks for the worker to load its model, in the order the
    module's doc lists them; [] when none is missing."""
    def has(name: str) -> bool:
        return os.path.isfile(os.path.join(d, name))
    missing = []
    if not has("config.json"):
        missing.append("config.json")
    missing += _missing_weights(d, has)
    if not _has_tokenizer(has):
        missing.append("a tokenizer (tokenizer.json; or tokenizer.model, spiece.model, vocab.json with merges.txt, "
                       "or vocab.txt)")
    if not _has_chat_template(d, has):
        missing.append("a chat template (chat_template.jinja, chat_template.json, or chat_template in "
                       "tokenizer_config.json)")
    if "vision_config" in _json(os.path.join(d, "config.json")) and not _has_image_processor(d, has):
        missing.append("preprocessor_config.json, or an image_processor in processor_config.json (the image processor "
                       "of a vision-language model)")
    return missing


def check(path: str) -> None:
    """Raises ModelIncompleteError when path, the model option as the trainer sent it
    (the path in the worker's pod), is a folder that lacks files the model needs, or
    an absolute path that is no folder."""
    if not os.path.isdir(path):
        if os.path.isabs(path):
            raise ModelIncompleteError(path, ["the folder itself: no folder is there (is spec.model.pretrained the "
                                              "folder's name in spec.model.weights' claim?)"])
        return
    missing = missing_files(path)
    if missing:
        raise ModelIncompleteError(path, missing)
