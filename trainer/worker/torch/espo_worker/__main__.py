# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""python3 -m espo_worker: serve the PyTorch policy worker over gRPC.

    python3 -m espo_worker [--listen ADDR] [--model PATH|tiny] [--device cuda|cpu]
                           [--dtype bfloat16|float16|float32] [--lora-r R ...] [--procs K]
                           [--token-file FILE | --insecure-no-auth] [--allow-path DIR ...]

Every flag defaults to an environment variable, so the controller's container needs
no arguments: --listen to $ESPO_WORKER_LISTEN (else :50051), --procs to
$ESPO_WORKERS_PER_REPLICA (else 1), the model flags to $ESPO_WORKER_<FLAG> (for
example ESPO_WORKER_DTYPE, ESPO_WORKER_LORA_R; set them in spec.trainer.env): the
model flags, their defaults and help are espo_worker.config.WorkerConfig's. The
model path comes from the trainer's Configure option "pretrained"
(spec.model.pretrained) when it sends one, else --model ($ESPO_WORKER_MODEL). In the local
mode a wildcard or loopback --listen host becomes the pod's address
($ESPO_POD_IP, espo_worker.podnet).

Every call of the worker protocol must carry the job's token, read from --token-file
($ESPO_WORKER_TOKEN_FILE, the Secret the controller mounts); without one the worker
does not start unless --insecure-no-auth is given, for a worker run by hand. Save and
Load touch only paths under the --allow-path folders ($ESPO_WORKER_PATHS, colon-
separated); with none, every Save and Load is refused.

With --procs K > 1 this process is a launcher: it starts K workers, worker k on port
PORT+k with GPU k, and waits for them; they form one torch.distributed group with the
workers of the other pods (espo_worker.dist). The launcher exits when one of them
does on its own, stopping the others; SIGTERM and SIGINT are passed on, and each
worker then drains (serves until its trainer calls Release) and exits.
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
from typing import IO

from . import auth, folders, podnet
from .config import WorkerConfig


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m espo_worker", description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default=os.environ.get("ESPO_WORKER_LISTEN") or ":50051",
                    help="host:port to serve on; port 0 picks a free port (default $ESPO_WORKER_LISTEN or :50051)")
    ap.add_argument("--device", default=os.environ.get("ESPO_WORKER_DEVICE", ""),
                    help="cuda or cpu (default $ESPO_WORKER_DEVICE, else cuda when available)")
    WorkerConfig.add_arguments(ap)
    ap.add_argument("--procs", type=int, default=int(os.environ.get("ESPO_WORKERS_PER_REPLICA") or 1),
                    help="worker processes in this container, one per GPU (default $ESPO_WORKERS_PER_REPLICA or 1)")
    ap.add_argument("--threads", type=int, default=8, help="gRPC server threads")
    ap.add_argument("--drain-quiet", type=float, default=60.0,
                    help="after SIGTERM, seconds without a call that end the wait for the trainer's Release")
    ap.add_argument("--token-file", default=auth.default_token_file(),
                    help="file with the job's worker token that every call must carry (default $%s)" % auth.ENV_TOKEN_FILE)
    ap.add_argument("--insecure-no-auth", action="store_true",
                    help="serve without a token, to anyone who can reach the port: for a worker run by hand, never in a job")
    ap.add_argument("--allow-path", action="append", default=None,
                    help="a folder Save and Load may touch; repeat for more (default: the colon-separated $%s); "
                         "none refuses every Save and Load" % folders.ENV_ALLOWED_PATHS)
    ap.add_argument("--local-index", type=int, default=-1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.listen = podnet.listen_addr(args.listen)
    if args.allow_path is None:
        args.allow_path = folders.split(os.environ.get(folders.ENV_ALLOWED_PATHS, ""))
    try:
        args.token = auth.token_from(args.token_file, args.insecure_no_auth)
    except auth.TokenError as e:
        ap.error(str(e))
    return args


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    host, port = args.listen.rsplit(":", 1)
    procs = []
    for k in range(args.procs):
        e = dict(os.environ, LOCAL_RANK=str(k))
        cmd = [sys.executable, "-m", "espo_worker"] + argv + ["--listen", "%s:%d" % (host, int(port) + k),
                                                             "--local-index", str(k)]
        procs.append(subprocess.Popen(cmd, env=e))

    signalled = threading.Event()

    def forward(sig: int, _: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(sig)

    def on_signal(sig: int, frame: object) -> None:
        signalled.set()
        forward(sig, frame)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    done = threading.Event()
    codes = {}

    def wait(p: subprocess.Popen) -> None:
        codes[p.pid] = p.wait()
        done.set()
    for p in procs:
        threading.Thread(target=wait, args=(p,), daemon=True).start()
    done.wait()
    if not signalled.is_set():  # one worker ended on its own: stop the others
        forward(signal.SIGTERM, None)
    # After a signal, each worker drains on its own (the one that saves the
    # checkpoint is busy longest): a second signal would cut that short.
    for p in procs:
        p.wait()
    return max(abs(c) for c in codes.values()) if codes else 0


def announce(line: str, out: IO[str] | None = None) -> None:
    """Writes line and a newline to out (standard error) in one write. A pod's workers
    share its standard error, unbuffered in the image (PYTHONUNBUFFERED), where print()
    writes the text and the newline apart: two workers announcing at once could then
    make one line of two, and a reader of the log miss an address."""
    out = sys.stderr if out is None else out
    out.write(line + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if args.procs > 1 and args.local_index < 0:
        return launch(args, argv)
    import torch

    from . import dist, policy, server
    k = max(args.local_index, 0)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda":
        device = "cuda:%d" % k
        torch.cuda.set_device(k)
    group = dist.from_env(max(args.procs, 1), k, device)
    p = policy.Policy(WorkerConfig.from_args(args), device=device, dist=group)
    activity = server.Activity()
    s, port = server.new_server(p, args.listen, args.threads, activity, token=args.token,
                                insecure_no_auth=args.insecure_no_auth, allowed=args.allow_path)
    host = args.listen.rsplit(":", 1)[0] or "[::]"
    note = " WITHOUT AUTHENTICATION (--insecure-no-auth): anyone who can reach the port may call" \
        if args.insecure_no_auth else ""
    announce("espo torch worker: serving on %s:%d (rank %d of %d, %s)%s" % (host, port, group.rank, group.world, device,
                                                                            note))
    # The first signal drains: serve until the trainer, which finishes its step and
    # checkpoint first, calls Release (or until no call has come for --drain-quiet: a
    # trainer that died cannot release); a second signal stops at once.
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        (activity.stop_now if stop.is_set() else stop).set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stop.wait()
    activity.wait_released(args.drain_quiet)
    s.stop(30).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
