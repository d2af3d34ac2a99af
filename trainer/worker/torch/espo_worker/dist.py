# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Several workers as one torch.distributed group.

With W trainer pods of K workers each (K = spec.trainer.workersPerReplica, one
process per GPU), worker k of pod r has global rank r*K + k of W*K. The group forms
at the first Configure (or Load), which the trainer sends to every worker at once,
rendezvousing over TCP at MASTER_ADDR:MASTER_PORT: by default the host of
$ESPO_DRIVER_ADDR (pod 0, whose worker 0 is rank 0; in the local mode resolved
through the pod network's hosts file, espo_worker.podnet) and port 29500.

Which side averages: the trainer normalises its loss weights over the whole batch,
all workers together, so the batch gradient is the SUM of the workers' gradients.
Step therefore all-reduces with SUM, never AVG; the workers report
reduces_gradients = true and the trainer never asks for Gradients.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Sequence
from typing import TypeVar

import torch
import torch.distributed as td

from . import podnet

_T = TypeVar("_T")


class Single:
    """One worker: every collective is the identity."""
    rank, world, per_pod = 0, 1, 1

    def init(self) -> None:
        pass

    def broadcast_tensors(self, tensors: Iterable[torch.Tensor]) -> None:
        pass

    def broadcast_object(self, obj: _T) -> _T:
        return obj

    def broadcast_optimizer(self, opt: torch.optim.Optimizer, params: Iterable[torch.Tensor]) -> None:
        pass

    def all_reduce_sum(self, tensors: Sequence[torch.Tensor]) -> None:
        pass


class Group(Single):
    def __init__(self, rank: int, world: int, addr: str, port: int, backend: str, timeout_s: float = 1800,
                 per_pod: int = 0) -> None:
        """Worker rank of world, per_pod to a pod (0: all in one), ranks numbered pod by
        pod."""
        self.rank, self.world, self.per_pod = rank, world, per_pod or world
        self.addr, self.port, self.backend, self.timeout = addr, port, backend, timeout_s
        self.ready = False

    def init(self) -> None:
        if self.ready:
            return
        td.init_process_group(self.backend, init_method="tcp://%s:%d" % (self.addr, self.port), rank=self.rank,
                              world_size=self.world, timeout=datetime.timedelta(seconds=self.timeout))
        self.ready = True

    def _dev(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.backend != "nccl" or t.is_cuda else t.cuda()

    def broadcast_tensors(self, tensors: Iterable[torch.Tensor]) -> None:
        for t in tensors:
            d = self._dev(t.data)
            td.broadcast(d, 0)
            if d is not t.data:
                t.data.copy_(d)

    def broadcast_object(self, obj: _T) -> _T:
        box = [obj]
        td.broadcast_object_list(box, 0)
        return box[0]

    def broadcast_optimizer(self, opt: torch.optim.Optimizer, params: Iterable[torch.Tensor]) -> None:
        has = self.broadcast_object(bool(opt.state) if self.rank == 0 else None)
        if not has:
            opt.state.clear()
            return
        for p in params:
            st = opt.state[p]
            if "exp_avg" not in st:
                st["exp_avg"], st["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                st["step"] = torch.zeros((), dtype=torch.float32)
            self.broadcast_tensors([st["exp_avg"], st["exp_avg_sq"]])
            st["step"] = torch.tensor(float(self.broadcast_object(float(st["step"]))))

    def all_reduce_sum(self, tensors: Sequence[torch.Tensor]) -> None:
        """Sums the tensors over the group in place, flattened into one buffer."""
        if not tensors:
            return
        flat = torch.cat([self._dev(t).reshape(-1).float() for t in tensors])
        td.all_reduce(flat, op=td.ReduceOp.SUM)
        off = 0
        for t in tensors:
            n = t.numel()
            t.copy_(flat[off:off + n].view_as(t))
            off += n


def from_env(procs_per_pod: int, local_index: int, device: str) -> Single:
    """The group of this process from the controller's environment, or Single."""
    pods = int(os.environ.get("ESPO_WORLD_SIZE", "1") or 1)
    pod = int(os.environ.get("ESPO_RANK", "0") or 0)
    world = pods * procs_per_pod
    if world <= 1:
        return Single()
    addr = os.environ.get("MASTER_ADDR")
    if not addr:
        driver = os.environ.get("ESPO_DRIVER_ADDR", "localhost:0")
        addr = podnet.resolve(driver.rsplit(":", 1)[0])
    port = int(os.environ.get("MASTER_PORT", "29500"))
    backend = "nccl" if device.startswith("cuda") else "gloo"
    return Group(pod * procs_per_pod + local_index, world, addr, port, backend, per_pod=procs_per_pod)
