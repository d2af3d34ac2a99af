# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The worker protocol's messages and service, built at import time from worker.binpb.

worker.binpb is the FileDescriptorSet protoc writes for trainer/workerpb/worker.proto
(`make generate`; hack/verify-generated.sh fails when it is stale). No protoc-generated
Python code is involved, so the package runs on every protobuf runtime from 3.21 on:
the pure-Python one, the C++ one and the upb one of protobuf >= 4.

The module exposes what generated code would: each top-level message class under its
name (Prompt, GenerateRequest, ...; nested ones as their attributes, Prompt.Item), each
top-level enum under its name (Stage) and each enum value under its name
(STAGE_GUI, ...), and DESCRIPTOR, the FileDescriptor of worker.proto. add_servicer binds
an object with one method per rpc of the Worker service to a grpc server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal import enum_type_wrapper

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FileDescriptor
    from google.protobuf.message import Message

DESCRIPTOR_SET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.binpb")
PROTO_FILE = "worker.proto"
SERVICE_NAME = "Worker"


def _load_file(pool: descriptor_pool.DescriptorPool, path: str, name: str) -> FileDescriptor:
    """Adds the files of the FileDescriptorSet at path to pool and returns the
    FileDescriptor of name."""
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    for fdp in files:  # protoc lists every file after its imports
        pool.AddSerializedFile(fdp.SerializeToString())
    return pool.FindFileByName(name)


def _class_maker(pool: descriptor_pool.DescriptorPool) -> Callable[[Descriptor], type[Message]]:
    """The function that makes the message class of a descriptor of pool:
    message_factory.GetMessageClass (protobuf >= 4.22, where GetPrototype is deprecated
    and later removed), else MessageFactory.GetPrototype (older ones)."""
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get
    return message_factory.MessageFactory(pool).GetPrototype


# A pool of its own, so worker.proto never clashes with a file of the same name that
# other code adds to the default pool.
_POOL = descriptor_pool.DescriptorPool()
DESCRIPTOR = _load_file(_POOL, DESCRIPTOR_SET, PROTO_FILE)
_message_class = _class_maker(_POOL)


def message_class(descriptor: Descriptor) -> type[Message]:
    """The message class of a message descriptor of worker.proto."""
    return _message_class(descriptor)


def _export(namespace: MutableMapping[str, object]) -> None:
    for name, d in DESCRIPTOR.message_types_by_name.items():
        namespace[name] = message_class(d)
    for name, d in DESCRIPTOR.enum_types_by_name.items():
        namespace[name] = enum_type_wrapper.EnumTypeWrapper(d)
        for v in d.values:
            namespace[v.name] = v.number


_export(globals())

SERVICE = DESCRIPTOR.services_by_name[SERVICE_NAME]


def method_handlers(servicer: object) -> dict[str, grpc.RpcMethodHandler]:
    """The unary-unary handlers of the Worker service's methods, by method name, each
    calling servicer's method of that name. Raises TypeError naming the methods
    servicer lacks."""
    missing = [m.name for m in SERVICE.methods if not callable(getattr(servicer, m.name, None))]
    if missing:
        raise TypeError("%s lacks the Worker methods %s" % (type(servicer).__name__, ", ".join(missing)))
    return {m.name: grpc.unary_unary_rpc_method_handler(
        getattr(servicer, m.name),
        request_deserializer=message_class(m.input_type).FromString,
        response_serializer=message_class(m.output_type).SerializeToString) for m in SERVICE.methods}


def add_servicer(servicer: object, server: grpc.Server) -> None:
    """Serves servicer as the Worker service (espo.worker.v1.Worker) on server."""
    handler = grpc.method_handlers_generic_handler(SERVICE.full_name, method_handlers(servicer))
    server.add_generic_rpc_handlers((handler,))
