"""A detached background process tracked by a pid file.

The broker and Airflow outlive the ``tidemark up`` that launched them, so they run
detached: in a new session (leader of their own process group, out of reach of the
terminal's Ctrl-C), stdin closed, stdout and stderr appended to a log file, pid in a pid file.
Stopping signals the whole process group, so whatever the daemon spawned (Airflow's
components, their task processes, spark-submit) goes down with it, and the groups of its
descendants that left it: Airflow's task processes lead groups of their own, and one left behind
by a stop (a look hung in the Kafka client, 2026-11-29) spun at 100% of a core until killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# Children launched by this Python process, kept so they can be reaped. Without it a stopped
# daemon stays a zombie of, say, the pytest session that started it (and still looks alive to
# kill(pid, 0)), and subprocess warns about a Popen collected while its child still runs.
_launched: dict[int, subprocess.Popen[bytes]] = {}


class Daemon:
    """One detached process: launch, is-it-running, stop, log tail.

    ``marker`` is a string the process's command line must contain. A pid file that outlived
    its process (machine restart) may name a pid the kernel has since reused for something
    unrelated; such a pid is treated as not running and never signalled.
    """

    def __init__(self, name: str, pid_file: Path, log_file: Path, marker: str) -> None:
        self.name = name
        self.pid_file = pid_file
        self.log_file = log_file
        self.marker = marker

    def pid(self) -> int | None:
        """The pid of the running daemon, or None; a stale pid file is removed."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        # A child of this very process needs no marker check, and must not get one: right
        # after Popen returns, the kernel may still be setting up the new program's command
        # line, and /proc/PID/cmdline reads empty for a moment.
        if _is_alive(pid) and (pid in _launched or self.marker in _command_line(pid)):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def launch(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> int:
        """Start ``argv`` detached and record its pid; returns the pid."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _launched[process.pid] = process
        self.pid_file.write_text(f"{process.pid}\n")
        return process.pid

    def is_running(self) -> bool:
        return self.pid() is not None

    def stop(self, timeout_s: float) -> bool:
        """SIGTERM the daemon's process group, SIGKILL it after ``timeout_s``.

        Returns False if it was not running. Returns once no process of the group is left.
        """
        pid = self.pid()
        if pid is None:
            return False
        # Asked before any signal: once a parent dies its children are re-parented to init and
        # can no longer be told from anyone else's.
        groups = [pid, *sorted(_descendant_groups(pid) - {pid})]
        for group in groups:
            _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for group in groups:
            if not _wait_group_gone(group, max(0.0, deadline - time.monotonic())):
                _signal_group(group, signal.SIGKILL)
                _wait_group_gone(group, 10.0)
        self.pid_file.unlink(missing_ok=True)
        return True

    def log_tail(self, lines: int = 25) -> str:
        """The last ``lines`` lines of the log file, for error messages."""
        return tail(self.log_file, lines)


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a text file (reads at most its last 64 KiB)."""
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64 * 1024))
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def _is_alive(pid: int) -> bool:
    child = _launched.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _launched[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return _state(pid) not in ("Z", "X", "")


def _stat_fields(pid: int) -> list[str]:
    # /proc/PID/stat is "pid (comm) state ppid pgrp ..."; comm may hold spaces and parens.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()


def _state(pid: int) -> str:
    if not Path("/proc").is_dir():
        return "R"  # no procfs: trust kill(pid, 0)
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        return "" if Path("/proc").is_dir() else "?"
    except OSError:
        return ""


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _descendant_groups(pid: int) -> set[int]:
    """The process groups of every live process below ``pid`` (by parent pid, however deep)."""
    if not Path("/proc").is_dir():
        return set()
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if len(fields) > 2 and fields[0] not in ("Z", "X"):
                children.setdefault(int(fields[1]), []).append((int(entry.name), int(fields[2])))
    groups, below = set(), [pid]
    while below:
        for child, group in children.get(below.pop(), []):
            groups.add(group)
            below.append(child)
    return groups


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to signal
        os.killpg(pgid, signum)


def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        _is_alive(pgid)  # reaps the leader if this process launched it
        if not _group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
