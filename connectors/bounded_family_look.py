"""The family look (connectors.family_look) in a process of its own, stopped at a deadline.

Why a process: the look can hang inside librdkafka's C code, where no Python timeout or signal
reaches it. Seen on 2026-11-29 with a family of 200 members on this machine: one persist tick's
look spun at 100% of a core in the shared admin client's ListOffsets (librdkafka's leader query,
``rd_kafka_topic_partition_list_query_leaders_async_worker``) for over 30 minutes. The tick never
ended, so no later persist tick started, nothing alarmed, and the process outlived the stack's
stop. Only ending the process ends such a hang: the look runs in a child process that is killed
at the deadline, and every member is then one the look could not judge, whose job runs (as for
any look that fails: its own run decides, and fails alone).

The request (the members' configurations, the time of the look) goes to the child as one msgspec
value on its standard input, the looks come back as one on its standard output:

    python -m connectors.bounded_family_look < request.msgpack > looks.msgpack
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Sequence

import msgspec

from tidemark.nothing_new import PersistLook
from tidemark.stream_config import StreamConfig

_log = logging.getLogger("tidemark.family_look")

# The look at 200 members of 4 partitions took about 3 s on the 2-core machine (the persist
# look task of benchmarks/many_streams_idle.py), and starting the process about 1 s more: a look
# past this deadline is hung, not slow.
LOOK_DEADLINE_S = 120.0


class FamilyLookRequest(msgspec.Struct, frozen=True):
    """What the child looks at: ``streams`` at ``now_ms`` (ms since the epoch)."""

    streams: list[StreamConfig]
    now_ms: int


class FamilyLookError(RuntimeError):
    """The child process failed; the message is its last line of error output."""


def look_before_persisting_family_bounded(
    streams: Sequence[StreamConfig], deadline_s: float = LOOK_DEADLINE_S, now_ms: int | None = None
) -> dict[str, PersistLook]:
    """connectors.family_look.look_before_persisting_family for ``streams``, in a child process
    given ``deadline_s`` seconds. Past the deadline the child is killed and every member is
    answered "run the job" (``nothing_new`` False) with a reason that says so, and a warning is
    logged. Raises FamilyLookError if the child fails."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    request = msgspec.msgpack.encode(FamilyLookRequest(list(streams), now_ms))
    try:
        done = subprocess.run([sys.executable, "-m", __name__], input=request, capture_output=True, timeout=deadline_s)
    except subprocess.TimeoutExpired:  # subprocess.run has killed the child and waited for it
        reason = f"the look at the log did not answer within {deadline_s:g} s and was stopped"
        _log.warning(
            "The look at %d members did not answer within %g s: every member's job runs", len(streams), deadline_s
        )
        return {stream.name: PersistLook(nothing_new=False, reason=reason) for stream in streams}
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise FamilyLookError(f"the family look failed (exit {done.returncode}): {lines[-1] if lines else 'no output'}")
    return msgspec.msgpack.decode(done.stdout, type=dict[str, PersistLook])


def main() -> int:
    from connectors.family_look import look_before_persisting_family

    request = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=FamilyLookRequest)
    looks = look_before_persisting_family(request.streams, now_ms=request.now_ms)
    sys.stdout.buffer.write(msgspec.msgpack.encode(looks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
