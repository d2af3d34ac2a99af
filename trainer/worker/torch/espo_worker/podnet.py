# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The local mode's pod network, as the Go side's internal/localcluster/podnet.

The process node runs every pod's processes on one machine, without network
namespaces or cluster DNS: it gives each pod its own loopback address
($ESPO_POD_IP) and maps the pods' DNS names to those addresses in a hosts file
($ESPO_HOSTS_FILE). A worker there listens on its pod's address (every pod shares
the machine's ports) and resolves pod names through the hosts file. Outside the
local mode neither variable is set and both functions return their input.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ENV_HOSTS_FILE = "ESPO_HOSTS_FILE"
ENV_POD_IP = "ESPO_POD_IP"

# Hosts that mean "this pod": a pod's own address in the local mode.
_OWN = ("", "0.0.0.0", "[::]", "::", "localhost", "127.0.0.1", "[::1]", "::1")


def listen_addr(addr: str, environ: Mapping[str, str] = os.environ) -> str:
    """addr ("host:port") with a wildcard or loopback host replaced by $ESPO_POD_IP."""
    pod_ip = environ.get(ENV_POD_IP, "")
    host, port = addr.rsplit(":", 1)
    if pod_ip and host in _OWN:
        return "%s:%s" % (pod_ip, port)
    return addr


def resolve(host: str, environ: Mapping[str, str] = os.environ) -> str:
    """host's address in $ESPO_HOSTS_FILE (the pod's own for localhost), else host."""
    if host in _OWN[4:] and environ.get(ENV_POD_IP):
        return environ[ENV_POD_IP]
    path = environ.get(ENV_HOSTS_FILE, "")
    if not path:
        return host
    try:
        with open(path) as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                if len(fields) > 1 and host in fields[1:]:
                    return fields[0]
    except OSError:  # an unreadable hosts file counts as empty, as on the Go side
        pass
    return host
