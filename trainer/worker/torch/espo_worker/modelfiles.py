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

A path that is not a folder (resolve) may be, when it is relative, a model id in the
worker's Hugging Face cache ("Qwen/Qwen2.5-0.5B-Instruct"): the cached snapshot's
folder is then loaded, offline. Any other path that is no folder is refused with
ModelNotAFolderError, which names the folder looked for and the cache looked in: the
worker never downloads a model from the hub.

The refusal of missing files crosses the protocol as FAILED_PRECONDITION whose
message begins with PREFIX; the Go side's twin is worker.ModelIncompletePrefix
(trainer/worker), and the torch tests check that the Go trainer reads it as
worker.ModelIncompleteError. ModelNotAFolderError and ModelUnsupportedError are
that too, and carry a machine-readable reason besides (espo_worker.refusal), from
which the Go trainer writes its message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

from . import refusal

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


class ModelNotAFolderError(ModelIncompleteError, refusal.Refusal):
    """The model option names no folder, nor (relative) a model in the worker's Hugging
    Face cache: a restart finds the same. Reason refusal.MODEL_NOT_A_FOLDER, with the
    option (model), the absolute path looked at (folder) and, for a relative name, the
    cache looked in (cache)."""

    def __init__(self, path: str, cache: str = "") -> None:
        self.path = path
        self.missing = ["the folder itself"]
        folder = os.path.abspath(path)
        where = "no folder %s" % folder if folder == path else "no folder %s (%s as the worker was given it)" % (folder, path)
        if cache:
            where += " nor a model %s in the Hugging Face cache %s" % (path, cache)
        Exception.__init__(self, "%s%s: the worker loads a model from a folder in its pod and never downloads one: "
                                 "put the model's files on spec.model.weights' claim and set spec.model.pretrained "
                                 "to their folder" % (PREFIX, where))
        md = {"model": path, "folder": folder}
        if cache:
            md["cache"] = cache
        self.refuse(refusal.MODEL_NOT_A_FOLDER, md, refusal.FAILED_PRECONDITION)


class ModelUnsupportedError(ModelIncompleteError, refusal.Refusal):
    """The model folder holds an architecture the worker cannot train (an encoder, a
    classifier, a model_type transformers does not know, ...): a restart reads the
    same folder. It crosses the protocol as a ModelIncompleteError does, so the run
    ends with the ModelIncomplete outcome, with reason refusal.MODEL_UNSUPPORTED;
    str(e) names the folder, what it holds and what is supported."""

    def __init__(self, path: str, found: str, supported: str) -> None:
        self.path = path
        self.missing = []
        Exception.__init__(self, "%sthe model folder %s holds %s, which the worker cannot train: it trains %s" %
                           (PREFIX, path, found, supported))
        self.refuse(refusal.MODEL_UNSUPPORTED, {"folder": path, "found": found, "supported": supported},
                    refusal.FAILED_PRECONDITION)


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


# A model id of the Hugging Face hub: "name" or "owner/name".
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


def cache_folder(cache_dir: str | None = None) -> str:
    """The Hugging Face cache cached looks in: cache_dir, else where huggingface_hub
    keeps it: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
    else ~/.cache/huggingface/hub."""
    if cache_dir:
        return cache_dir
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.path.join(home, "hub")


def cached(name: str, cache_dir: str | None = None) -> str:
    """The folder of the snapshot of model id name that the Hugging Face cache
    (cache_folder(cache_dir)) holds at its main revision, as transformers finds it
    offline (models--<owner>--<name>/refs/main names the snapshot); "" when it holds
    none, or name is no model id. (Read here, so that the worker imports no
    huggingface_hub of its own.)"""
    if not MODEL_ID.fullmatch(name) or ".." in name:
        return ""
    repo = os.path.join(cache_folder(cache_dir), "models--" + name.replace("/", "--"))
    try:
        with open(os.path.join(repo, "refs", "main")) as f:
            revision = f.read().strip()
    except OSError:
        return ""
    if not MODEL_ID.fullmatch(revision) or "/" in revision:  # a commit hash, never a path
        return ""
    snapshot = os.path.join(repo, "snapshots", revision)
    return snapshot if os.path.isdir(snapshot) else ""


def resolve(path: str, cache_dir: str | None = None) -> str:
    """The folder to load the model of path from, the model option as the trainer sent
    it (the path in the worker's pod): path itself when it is a folder, or, for a
    relative name that is none, the snapshot of that model id in the Hugging Face
    cache (cache_dir: the hub's by default). Raises ModelNotAFolderError when it is
    neither, ModelIncompleteError when the folder lacks files the model needs."""
    folder = path
    if not os.path.isdir(path):
        folder = "" if os.path.isabs(path) else cached(path, cache_dir)
        if not folder:
            raise ModelNotAFolderError(path, "" if os.path.isabs(path) else cache_folder(cache_dir))
    check(folder)
    return folder


def check(path: str) -> None:
    """Raises ModelIncompleteError when folder path lacks files the model needs, and
    ModelNotAFolderError when path is no folder."""
    if not os.path.isdir(path):
        raise ModelNotAFolderError(path)
    missing = missing_files(path)
    if missing:
        raise ModelIncompleteError(path, missing)
