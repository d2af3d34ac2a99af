# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The gRPC server: the worker protocol over a Policy, plus grpc.health.v1.

Contracts shared with the Go server adapter (trainer/worker/server.go): every call
of the Worker service needs the job's token (auth.TokenInterceptor) or answers
UNAUTHENTICATED; every call but Configure, Load, Info and Health answers
FAILED_PRECONDITION before the policy is configured; Configure answers
FAILED_PRECONDITION, its message beginning with modelfiles.PREFIX, for a model folder
that lacks files; a permanent refusal (espo_worker.refusal: a model that is no folder
or that the worker cannot train, LoRA targets the model lacks, an attention
implementation that cannot run) carries a google.rpc.ErrorInfo of its reason in the
status's details; Save and Load touch only paths
under the allowed folders (folders.Folders) or answer PERMISSION_DENIED; errors map
to INVALID_ARGUMENT (the request's fault), NOT_FOUND (a missing state file),
DATA_LOSS (an unreadable one) and INTERNAL; Save writes atomically (temporary file in
the same folder, fsync, rename; a sharded state folder, espo_worker.state, is written
as "<path>.partial" and renamed); messages of up to 1 GiB pass both ways. The health
service is answered by hand (two tiny messages), so no grpcio-health-checking package
is needed.
"""

from __future__ import annotations

import concurrent.futures
import io
import json
import os
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import grpc

from . import auth, modelfiles, refusal, wire
from . import export as exportlib
from . import folders as folderslib
from . import policy as policylib
from . import protocol as pb

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from .policy import Policy

_R = TypeVar("_R")

MAX_MESSAGE_BYTES = 1 << 30
SERVICE = "espo.worker.v1.Worker"


def _write_atomic(path: str, write: Callable[[BinaryIO], object]) -> int:
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            n = f.tell()
        os.rename(tmp, path)
        return n
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class InlineState(io.BytesIO):
    """ConfigureRequest.state: a state Save wrote, sent inline by a trainer whose
    checkpoint folder this worker cannot read, as the file Policy.load reads (rank 0
    reads it; the other ranks of a group never do, and get rank 0's state by
    broadcast). Its size is bounded by the messages' limit, MAX_MESSAGE_BYTES."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.size = len(data)

    def __str__(self) -> str:
        return "the inline state (%d bytes)" % self.size


class Stats:
    """Seconds spent inside each call, tokens generated and trained, the peak CUDA
    memory and, with a rollout engine, its figures (Policy.rollout_stats: weight
    pushes and their seconds, the engine's sampling and the trainer's scoring
    seconds); written as JSON to $ESPO_WORKER_STATS (when set) after every call, so
    hack/gpu-check.sh and the step benchmark can split a step's time between the
    worker's phases and the Go core plus the protocol."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.calls: dict[str, tuple[int, float]] = {}
        self.generated_tokens = 0
        self.trained_tokens = 0
        self.rollout: dict[str, Any] | None = None

    def add(self, name: str, seconds: float) -> None:
        with self.lock:
            n, s = self.calls.get(name, (0, 0.0))
            self.calls[name] = (n + 1, s + seconds)

    def write(self) -> None:
        if not self.path:
            return
        import torch
        with self.lock:
            d = {"calls": {k: {"count": n, "seconds": s} for k, (n, s) in self.calls.items()},
                 "generated_tokens": self.generated_tokens, "trained_tokens": self.trained_tokens,
                 "max_memory_allocated": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0,
                 "max_memory_reserved": torch.cuda.max_memory_reserved() if torch.cuda.is_available() else 0}
            if self.rollout is not None:
                d["rollout"] = self.rollout
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(d, f)
        os.replace(tmp, self.path)


class Servicer:
    def __init__(self, policy: Policy, stats: Stats | None = None, folders: folderslib.Folders | None = None) -> None:
        """folders: the folders.Folders Save and Load may touch (default none: every
        Save and Load is refused)."""
        self.p = policy
        self.stats = stats or Stats(os.environ.get("ESPO_WORKER_STATS", ""))
        self.folders = folders or folderslib.Folders([])

    def gathers_only(self) -> bool:
        """Whether this worker's Export only helps the first worker gather a sharded
        model: it writes nothing, and never opens the path (it may not have the
        folder)."""
        return self.p.sharded and self.p.dist.rank != 0

    def _load_path(self, path: str) -> str:
        """The path a load reads: confined on rank 0, the rank that reads it; the others
        get the state by broadcast, or, sharded, read their shards of a sharded state
        folder at the path _confine_load admits."""
        if self.p.dist.rank != 0:
            return path
        return self._confine_load(path)

    def _confine_load(self, path: str) -> str:
        return self.folders.confine("load", path)

    def _run(self, context: grpc.ServicerContext, fn: Callable[[], _R]) -> _R:
        start = time.monotonic()
        try:
            return fn()
        except refusal.Refusal as e:  # a permanent refusal, with its reason (espo_worker.refusal)
            code = grpc.StatusCode[e.code]
            context.set_trailing_metadata(((refusal.DETAILS_KEY, refusal.status_details(
                code.value[0], str(e), e.reason, e.metadata)),))
            context.abort(code, str(e))
        except policylib.InvalidError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except policylib.NotConfiguredError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except modelfiles.ModelIncompleteError as e:  # str(e) begins with modelfiles.PREFIX
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except exportlib.ExportError as e:  # a destination that cannot be written
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except folderslib.PathNotAllowedError as e:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        except FileNotFoundError as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        except IOError as e:
            context.abort(grpc.StatusCode.DATA_LOSS, str(e))
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            context.abort(grpc.StatusCode.INTERNAL, "%s: %s" % (type(e).__name__, e))
        finally:
            name = fn.__qualname__.split(".")[1]
            if name == "Generate" and getattr(context, "greedy", False):
                name = "GenerateGreedy"
            self.stats.add(name, time.monotonic() - start)
            self.stats.write()

    def Configure(self, req: pb.ConfigureRequest, context: grpc.ServicerContext) -> pb.ConfigureResponse:
        def do() -> pb.ConfigureResponse:
            if req.load_path and req.state:
                raise policylib.InvalidError("configure: both load_path and state are set: send the state one way")
            source = self._load_path(req.load_path) if req.load_path else None
            if req.state:
                source = InlineState(req.state)
            self.p.configure(req.seed, map_field(req.options))
            if source is not None:
                self.p.load(source, req.seed, confine=self._confine_load)
            return pb.ConfigureResponse(info=wire.describe(self.p))
        return self._run(context, do)

    def Info(self, req: pb.InfoRequest, context: grpc.ServicerContext) -> pb.InfoResponse:
        return wire.describe(self.p)

    def Health(self, req: pb.HealthRequest, context: grpc.ServicerContext) -> pb.HealthResponse:
        return pb.HealthResponse(serving=True)

    def Generate(self, req: pb.GenerateRequest, context: grpc.ServicerContext) -> pb.GenerateResponse:
        def do() -> pb.GenerateResponse:  # evaluation's greedy calls are counted apart, as GenerateGreedy
            context.greedy = req.greedy
            resp = wire.generate(self.p, req)
            self.stats.rollout = self.p.rollout_stats()
            if req.greedy:
                return resp
            self.stats.generated_tokens += sum(len(s.answer.token_ids) for c in resp.candidates for s in c.samples)
            return resp
        return self._run(context, do)

    def LogProbs(self, req: pb.LogProbsRequest, context: grpc.ServicerContext) -> pb.LogProbsResponse:
        def do() -> pb.LogProbsResponse:
            return wire.logprobs(self.p, req)
        return self._run(context, do)

    def Backward(self, req: pb.BackwardRequest, context: grpc.ServicerContext) -> pb.BackwardResponse:
        def do() -> pb.BackwardResponse:
            obj, tokens = wire.backward(self.p, req)
            self.stats.trained_tokens += tokens
            return pb.BackwardResponse(objective=obj, tokens=tokens)
        return self._run(context, do)

    def Gradients(self, req: pb.GradientsRequest, context: grpc.ServicerContext) -> pb.GradientsResponse:
        def do() -> pb.GradientsResponse:
            g = self.p.gradients()
            resp = pb.GradientsResponse()
            resp.gradient.extend(g.tolist())
            return resp
        return self._run(context, do)

    def Step(self, req: pb.StepRequest, context: grpc.ServicerContext) -> pb.StepResponse:
        def do() -> pb.StepResponse:
            for v in (req.learning_rate, req.weight_decay, req.epsilon, req.max_grad_norm):
                if not (0 <= v < 1e300):
                    raise policylib.InvalidError("step: learning_rate, weight_decay, epsilon and max_grad_norm "
                                                 "must be finite and >= 0")
            for v in (req.beta1, req.beta2):
                if not (0 <= v < 1):
                    raise policylib.InvalidError("step: beta1 and beta2 must lie in [0, 1)")
            norm, steps = wire.step(self.p, req)
            return pb.StepResponse(grad_norm=norm, steps=steps)
        return self._run(context, do)

    def SnapshotReference(self, req: pb.SnapshotReferenceRequest,
                          context: grpc.ServicerContext) -> pb.SnapshotReferenceResponse:
        def do() -> pb.SnapshotReferenceResponse:
            self.p.snapshot_reference()
            return pb.SnapshotReferenceResponse()
        return self._run(context, do)

    def Save(self, req: pb.SaveRequest, context: grpc.ServicerContext) -> pb.SaveResponse:
        """A replicated group's first worker writes one state file; every worker of a
        sharded group writes its shards into one sharded state folder (each must be
        able to write the path)."""
        def do() -> pb.SaveResponse:
            if not req.path:
                raise policylib.InvalidError("save: empty path")
            self.p.need()
            path = self.folders.confine("save", req.path)
            if self.p.sharded:
                return pb.SaveResponse(path=req.path, bytes=self.p.save_shards(path))
            return pb.SaveResponse(path=req.path, bytes=_write_atomic(path, self.p.save))
        return self._run(context, do)

    def Load(self, req: pb.LoadRequest, context: grpc.ServicerContext) -> pb.LoadResponse:
        def do() -> pb.LoadResponse:
            if not req.path:
                raise policylib.InvalidError("load: empty path")
            return pb.LoadResponse(steps=self.p.load(self._load_path(req.path), confine=self._confine_load))
        return self._run(context, do)

    def Export(self, req: pb.ExportRequest, context: grpc.ServicerContext) -> pb.ExportResponse:
        def do() -> pb.ExportResponse:
            if not req.path:
                raise policylib.InvalidError("export: empty path")
            if self.gathers_only():
                self.p.export(None)
                return pb.ExportResponse(path=req.path)
            m = self.p.export(self.folders.confine("export", req.path), merge=req.merge)
            return pb.ExportResponse(path=req.path, kind=m.kind, merged=m.merged, step=m.step, files=len(m.files))
        return self._run(context, do)

    def Embed(self, req: pb.EmbedRequest, context: grpc.ServicerContext) -> pb.EmbedResponse:
        def do() -> pb.EmbedResponse:
            resp = pb.EmbedResponse()
            for v in self.p.embed(list(req.texts)):
                resp.embeddings.add().values.extend(v)
            return resp
        return self._run(context, do)

    def Release(self, req: pb.ReleaseRequest, context: grpc.ServicerContext) -> pb.ReleaseResponse:
        """Answers at once; what a release means to the process (stop now when asked to
        stop) is its Activity's business."""
        return pb.ReleaseResponse()


# grpc.health.v1.Health/Check, by hand: HealthCheckRequest {string service = 1};
# HealthCheckResponse {ServingStatus status = 1}, SERVING = 1.
def _parse_service(data: bytes) -> str:
    if not data:
        return ""
    if data[0] != 0x0A:
        return ""
    n, i, shift = 0, 1, 0
    while True:
        b = data[i]
        n |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if b < 0x80:
            break
    return data[i:i + n].decode("utf-8", "replace")


def _health_check(service: str, context: grpc.ServicerContext) -> bytes:
    if service in ("", SERVICE):
        return b"\x08\x01"
    context.abort(grpc.StatusCode.NOT_FOUND, "unknown service %r" % service)


_HEALTH = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
    "Check": grpc.unary_unary_rpc_method_handler(_health_check, request_deserializer=_parse_service,
                                                 response_serializer=lambda b: b),
})


def map_field(m: Mapping[str, str] | Iterable[Message]) -> dict[str, str]:
    """A protobuf map field as a dict, also where the runtime reads the map as its
    entries (older stubs under the pure-Python runtime)."""
    try:
        return dict(m.items())
    except AttributeError:
        return {e.key: e.value for e in m}


class Activity(grpc.ServerInterceptor):
    """Tracks the calls of the worker protocol (health checks do not count), so that a
    worker asked to stop (SIGTERM, with the rest of its gang) keeps serving while its
    trainer, stopping too, finishes the step in flight and its checkpoint, then calls
    Release. A trainer that died cannot release: a quiet period without calls ends the
    wait then. The Go worker's twin is trainer/worker/activity.go."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight = 0
        self._last = clock()
        # set by the trainer's Release or by a second signal: stop waiting at once
        self.stop_now = threading.Event()

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
                          details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        if handler is None or handler.unary_unary is None or not details.method.startswith("/%s/" % SERVICE):
            return handler
        inner = handler.unary_unary
        release = details.method == "/%s/Release" % SERVICE

        def counted(request: Message, context: grpc.ServicerContext) -> Message:
            if release:
                self.stop_now.set()
            self._mark(1)
            try:
                return inner(request, context)
            finally:
                self._mark(-1)
        return grpc.unary_unary_rpc_method_handler(counted, request_deserializer=handler.request_deserializer,
                                                   response_serializer=handler.response_serializer)

    def _mark(self, delta: int) -> None:
        with self._lock:
            self._in_flight += delta
            self._last = self._clock()

    def quiet_left(self, quiet: float) -> float:
        """Seconds the server must still go without calls to have been quiet for quiet
        seconds: quiet while a call is in flight, 0 or less once quiet."""
        with self._lock:
            if self._in_flight:
                return quiet
            return quiet - (self._clock() - self._last)

    def wait_released(self, quiet: float, wait: Callable[[float], bool] | None = None) -> None:
        """Returns once stop_now is set (Release, or a second signal) or no call has come
        for quiet seconds. wait(seconds) waits up to that long and returns True when
        stop_now was set meanwhile (default: stop_now.wait)."""
        wait = wait or self.stop_now.wait
        while not self.stop_now.is_set():
            left = self.quiet_left(quiet)
            if left <= 0 or wait(left):
                return


def new_server(policy: Policy, listen: str, threads: int = 8, activity: Activity | None = None, token: str | None = None,
               insecure_no_auth: bool = False, allowed: Iterable[str] = ()) -> tuple[grpc.Server, int]:
    """A started server of policy on listen (host:port; port 0 picks one) whose Worker
    calls need token (auth.read_token_file), or no token with insecure_no_auth, for a
    worker run by hand; whose Save and Load touch only paths under the allowed
    folders; and whose admitted calls are recorded in activity when given. Returns
    (server, port)."""
    if token is None and not insecure_no_auth:
        raise ValueError("new_server: no token: give one, or insecure_no_auth=True for a worker run by hand")
    if token is not None and insecure_no_auth:
        raise ValueError("new_server: a token and insecure_no_auth: choose one")
    interceptors = [auth.TokenInterceptor(token)] if token is not None else []
    if activity is not None:
        interceptors.append(activity)
    opts = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
    s = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=threads), options=opts,
                    interceptors=interceptors or None)
    pb.add_servicer(Servicer(policy, folders=folderslib.Folders(allowed)), s)
    s.add_generic_rpc_handlers((_HEALTH,))
    if listen.startswith(":"):
        listen = "[::]" + listen
    port = s.add_insecure_port(listen)
    if port == 0:
        raise OSError("cannot listen on %s" % listen)
    s.start()
    return s, port
