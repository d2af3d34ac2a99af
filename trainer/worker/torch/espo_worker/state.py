# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""A worker's saved state (Save, Load, Configure's load path), in its two forms.

- A state file (STATE_FORMAT): whole tensors, written by worker 0 alone. Every
  replicated group writes it, and Policy.save writes it for any group.
- A sharded state folder (SHARDED_FORMAT): written by every worker of a sharded
  group at once, each its own shards, with PyTorch's distributed checkpoint
  (torch.distributed.checkpoint): "meta.json" (the format, the model's settings, the
  step count, the optimizer's hyperparameters and per-parameter values, the number
  of workers that wrote it), DCP's ".metadata" and one "__<rank>_0.distcp" per
  worker. No worker ever holds more than its own shards. It loads sharded at any
  number of workers (DCP re-shards each tensor from the chunks that cover it), and
  whole into one worker, without a process group (read_whole): a replicated group,
  and the offline export, read it so.

Loading never unpickles an arbitrary object: a state file is read with
torch.load(weights_only=True); of a folder, the tensors are (DCP reads them so) and
DCP's ".metadata" is read by an unpickler that admits only DCP's own metadata
classes (safe_reader).
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import shutil
from collections.abc import Mapping, Sequence
from typing import IO, Any, NamedTuple

import torch

# A state file holds tensors, and dicts, lists, strings and ints of them, only: what
# torch.load(weights_only=True) reads on every supported torch (1.13 reads no Python
# float), so that loading a file never unpickles an arbitrary object. Model options,
# the step count and the optimizer's hyperparameters travel as JSON under "meta".
STATE_FORMAT = "espo-torch-worker/v2"
# v1 held Python floats; a torch whose safe unpickler reads them (2.x) still loads it.
STATE_FORMAT_V1 = "espo-torch-worker/v1"
# A sharded state folder's meta.json names this format.
SHARDED_FORMAT = "espo-torch-worker/sharded-v1"
META_FILE = "meta.json"


class State(NamedTuple):
    """A saved state's content: the model's settings (by name), the trainable and the
    reference tensors, the optimizer's state dict and the step count."""

    options: dict[str, Any]
    params: list[torch.Tensor]
    reference: list[torch.Tensor]
    optimizer: dict[str, Any]
    steps: int


# -- the state file --------------------------------------------------------------


def read_state(path: str | IO[bytes]) -> Any:  # noqa: ANN401 - what the file holds, checked by parse_state
    """The state file at path, read with torch.load(weights_only=True): tensors and
    plain types only, never an arbitrary object (a file that holds one is refused)."""
    return torch.load(path, map_location="cpu", weights_only=True)


def parse_state(st: Any, path: str | IO[bytes]) -> State:  # noqa: ANN401 - a file's content, checked here
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


def file_content(st: State) -> dict[str, Any]:
    """What a state file holds for st (STATE_FORMAT): tensors under plain keys, the
    rest as JSON under "meta"."""
    opt = st.optimizer
    tensors = {i: {k: v for k, v in e.items() if torch.is_tensor(v)} for i, e in opt["state"].items()}
    values = {str(i): {k: v for k, v in e.items() if not torch.is_tensor(v)} for i, e in opt["state"].items()}
    meta = {"options": st.options, "steps": st.steps, "param_groups": opt["param_groups"], "optimizer_values": values}
    return {"format": STATE_FORMAT, "meta": json.dumps(meta), "params": st.params, "reference": st.reference,
            "optimizer_state": tensors}


def optimizer_layout(opt: Mapping[str, Any], params: Sequence[torch.Tensor]) -> dict[str, Any]:
    """An optimizer state dict's layout: its param_groups, and per parameter index each
    entry's value, or None for a tensor of the parameter's shape (a moment, which a
    sharded worker holds a shard of)."""
    state = {}
    for i, entries in opt["state"].items():
        state[i] = {k: None if torch.is_tensor(v) and v.shape == params[i].shape else
                    (v.item() if torch.is_tensor(v) else v) for k, v in entries.items()}
    return {"state": state, "param_groups": opt["param_groups"]}


# -- the sharded state folder ----------------------------------------------------


def is_folder(path: str | IO[bytes]) -> bool:
    """Whether path is a sharded state folder's (rather than a state file's)."""
    return isinstance(path, str) and os.path.isdir(path)


def folder_tensors(params: Sequence[torch.Tensor], reference: Sequence[torch.Tensor],
                   opt: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors of a sharded state folder by key: "params/i", "reference/i" and
    "optimizer/i/<entry>" for each moment of parameter i (a tensor of its shape).
    Sharded, they are DTensors, of which each worker saves and loads its shards."""
    out = {}
    for i, (p, r) in enumerate(zip(params, reference)):
        out["params/%d" % i], out["reference/%d" % i] = p, r
    for i, entries in opt["state"].items():
        for k, v in entries.items():
            if torch.is_tensor(v) and v.shape == params[i].shape:
                out["optimizer/%s/%s" % (i, k)] = v
    return out


def folder_meta(options: Mapping[str, Any], steps: int, layout: Mapping[str, Any], workers: int) -> dict[str, Any]:
    """A sharded state folder's meta.json: what is not a shard (optimizer_layout's
    layout: the values, and None where an entry is a tensor)."""
    return {"format": SHARDED_FORMAT, "options": dict(options), "steps": steps, "workers": workers,
            "param_groups": layout["param_groups"],
            "optimizer": {str(i): e for i, e in layout["state"].items()}}


def save_folder(path: str, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any], rank: int) -> int:
    """Writes a sharded state folder at path: every worker of the group calls it at
    once (it runs collectives), each writing its shards of tensors; worker 0 writes
    meta. The folder is written as "<path>.partial" and renamed into place by worker
    0, so a folder at path is always complete. Returns the bytes written: the whole
    folder's on worker 0, this worker's shard file's on the others."""
    import torch.distributed as td
    import torch.distributed.checkpoint as dcp
    partial = path + ".partial"
    if rank == 0:
        shutil.rmtree(partial, ignore_errors=True)  # a save cut short, maybe of more workers
        os.makedirs(partial)
    td.barrier()  # no worker writes into the folder before it is fresh
    dcp.save(dict(tensors), storage_writer=dcp.FileSystemWriter(partial, sync_files=True))
    mine = os.path.join(partial, "__%d_0.distcp" % rank)  # none where a replica wrote the same shards
    own = os.path.getsize(mine) if os.path.exists(mine) else 0
    td.barrier()  # every worker has looked at its file before worker 0 moves the folder
    if rank != 0:
        return own
    with open(os.path.join(partial, META_FILE), "w") as f:
        json.dump(meta, f)
        f.flush()
        os.fsync(f.fileno())
    n = sum(os.path.getsize(os.path.join(partial, name)) for name in os.listdir(partial))
    shutil.rmtree(path, ignore_errors=True)
    os.rename(partial, path)
    return n


def read_meta(path: str) -> dict[str, Any]:
    """A sharded state folder's meta.json, or IOError naming the folder."""
    try:
        with open(os.path.join(path, META_FILE)) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise IOError("load %s: a folder without %s is no sharded worker state (%s)" %
                      (path, META_FILE, SHARDED_FORMAT)) from None
    except ValueError as e:
        raise IOError("load %s: a damaged %s: %s" % (path, META_FILE, e)) from None
    if not isinstance(meta, dict) or meta.get("format") != SHARDED_FORMAT:
        raise IOError("load %s: not a sharded torch worker state (%s)" % (path, SHARDED_FORMAT))
    return meta


def load_folder(path: str, tensors: Mapping[str, torch.Tensor], whole: bool = False) -> None:
    """Fills tensors (by folder_tensors' keys) from the sharded state folder at path:
    each worker of a sharded group its shards (every worker calls it at once), or,
    whole, every tensor entire in this process alone."""
    import torch.distributed.checkpoint as dcp
    try:
        with torch.no_grad():
            dcp.load(dict(tensors), storage_reader=safe_reader(path), no_dist=whole)
    except dcp.CheckpointException as e:
        raise IOError("load %s: a damaged sharded worker state: %s" % (path, e)) from None


def read_whole(path: str, meta: Mapping[str, Any]) -> State:
    """The State of the sharded state folder at path (meta its meta.json), every tensor
    whole, read in this process alone."""
    stored = safe_reader(path).read_metadata().state_dict_metadata
    try:
        n = sum(1 for k in stored if k.startswith("params/"))
        tensors = {k: torch.empty(v.size, dtype=v.properties.dtype) for k, v in stored.items()}
        load_folder(path, tensors, whole=True)
        state = {}
        for i, entries in meta["optimizer"].items():
            state[int(i)] = {k: tensors["optimizer/%s/%s" % (i, k)] if v is None else torch.tensor(v)
                             for k, v in entries.items()}
        return State(meta["options"], [tensors["params/%d" % i] for i in range(n)],
                     [tensors["reference/%d" % i] for i in range(n)],
                     {"state": state, "param_groups": meta["param_groups"]}, int(meta["steps"]))
    except (KeyError, TypeError, ValueError) as e:
        raise IOError("load %s: a damaged sharded worker state: %s" % (path, e)) from None


class _MetadataUnpickler(pickle.Unpickler):
    """Admits only the classes DCP's metadata is made of."""

    MODULES = ("torch.distributed.checkpoint.metadata", "torch.distributed.checkpoint.filesystem")
    NAMES = {("torch", "Size"), ("torch.serialization", "_get_layout"), ("pathlib", "PosixPath"),
             ("pathlib", "PurePosixPath"), ("collections", "OrderedDict")}

    def find_class(self, module: str, name: str) -> Any:  # noqa: ANN401 - a class or a dtype
        if module in self.MODULES or (module, name) in self.NAMES:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), (torch.dtype, torch.memory_format)):
            return getattr(torch, name)
        raise pickle.UnpicklingError("%s.%s is not part of a checkpoint's metadata" % (module, name))


@functools.cache
def _safe_reader_type() -> type:
    """DCP's FileSystemReader, whose metadata is unpickled by _MetadataUnpickler (made
    on first use: importing DCP takes half a second)."""
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import StorageMeta

    class SafeReader(FileSystemReader):
        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - DCP's Metadata
            try:
                with open(os.path.join(self.path, ".metadata"), "rb") as f:
                    md = _MetadataUnpickler(f).load()
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as e:
                why = "a damaged or foreign sharded worker state: .metadata: %s" % e
                raise IOError("load %s: %s" % (self.path, why)) from None
            if getattr(md, "storage_meta", None) is None:
                md.storage_meta = StorageMeta()
            md.storage_meta.load_id = self.load_id
            return md

    return SafeReader


def safe_reader(path: str) -> Any:  # noqa: ANN401 - DCP's StorageReader
    """A reader of the sharded state folder at path: DCP's, but that its metadata is
    read by a restricted unpickler."""
    return _safe_reader_type()(path)
