# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""python -m espo_engine --fd N: serves one worker over the socket at file descriptor N."""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="espo_engine", description=__doc__)
    ap.add_argument("--fd", type=int, required=True, help="the worker's end of a socket pair, inherited")
    args = ap.parse_args(argv)
    from . import server
    return server.serve(args.fd)


# vLLM may spawn processes (a guard that the in-process mode the server picks does not
# need, but a spawned child re-imports this module).
if __name__ == "__main__":
    sys.exit(main())
