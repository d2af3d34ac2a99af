# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""python -m espo_worker.export_cli STATE DEST: writes the policy of a torch worker
state (a checkpoint's worker.state: a file, or a sharded job's folder of shards) as a Hugging Face folder, offline, the folder a
job's spec.export writes ("espo export" runs this). It prints the manifest's summary
as one JSON line: the folder, kind, merged, step and number of files. Exit status 2
for a state or destination that cannot be used, with the reason on stderr."""

from __future__ import annotations

import argparse
import json
import sys

from .config import InvalidError
from .export import ExportError, Manifest
from .modelfiles import ModelIncompleteError
from .policy import Policy


def export_checkpoint(state: str, dest: str, *, base: str = "", merge: bool = False, device: str = "cpu",
                      max_shard_size: str | int = "5GB") -> Manifest:
    """Exports the policy of a torch worker state (a checkpoint's worker.state, of any
    step) to dest as export does, with no worker or trainer running. base, when not
    empty, is the base model's folder on this machine in place of the one the state
    names (as the pod saw it: /models/...); no rollout engine starts."""
    overrides: dict[str, str] = {"rollout_engine": "huggingface"}
    if base:
        overrides["pretrained"] = base
    p = Policy({}, device=device)
    try:
        p.load(state, overrides=overrides)
    except ModelIncompleteError as e:
        raise ExportError("export of %s: %s; or, when the base model is elsewhere on this machine, name its folder "
                          "(--base)" % (state, e)) from e
    except OSError as e:
        raise ExportError("export of %s: %s" % (state, e)) from e
    return p.export(dest, merge=merge, max_shard_size=max_shard_size)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m espo_worker.export_cli", description=__doc__.split("\n\n")[0])
    ap.add_argument("state", help="a torch worker state: a checkpoint folder's worker.state (a file or a folder)")
    ap.add_argument("dest", help="the folder to write, replaced whole once the export is complete")
    ap.add_argument("--base", default="", help="the base model's folder on this machine, in place of the one the "
                                               "state names (the pod's /models/...)")
    ap.add_argument("--merge", action="store_true", help="also write the LoRA adapter merged into the base model, "
                                                         "under merged/")
    ap.add_argument("--device", default="cpu", help="where to load the model: cpu (default) or cuda")
    ap.add_argument("--max-shard-size", default="5GB", help="the largest safetensors file of a whole model")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(list(sys.argv[1:] if argv is None else argv))
    try:
        m = export_checkpoint(args.state, args.dest, base=args.base, merge=args.merge, device=args.device,
                              max_shard_size=args.max_shard_size)
    except (ExportError, InvalidError, OSError) as e:
        print("export: %s" % e, file=sys.stderr)
        return 2
    print(json.dumps({"path": args.dest, "kind": m.kind, "merged": m.merged, "step": m.step, "files": len(m.files)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
