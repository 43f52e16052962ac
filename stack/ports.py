"""Loopback ports: is one free, find free ones, fail clearly when one is taken.

Every server of the embedded stack binds to 127.0.0.1 only, so "free" means bindable there.
"""

from __future__ import annotations

import socket

from stack.environment import LOOPBACK
from stack.errors import StackError


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True if a server could listen on ``host:port`` now.

    SO_REUSEADDR mirrors what the JVM and uvicorn set, so a port that only holds TIME_WAIT
    connections of a server stopped a moment ago counts as free, as it is for them.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def require_free(port: int, what: str, variable: str) -> None:
    """Raise ``StackError`` naming the port and the variable that moves it, if it is taken."""
    if not port_is_free(port):
        raise StackError(
            f"Port {port} on {LOOPBACK} ({what}) is already in use by another program; "
            f"stop it or choose another port, e.g. `export {variable}={_suggestion(port)}`."
        )


def free_port(consecutive: int = 1) -> int:
    """A port P such that P .. P + consecutive - 1 are all free on loopback right now.

    Racy by nature (another program may take it before we bind); meant for tests.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            port = probe.getsockname()[1]
        if port + consecutive <= 65535 and all(
            port_is_free(candidate) for candidate in range(port, port + consecutive)
        ):
            return port
    raise StackError(f"Found no {consecutive} consecutive free ports on {LOOPBACK}.")


def port_answers(port: int, host: str = LOOPBACK, timeout_s: float = 0.5) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _suggestion(port: int) -> int:
    return port + 10 if port + 11 <= 65535 else port - 10
