"""Whether a server answers at all, asked before a client that would wait out its own timeout."""

from __future__ import annotations

import socket


def reachable(servers: str, timeout_s: float = 0.5) -> None:
    """Raise ConnectionError unless one of ``servers`` ("host:port,host:port") accepts a TCP
    connection within ``timeout_s`` seconds: a Kafka client retries a refused broker for its
    whole timeout, and a page must answer at once."""
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            return
        except (OSError, ValueError):
            continue
    raise ConnectionError(f"no server of {servers} accepts connections")
