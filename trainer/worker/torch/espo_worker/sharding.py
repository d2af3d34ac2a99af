# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""How the workers of a group hold the model (spec.model.sharding).

- replicated: every worker holds the whole model, its gradient and its optimizer
  state; Step all-reduces the gradients (SUM) and every worker takes the same step.
- sharded: FSDP2 (torch.distributed.fsdp.fully_shard) over every worker of every pod.
  Each decoder layer, and the rest of the model as the root, is a unit whose
  parameters, gradients and AdamW moments are split in 1/N shards (dim 0). A forward
  pass gathers one unit's parameters at a time and a backward pass reduce-scatters its
  gradient (with SUM: the trainer normalises the loss weights over the whole batch),
  so each worker holds about 1/N of the parameters and optimizer state, plus the
  unit in flight and the activations.
- hybrid: FSDP2 over the K workers of each pod, the pods replicas of each other
  (HSDP, a 2-D mesh of pods x K): each worker holds 1/K, a unit is gathered from the
  pod's own workers, and a backward pass reduce-scatters within the pod and then
  all-reduces each shard across the pods (SUM both). The trade: K times the memory of
  sharded over all, for gathers that never leave the pod (NVLink rather than the
  network between nodes). With one pod it is sharded; with one worker a pod,
  replicated.

Every gather and reduce-scatter is a collective: each worker must run the same
collectives in the same order. The trainer's gang makes every sharded worker take
part in every call, with an empty share where it has none; within a call:

- Generate gathers the whole model once (gathered) and samples from it, so that
  workers whose answers differ in length and number need not pass in step;
- LogProbs and Backward pad their passes to the group's most (passes), with passes
  of weight 0 on a one-token input where a worker has fewer, each pass gathering
  one unit at a time;
- Save writes each worker's own shards (espo_worker.state); Load reads them, or
  scatters a whole state's tensors (distribute); Export gathers whole tensors on
  every worker (whole), worker 0 writing the folder;
- a rollout engine's push gathers one unit at a time (trainable_parts), and the
  answers it sampled are scored as LogProbs scores, so that beside an engine no
  worker ever gathers the whole model.

The vision tower of a VLM stays in the root unit, whose parameters every forward
gathers: a worker with a screenshot and one without run the same collectives.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from . import dist as distlib
from .config import SHARDINGS

REPLICATED, SHARDED, HYBRID = SHARDINGS


class Replicated:
    """Every worker holds the whole model."""

    mode = REPLICATED

    def wrap(self, model: torch.nn.Module) -> None:
        """Makes model this mode's: nothing to do."""

    @contextlib.contextmanager
    def gathered(self, model: torch.nn.Module) -> Iterator[None]:
        """The whole model, in the block: it always is."""
        yield

    def passes(self, n: int) -> int:
        """How many forward-backward passes this worker runs for its n."""
        return n

    @contextlib.contextmanager
    def stepwise(self) -> Iterator[None]:
        """A block of forward passes without backward (scoring), each gathering one
        unit at a time; after it, nothing stays gathered."""
        yield

    def reduce_gradients(self, grads: Sequence[torch.Tensor], group: distlib.Single) -> None:
        """Sums the workers' gradients (every worker gets the sum)."""
        group.all_reduce_sum(grads)

    def norm(self, grads: Sequence[torch.Tensor]) -> float:
        """The 2-norm of the whole gradient, of which grads are this worker's parts."""
        return math.sqrt(float(self._local_squares(grads)))

    @staticmethod
    def _local_squares(grads: Sequence[torch.Tensor]) -> torch.Tensor:
        """The sum of the squares of this worker's parts of grads, in float64."""
        total = torch.zeros((), dtype=torch.float64)
        for g in grads:
            local = g.to_local() if is_dtensor(g) else g
            total += local.detach().double().pow(2).sum().cpu()
        return total

    def whole(self, t: torch.Tensor) -> torch.Tensor:
        """The whole tensor of which t is this worker's part, on the CPU."""
        return t.detach().cpu()

    def trainable_parts(self, model: torch.nn.Module) -> Iterator[dict[str, torch.Tensor]]:
        """The model's trainable tensors, whole, by name, in parts: here one part of
        every tensor as it is (no copy)."""
        yield {k: p for k, p in model.named_parameters() if p.requires_grad}

    def distribute(self, whole: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
        """This worker's part of the tensor whole (given on worker 0; None elsewhere)
        in like's shape, dtype and placement."""
        return whole.to(device=like.device, dtype=like.dtype) if whole is not None else torch.empty_like(like)


class Sharded(Replicated):
    """FSDP2 over the group's workers."""

    mode = SHARDED

    def __init__(self, group: distlib.Single, device: str) -> None:
        group.init()
        self.group = group
        self.mesh = self.device_mesh(group, "cuda" if device.startswith("cuda") else "cpu")

    @staticmethod
    def device_mesh(group: distlib.Single, kind: str) -> Any:  # noqa: ANN401 - torch's DeviceMesh
        """The workers' mesh: one dimension, every worker."""
        from torch.distributed.device_mesh import init_device_mesh
        return init_device_mesh(kind, (group.world,))

    def shard_group(self) -> Any:  # noqa: ANN401 - a torch process group
        """The workers among whom each tensor is split: every worker."""
        return self.mesh.get_group()

    def wrap(self, model: torch.nn.Module) -> None:
        """Shards each decoder layer of the language model and then the rest (the
        root, with the embeddings, the head and a VLM's vision tower)."""
        from torch.distributed.fsdp import fully_shard
        units = decoder_layers(model)
        if not units:
            raise ValueError("sharding: found no decoder layers (modules named in the model's _no_split_modules) "
                             "to shard; use sharding replicated for this model")
        # every decoder layer's input requires a gradient (a LoRA model's frozen
        # embeddings would give none, but a screenshot's embeddings through a trained
        # vision tower would), so that each unit's gradient is reduced as its backward
        # pass ends, in the same order on every worker whatever its inputs
        model.enable_input_require_grads()
        for m in units:
            fully_shard(m, mesh=self.mesh)
        fully_shard(model, mesh=self.mesh)
        for m in fsdp_modules(model):
            # the trainer normalises the loss weights over the whole batch: SUM, with
            # the plain SUM op (gloo has no pre-multiplied sum)
            m.set_gradient_divide_factor(1.0)
            m.set_force_sum_reduction_for_comms(True)
            # a worker whose pass has no screenshot leaves the vision tower without
            # a gradient: reduce zeros for it, as the others reduce theirs
            m.set_reduce_scatter_unused_params(True, recurse=False)
        self.model = model

    @contextlib.contextmanager
    def gathered(self, model: torch.nn.Module) -> Iterator[None]:
        """Gathers every unit's parameters for the block, so that its forward passes
        (any number of them) run no collective; reshards after."""
        mods = fsdp_modules(self.model)
        for m in mods:
            m.unshard()
            m.set_reshard_after_forward(False, recurse=False)
        try:
            yield
        finally:
            for m in mods:  # the root keeps its parameters from forward to backward, as fully_shard sets it
                m.set_reshard_after_forward(m is not self.model, recurse=False)
                m.reshard()

    def passes(self, n: int) -> int:
        t = torch.tensor([n], dtype=torch.int64)
        import torch.distributed as td
        td.all_reduce(t, op=td.ReduceOp.MAX)
        return int(t.item())

    @contextlib.contextmanager
    def stepwise(self) -> Iterator[None]:
        """Reshards every unit after the block: the root keeps its parameters
        gathered after a forward pass for the backward pass, which scoring never
        runs, and a weight changed after (a step, the reference swapped in) must be
        gathered anew."""
        try:
            yield
        finally:
            for m in fsdp_modules(self.model):
                m.reshard()

    def reduce_gradients(self, grads: Sequence[torch.Tensor], group: distlib.Single) -> None:
        """Nothing: each backward pass reduce-scattered its gradients (SUM)."""

    def norm(self, grads: Sequence[torch.Tensor]) -> float:
        import torch.distributed as td
        squares = self._local_squares(grads).reshape(1)
        # the shards' squares add up to the whole's (once: not over the replicas)
        td.all_reduce(squares, op=td.ReduceOp.SUM, group=self.shard_group())
        return math.sqrt(float(squares))

    def whole(self, t: torch.Tensor) -> torch.Tensor:
        return (t.full_tensor() if is_dtensor(t) else t).detach().cpu()

    def trainable_parts(self, model: torch.nn.Module) -> Iterator[dict[str, torch.Tensor]]:
        """One part per unit, each gathered in turn (every worker must take every
        part): the unit's trainable tensors, whole, copied on its device, so no worker
        ever holds more of the whole model than one unit. A decoder layer's part holds
        all its tensors (a serving engine's fused layers load from whole parts)."""
        for m in fsdp_modules(model):
            m.unshard()
            try:
                yield {k: p.detach().clone() for k, p in model.named_parameters()
                       if p.requires_grad and not is_dtensor(p)}
            finally:
                m.reshard()

    def distribute(self, whole: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
        if not is_dtensor(like):
            return super().distribute(whole, like)
        from torch.distributed.tensor import distribute_tensor
        src = whole.to(device=like.device, dtype=like.dtype) if whole is not None else \
            torch.empty(like.shape, dtype=like.dtype, device=like.device)
        return distribute_tensor(src, like.device_mesh, like.placements, src_data_rank=0)


class Hybrid(Sharded):
    """FSDP2 within each pod, replicated across the pods (HSDP)."""

    mode = HYBRID

    @staticmethod
    def device_mesh(group: distlib.Single, kind: str) -> Any:  # noqa: ANN401 - torch's DeviceMesh
        """The workers' mesh: pods x workers of a pod (ranks are numbered pod by pod)."""
        from torch.distributed.device_mesh import init_device_mesh
        return init_device_mesh(kind, (group.world // group.per_pod, group.per_pod),
                                mesh_dim_names=("replicate", "shard"))

    def shard_group(self) -> Any:  # noqa: ANN401 - a torch process group
        """The workers of this worker's pod."""
        return self.mesh.get_group("shard")


def shards(mode: str, group: distlib.Single) -> bool:
    """Whether mode splits the model among the group's workers: a group of one, and
    hybrid with one worker a pod, are replicated whatever the mode."""
    return mode != REPLICATED and group.world > 1 and not (mode == HYBRID and group.per_pod == 1)


def new(mode: str, group: distlib.Single, device: str) -> Replicated:
    """The sharding of mode for the group's workers: hybrid over one pod is sharded."""
    if not shards(mode, group):
        return Replicated()
    if mode == HYBRID and group.world > group.per_pod:
        return Hybrid(group, device)
    return Sharded(group, device)


def is_dtensor(t: Any) -> bool:  # noqa: ANN401 - any tensor-like value
    from torch.distributed.tensor import DTensor
    return isinstance(t, DTensor)


def fsdp_modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    from torch.distributed.fsdp import FSDPModule
    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The language model's decoder layers: the modules whose class the model names
    in _no_split_modules, but not the vision tower's blocks (see the module's doc)."""
    names: set[str] = set()
    for m in model.modules():
        names.update(getattr(m, "_no_split_modules", None) or [])
    return [m for name, m in model.named_modules()
            if type(m).__name__ in names and "Decoder" in type(m).__name__ and "visual" not in name]
