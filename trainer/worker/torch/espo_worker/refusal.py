# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""A worker's permanent refusal of its Configure options, with a machine-readable
reason: what the model, the LoRA targets or the attention kernel the trainer sent
cannot be, in this worker, whatever the number of restarts.

The contract with the Go trainer (its twin is trainer/worker/refusal.go, which owns
the spec's field names):

- the worker answers with a status whose grpc-status-details-bin trailer is a
  google.rpc.Status holding one google.rpc.ErrorInfo: domain DOMAIN, reason one of
  the reasons below, and metadata the facts that reason defines (every value a
  string; a list is comma-separated);
- the Go trainer maps the reason to the ESPOJob field at fault and the run's outcome
  (ModelIncomplete or ConfigInvalid, which fail the job at once) and writes the
  message from the metadata, naming the field, what the worker found and the fix;
- the status code and message stay what a trainer that does not read the detail
  understands: the model refusals are FAILED_PRECONDITION with a message beginning
  modelfiles.PREFIX (read as ModelIncomplete), the others INVALID_ARGUMENT (read as
  ConfigInvalid), and the message, the worker's own words, is shown then.

The reasons and their metadata:

- MODEL_NOT_A_FOLDER: the model option names no folder in the worker's pod, nor a
  model in its Hugging Face cache (the worker never downloads one). model: the option
  as sent; folder: the absolute path the worker looked at; cache: the Hugging Face
  cache folder it looked in (only for a relative name; an absolute path is never
  looked up there).
- MODEL_UNSUPPORTED: the model folder holds a model the worker cannot train. folder;
  found: what it holds ("BertForMaskedLM (model_type bert)"); supported: what the
  worker trains.
- LORA_TARGET_MODULES_NOT_FOUND: no module of the model matches the LoRA targets.
  missing: the targets no module LoRA can adapt matches; available: the names LoRA
  could target in the model (the last name of each nn.Linear and Conv1D module,
  deduplicated, sorted, at most MAX_LISTED); omitted: how many more there are
  (absent when none).
- ATTN_IMPLEMENTATION_UNAVAILABLE: the attention implementation cannot run.
  implementation: the option; package: the Python package it needs that is not
  installed, or model: the model class that does not support it (one of the two);
  available: the implementations that would run instead (comma-separated).

google.rpc.Status and google.rpc.ErrorInfo are built here from their descriptors, as
googleapis' google/rpc/status.proto and error_details.proto define them, so that
the worker needs no googleapis-common-protos or grpcio-status for two messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool

from . import protocol

if TYPE_CHECKING:
    from google.protobuf.message import Message

DOMAIN = "espo.worker.v1"
DETAILS_KEY = "grpc-status-details-bin"

MODEL_NOT_A_FOLDER = "MODEL_NOT_A_FOLDER"
MODEL_UNSUPPORTED = "MODEL_UNSUPPORTED"
LORA_TARGET_MODULES_NOT_FOUND = "LORA_TARGET_MODULES_NOT_FOUND"
ATTN_IMPLEMENTATION_UNAVAILABLE = "ATTN_IMPLEMENTATION_UNAVAILABLE"
REASONS = (MODEL_NOT_A_FOLDER, MODEL_UNSUPPORTED, LORA_TARGET_MODULES_NOT_FOUND, ATTN_IMPLEMENTATION_UNAVAILABLE)

# The longest list a refusal names (the module names LoRA could target): a trailer
# stays small, and a message readable.
MAX_LISTED = 40

# The status codes, by name (grpc.StatusCode's), so that this module and modelfiles
# stay importable without grpc.
FAILED_PRECONDITION = "FAILED_PRECONDITION"
INVALID_ARGUMENT = "INVALID_ARGUMENT"


class Refusal(Exception):
    """A permanent refusal: the server (espo_worker.server) answers it with the status
    code named code, the message str(e) and an ErrorInfo of reason and metadata.
    Subclasses set reason, metadata and code (a mixin beside the error class an older
    trainer reads: modelfiles.ModelIncompleteError, config.InvalidError)."""

    reason: str = ""
    metadata: dict[str, str]
    code: str = INVALID_ARGUMENT

    def refuse(self, reason: str, metadata: Mapping[str, str], code: str) -> None:
        """Sets the reason, the metadata (values as strings) and the code."""
        if reason not in REASONS:
            raise ValueError("refusal reason %r: want one of %s" % (reason, ", ".join(REASONS)))
        self.reason, self.metadata, self.code = reason, {k: str(v) for k, v in metadata.items()}, code


def listed(names: Iterable[str]) -> tuple[str, int]:
    """names, deduplicated and sorted, as a comma-separated list of at most MAX_LISTED,
    and how many were left out."""
    s = sorted(set(names))
    return ",".join(s[:MAX_LISTED]), max(0, len(s) - MAX_LISTED)


def _rpc_file() -> descriptor_pb2.FileDescriptorProto:
    """The google.rpc messages the worker sends: Status and ErrorInfo, field for field
    as googleapis defines them (the other fields of neither exist)."""
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="espo_worker/google_rpc.proto", package="google.rpc", syntax="proto3",
                                           dependency=["google/protobuf/any.proto"])
    status = f.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    status.field.add(name="message", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    status.field.add(name="details", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                     type_name=".google.protobuf.Any")
    info = f.message_type.add(name="ErrorInfo")
    info.field.add(name="reason", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    info.field.add(name="domain", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry = info.nested_type.add(name="MetadataEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    info.field.add(name="metadata", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                   type_name=".google.rpc.ErrorInfo.MetadataEntry")
    return f


def _classes() -> tuple[type[Message], type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    anyf = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(anyf)
    pool.AddSerializedFile(anyf.SerializeToString())
    fd = pool.AddSerializedFile(_rpc_file().SerializeToString())
    make = protocol._class_maker(pool)
    return make(fd.message_types_by_name["Status"]), make(fd.message_types_by_name["ErrorInfo"])


Status, ErrorInfo = _classes()


def status_details(code: int, message: str, reason: str, metadata: Mapping[str, str]) -> bytes:
    """The grpc-status-details-bin value of a refusal: a google.rpc.Status of code (the
    numeric status code) and message, holding the ErrorInfo of DOMAIN, reason and
    metadata."""
    info = ErrorInfo(reason=reason, domain=DOMAIN)
    info.metadata.update(metadata)
    s = Status(code=code, message=message)
    s.details.add(type_url="type.googleapis.com/google.rpc.ErrorInfo", value=info.SerializeToString())
    return s.SerializeToString()


def error_info(details: bytes) -> Message | None:
    """The ErrorInfo of DOMAIN in a grpc-status-details-bin value, or None: the
    reading the Go trainer does, for the tests."""
    for d in Status.FromString(details).details:
        if d.type_url.endswith("/google.rpc.ErrorInfo"):
            info = ErrorInfo.FromString(d.value)
            if info.domain == DOMAIN:
                return info
    return None
