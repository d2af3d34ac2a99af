# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The folders Save and Load may touch: the job's checkpoint, initial-checkpoint and
output folders, from --allow-path or $ESPO_WORKER_PATHS. A path is accepted only
when, made absolute and cleaned, with the symbolic links of its existing part resolved
(the file's own too), it lies strictly under one of them, each resolved the same way;
a dangling link on the way is refused. The Go twin is trainer/worker/folders.go.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

ENV_ALLOWED_PATHS = "ESPO_WORKER_PATHS"


class PathNotAllowedError(Exception):
    """A Save or Load of a path outside the allowed folders (PERMISSION_DENIED)."""


def split(value: str | None) -> list[str]:
    """The folders of a colon-separated list ($ESPO_WORKER_PATHS), empty entries
    dropped."""
    return [d for d in (value or "").split(os.pathsep) if d]


class _Dangling(Exception):
    pass


def _resolve(path: str) -> str:
    """path (absolute, clean) with the links of its longest existing part resolved
    and the rest appended as it is."""
    existing, rest = path, []
    while True:
        if os.path.exists(existing):
            return os.path.join(os.path.realpath(existing), *reversed(rest))
        if os.path.lexists(existing):
            raise _Dangling("%s is a symbolic link to a missing file" % existing)
        parent = os.path.dirname(existing)
        if parent == existing:
            return path
        rest.append(os.path.basename(existing))
        existing = parent


def _under(path: str, folder: str) -> bool:
    if folder == os.sep:
        return path != folder
    return path.startswith(folder + os.sep)


class Folders:
    def __init__(self, dirs: Iterable[str]) -> None:
        self.dirs = [os.path.abspath(d) for d in dirs if d]

    def __str__(self) -> str:
        return ", ".join(self.dirs) or "none"

    def confine(self, op: str, path: str) -> str:
        """The path op ("save", "load" or "export") of path uses: resolved as the module says,
        or PathNotAllowedError naming path and the folders."""
        if not self.dirs:
            raise PathNotAllowedError("%s %s: this worker has no allowed folders; name the job's folders in $%s or "
                                      "with --allow-path" % (op, path, ENV_ALLOWED_PATHS))
        try:
            real = _resolve(os.path.abspath(path))
        except _Dangling as e:
            raise self._refuse(op, path, str(e)) from None
        for d in self.dirs:
            try:
                if _under(real, _resolve(d)):
                    return real
            except _Dangling:
                continue
        raise self._refuse(op, path, "resolves to " + real)

    def _refuse(self, op: str, path: str, why: str) -> PathNotAllowedError:
        return PathNotAllowedError("%s %s: %s, not under an allowed folder (%s; set by $%s or --allow-path)"
                                   % (op, path, why, self, ENV_ALLOWED_PATHS))
