# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The worker token: every call of espo.worker.v1.Worker must carry the job's token as
the metadata "authorization: Bearer <token>"; the standard health service stays open
for the kubelet's probes. The Go server's twin is trainer/worker/auth.go.

The token authenticates the trainer; it does not encrypt the call (the protocol runs
over plaintext HTTP/2 inside the cluster). It is compared in constant time and never
logged, nor quoted in an error.
"""

from __future__ import annotations

import hmac
import os
import string
from collections.abc import Callable

import grpc

ENV_TOKEN_FILE = "ESPO_WORKER_TOKEN_FILE"
TOKEN_LEN = 64
_HEX = frozenset(string.hexdigits)
_OPEN_PREFIX = "/grpc.health.v1.Health/"


class TokenError(ValueError):
    """A token file that cannot be read, or does not hold a token; the message names
    the file and never quotes its content."""


def _malformed(token: str) -> bool:
    return len(token) != TOKEN_LEN or not set(token) <= _HEX


def read_token_file(path: str) -> str:
    """The token in the file at path: TOKEN_LEN hex characters, white space around
    them ignored."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TokenError("worker token file %s: %s" % (path, e.strerror or e)) from None
    token = raw.decode("ascii", "replace").strip()
    if not token:
        raise TokenError("worker token file %s: empty; it must hold %d hex characters (32 random bytes), "
                         "as in the job's Secret <job>-worker-token" % (path, TOKEN_LEN))
    if _malformed(token):
        raise TokenError("worker token file %s: malformed: %d characters, want %d hex characters "
                         "(32 random bytes), as in the job's Secret <job>-worker-token" % (path, len(token), TOKEN_LEN))
    return token


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call but the health service's with UNAUTHENTICATED unless it
    carries exactly one "authorization: Bearer <token>" with the right token. Put it
    first among the interceptors, so that a refused call reaches no other (a
    stranger's calls are no activity)."""

    def __init__(self, token: str) -> None:
        if _malformed(token):
            raise TokenError("malformed worker token: want %d hex characters" % TOKEN_LEN)
        self._want = token.encode("ascii")

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
                          details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        if handler is None or details.method.startswith(_OPEN_PREFIX):
            return handler
        values = [v for k, v in (details.invocation_metadata or ()) if k == "authorization"]
        if len(values) != 1:
            return _refusal(handler, "worker token required: send the metadata \"authorization\": "
                                     "\"Bearer <the job's token>\" (the trainer reads it from $%s)" % ENV_TOKEN_FILE)
        value = values[0] if isinstance(values[0], bytes) else values[0].encode("utf-8", "replace")
        if not value.startswith(b"Bearer ") or not hmac.compare_digest(value[len(b"Bearer "):], self._want):
            return _refusal(handler, "wrong worker token: this worker serves another job, or its token was "
                                     "rotated (the trainer reads it from $%s)" % ENV_TOKEN_FILE)
        return handler


def _refusal(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same kind as handler that aborts with UNAUTHENTICATED."""
    def deny(_request: object, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(deny)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(deny)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(deny)
    return grpc.stream_stream_rpc_method_handler(deny)


def token_from(token_file: str, insecure_no_auth: bool) -> str | None:
    """The token to require, from --token-file (default $ESPO_WORKER_TOKEN_FILE), or
    None with --insecure-no-auth; anything else raises TokenError saying which flag
    fixes it."""
    if token_file and insecure_no_auth:
        raise TokenError("--insecure-no-auth with a token file (--token-file or $%s): drop one of them" % ENV_TOKEN_FILE)
    if insecure_no_auth:
        return None
    if not token_file:
        raise TokenError("no worker token: pass --token-file (default $%s, the job's Secret <job>-worker-token as the "
                         "controller mounts it), or --insecure-no-auth to serve anyone who can reach the port, for a "
                         "worker run by hand" % ENV_TOKEN_FILE)
    return read_token_file(token_file)


def default_token_file() -> str:
    return os.environ.get(ENV_TOKEN_FILE, "")
