# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The worker's side of the vLLM rollout engine (option rollout_engine=vllm).

VLLMEngine starts `python -m espo_engine` with the interpreter of the engine's own
environment ($ESPO_VLLM_PYTHON: vLLM pins torch and transformers versions that the
worker's lock does not share) as a child process, and talks to it over an unnamed
socket pair the child inherits: the engine opens no port and no socket file. Its
working folder (weights in transit, LoRA adapters, its log) is a private (0700)
temporary folder, in /dev/shm where there is one, removed on close.

Weights cross as tensors in Hugging Face names, so the two sides need not share a
torch or transformers version: full fine-tuning sends every trainable tensor whole
(every projection of a fused layer together), which the engine loads in place (vLLM's
reload_weights); LoRA writes the adapter as peft saves it and the engine serves it
under a new id each time (no merge). The full tensors of a model on a GPU cross as
CUDA IPC handles of the worker's own parameters (torch's reduce_tensor, which the
engine's torch rebuilds: no copy, nothing through the host); on a CPU they are written
to one safetensors file in the private folder, in shared memory.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from . import export

if TYPE_CHECKING:
    from typing import TypedDict

    import torch
    from peft import PeftModel

    class LoraRef(TypedDict):
        """The adapter the engine serves (the engine's generate's lora)."""

        id: int
        path: str

ENV_PYTHON = "ESPO_VLLM_PYTHON"
LOG_TAIL_BYTES = 4000


class EngineUnavailableError(ValueError):
    """The engine cannot run this model with these settings, or is not installed:
    permanent (the server answers INVALID_ARGUMENT)."""


class EngineDiedError(RuntimeError):
    """The engine process exited or broke off mid-run: the call fails (INTERNAL) and
    the trainer's attempt with it; the gang restarts from its checkpoint."""


class EngineError(RuntimeError):
    """The engine answered a request with an error of its own."""


def engine_python() -> str:
    """The engine environment's interpreter ($ESPO_VLLM_PYTHON), or
    EngineUnavailableError saying how to get one."""
    py = os.environ.get(ENV_PYTHON, "")
    if not py:
        raise EngineUnavailableError(
            "rollout engine vllm: no engine environment: set %s to the python of an environment with vLLM (the "
            "worker image sets it; hack/setup-python.sh --engine builds one from the project's lock)" % ENV_PYTHON)
    if not os.access(py, os.X_OK):
        raise EngineUnavailableError("rollout engine vllm: %s=%s is not an executable python" % (ENV_PYTHON, py))
    return py


def visible_device(visible: str | None, device: str) -> str:
    """The CUDA_VISIBLE_DEVICES of the engine of a worker on device ("cuda:k"): the
    k-th of the worker's visible devices (visible, None when the variable is unset:
    every device, by index), so that each worker of a pod has its engine on its own
    GPU, which the engine then sees as its only one (cuda:0)."""
    k = int(device.split(":", 1)[1]) if ":" in device else 0
    if visible is None:
        return str(k)
    ids = [d.strip() for d in visible.split(",") if d.strip()]
    if k >= len(ids):
        raise EngineUnavailableError("rollout engine vllm: the worker's device %s is not among CUDA_VISIBLE_DEVICES=%s"
                                     % (device, visible))
    return ids[k]


def _private_dir() -> str:
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="espo-engine-", dir=base)  # mode 0700


class VLLMEngine:
    """One vLLM engine in a child process. Not thread-safe: the policy's lock
    serialises every call."""

    def __init__(self, model: str, dtype: str, seed: int, device: str = "cpu", gpu_memory_utilization: float = 0.0,
                 max_model_len: int = 0, enforce_eager: bool = False, cpu_kv_cache_gib: int = 0, lora_rank: int = 0,
                 python: str | None = None) -> None:
        self.python = python or engine_python()
        self.model = model
        self.device = device
        self.dir = _private_dir()
        self.log_path = os.path.join(self.dir, "engine.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.lora: LoraRef | None = None
        self.pushes = 0
        self.push_seconds = 0.0
        self.sample_seconds = 0.0
        try:
            self._spawn()
            self.version = self.call("start", model=model, dtype=dtype, seed=seed,
                                     device="cuda" if str(device).startswith("cuda") else "cpu",
                                     gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                                     enforce_eager=enforce_eager, cpu_kv_cache_gib=cpu_kv_cache_gib,
                                     lora_rank=lora_rank)["vllm"]
        except (EngineError, EngineDiedError) as e:
            self.close()
            raise EngineUnavailableError("rollout engine vllm (%s) could not start on %s: %s" %
                                         (self.python, model, e)) from None
        except BaseException:
            self.close()
            raise

    def _spawn(self) -> None:
        spec = importlib.util.find_spec("espo_engine")
        if spec is None or not spec.submodule_search_locations:
            raise EngineUnavailableError("rollout engine vllm: the espo_engine package is not installed beside "
                                         "espo_worker")
        # The engine imports espo_engine alone from this folder, never the worker's
        # site-packages, whose torch and transformers are not its own.
        path = os.path.join(self.dir, "path")
        os.mkdir(path)
        os.symlink(list(spec.submodule_search_locations)[0], os.path.join(path, "espo_engine"))
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["PYTHONPATH"] = path
        if str(self.device).startswith("cuda"):
            env["CUDA_VISIBLE_DEVICES"] = visible_device(os.environ.get("CUDA_VISIBLE_DEVICES"), self.device)
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen([self.python, "-m", "espo_engine", "--fd", str(theirs.fileno())],
                                             pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=log, env=env, cwd=self.dir)
            except OSError as e:
                mine.close()
                raise EngineUnavailableError("rollout engine vllm: cannot run %s: %s" % (self.python, e)) from None
            finally:
                theirs.close()
        self.conn = Connection(mine.detach())

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def _died(self) -> EngineDiedError:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        return EngineDiedError("the vLLM engine (pid %s) %s; the end of its log:\n%s" % (
            self.proc.pid if self.proc else "?", "exited with code %s" % code if code is not None else "stopped answering",
            self.log_tail()))

    def call(self, op: str, **kw: object) -> Any:  # noqa: ANN401 - the reply to op, whatever op returns
        if self.conn is None:
            raise EngineDiedError("the vLLM engine is closed")
        try:
            self.conn.send(dict(kw, op=op))
            reply = self.conn.recv()
        except (EOFError, OSError):
            raise self._died() from None
        if "error" in reply:
            if reply.get("kind") == "invalid":
                raise EngineError(reply["error"])
            raise EngineError("%s (engine log:\n%s)" % (reply["error"], self.log_tail()))
        return reply["ok"]

    def generate(self, prompts: Sequence[Mapping[str, object]], n: int, temperature: float, greedy: bool, max_tokens: int,
                 stop_ids: Iterable[int], banned_ids: Iterable[int]) -> list[list[tuple[list[int], list[float]]]]:
        """prompts: [{"ids", "image" (bytes or None), "seed"}]; returns, per prompt, n
        (token ids, sampler log-probs) pairs."""
        start = time.perf_counter()
        try:
            return self.call("generate", prompts=prompts, n=n, temperature=temperature, greedy=greedy,
                             max_tokens=max_tokens, stop_ids=list(stop_ids), banned_ids=list(banned_ids), lora=self.lora)
        finally:
            self.sample_seconds += time.perf_counter() - start

    def push_full(self, parts: Iterable[Mapping[str, torch.Tensor]]) -> None:
        """Loads full tensors into the engine, part by part (each part name -> tensor,
        in Hugging Face names, holding every tensor of a fused layer it touches: a
        decoder layer's, say): by CUDA IPC when they are on a GPU, else through a
        safetensors file. One push, however many parts."""
        start = time.perf_counter()
        for named_tensors in parts:
            if any(v.is_cuda for v in named_tensors.values()):
                self._push_cuda_ipc(named_tensors)
            else:
                self._push_file(named_tensors)
        self._pushed(start)

    def _push_file(self, named_tensors: Mapping[str, torch.Tensor]) -> None:
        from safetensors.torch import save_file
        path = os.path.join(self.dir, "weights.safetensors")
        save_file({k: v.detach().to("cpu").contiguous() for k, v in named_tensors.items()}, path)
        try:
            self.call("load_weights", path=path)
        finally:
            os.unlink(path)

    def _push_cuda_ipc(self, named_tensors: Mapping[str, torch.Tensor]) -> None:
        """Sends a CUDA IPC handle of each tensor (the rebuild arguments of torch's
        reduce_tensor, which the engine's torch takes too) and waits for the engine to
        have copied them into its weights; the tensors (refs) stay alive until then."""
        import torch
        from torch.multiprocessing.reductions import reduce_tensor
        refs, handles = [], []
        for name, t in named_tensors.items():
            w = t.detach().contiguous()
            refs.append(w)
            handles.append((name, reduce_tensor(w)[1]))
        torch.cuda.synchronize()  # the optimizer step's writes are done before the engine reads
        self.call("load_weights_ipc", handles=handles)
        del refs

    def push_lora(self, peft_model: PeftModel, tensors: Mapping[str, torch.Tensor] | None = None) -> None:
        """Serves the peft model's current adapter under a new id from now on; tensors
        (the adapter's, whole, by the model's parameter names) in place of the
        model's own, where it holds them sharded."""
        start = time.perf_counter()
        n = self.pushes + 1
        path = os.path.join(self.dir, "adapter-%d" % n)
        export.save_adapter(peft_model, path, tensors)
        old, self.lora = self.lora, {"id": n, "path": path}
        if old is not None:
            shutil.rmtree(old["path"], ignore_errors=True)
        self._pushed(start)

    def _pushed(self, start: float) -> None:
        self.pushes += 1
        self.push_seconds += time.perf_counter() - start

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send({"op": "close"})
                self.conn.recv()
            except (EOFError, OSError):
                pass
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __del__(self) -> None:
        if getattr(self, "proc", None) is not None and sys is not None:
            self.close()
