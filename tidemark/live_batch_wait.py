"""Step 2 of the claim rules (tidemark.write_claims): what a claimer does about the live job's
batch in flight. Decided, never waited out.

A recovery or a backfill into events has committed its claim and found the live job's batch in
flight (planned in live's checkpoint, not committed) reading some of the offsets it claimed.
That batch may have decided how to write before the claim existed: if it commits, its plain
appends hold those offsets, and the claimer must not write them beside it. So the question is
whether the batch can still commit, and the live driver answers it: while its query runs it
beats (``DriverBeat``: a count that rises every ``interval_ms``, written where its checkpoint
is), and when the query ends it says it stopped.

- The batch committed (the checkpoint no longer shows it in flight): PROCEED. Every later live
  batch was planned after the claim and leaves the claimed offsets out.
- The driver beats: WAIT for the batch, but not longer than ``max_wait_ms`` (a batch takes
  seconds to a minute); a driver that beats and does not commit for that long is stuck: YIELD.
- The driver said it stopped, never beat (no beat: the run that planned the batch is gone and no
  run has started since), or its beat has not moved for SILENT_BEATS intervals (killed, or its
  machine lost): the batch will not commit in this run. YIELD.

Yielding is always safe: the claimer writes nothing, its claim stays, and it is run again later
(Airflow reschedules its task). The live job's next run (its retries, its schedule) replays the
batch first, reading the claims before it decides, so it leaves the claimed offsets out; the
claimer's next run finds the batch committed and writes them. If the claimer is never run
again, the claimed offsets are a hole in the ledger's ranges that the quality run finds and
recovers. Times are ms; the clock is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import msgspec

# A driver whose beat has not moved for this many of its intervals is gone (3: one late beat,
# a slow store, is not a death).
SILENT_BEATS = 3

# How long a claimer waits for a batch whose driver beats (ms): a live batch takes seconds to a
# minute; one that takes five has a stuck job behind it.
MAX_WAIT_MS = 5 * 60_000


class DriverBeat(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The live driver's beat, as its file holds it (spark_jobs.persist.driver_beat writes it, a
    claimer reads it): ``run_id`` names the run, ``beat`` rises by one every ``interval_ms``
    while its query runs, ``stopped`` is its last word once the query ended (however it ended)."""

    run_id: str
    beat: int
    interval_ms: int
    stopped: bool = False


class Verdict(Enum):
    PROCEED = "proceed"
    WAIT = "wait"
    YIELD = "yield"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str  # for people: what the claimer saw


class LiveBatchWait:
    """The decision about live's batch ``batch`` in flight, first seen at ``started_ms``; ask
    ``decide`` each time the checkpoint and the beat were read again."""

    def __init__(self, batch: int, started_ms: int, max_wait_ms: int = MAX_WAIT_MS):
        self.batch = batch
        self._started_ms = started_ms
        self._max_wait_ms = max_wait_ms
        self._beat_seen: tuple[str, int] | None = None
        self._beat_seen_since_ms = started_ms

    def decide(self, now_ms: int, pending: int | None, beat: DriverBeat | None) -> Decision:
        """``pending``: the batch live's checkpoint shows in flight now (None: none); ``beat``:
        the driver's beat now (None: there is no beat file)."""
        waited_s = (now_ms - self._started_ms) / 1000
        if pending != self.batch:
            return Decision(Verdict.PROCEED, f"the live job committed batch {self.batch} ({waited_s:.1f} s)")
        if beat is None:
            return Decision(
                Verdict.YIELD,
                f"the live job is not running: no run has beaten since the one that planned batch {self.batch}",
            )
        if beat.stopped:
            return Decision(Verdict.YIELD, f"the live job's run {beat.run_id} stopped without committing the batch")
        if (beat.run_id, beat.beat) != self._beat_seen:
            self._beat_seen, self._beat_seen_since_ms = (beat.run_id, beat.beat), now_ms
        silent_ms = now_ms - self._beat_seen_since_ms
        if silent_ms >= SILENT_BEATS * beat.interval_ms:
            return Decision(
                Verdict.YIELD,
                f"the live job's driver (run {beat.run_id}) has not beaten for {silent_ms / 1000:.1f} s "
                f"(every {beat.interval_ms / 1000:g} s while it runs): it died or its machine is gone",
            )
        if now_ms - self._started_ms >= self._max_wait_ms:
            return Decision(
                Verdict.YIELD,
                f"the live job's driver runs but has not committed the batch in {waited_s:.0f} s: it is stuck",
            )
        return Decision(Verdict.WAIT, f"the live job's driver runs (run {beat.run_id}): waiting {waited_s:.1f} s")


class LiveBatchYield(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A claimer that yielded (see the module): live's batch ``live_batch`` of the checkpoint
    ``live_checkpoint`` reads ``offsets`` it claimed ({partition as text: [[start, end], ...]}),
    ``reason`` says what it saw, after ``waited_s`` seconds. It wrote nothing but its claim. The
    recovery's and the backfill's result files carry it to their Airflow operators."""

    live_batch: int
    live_checkpoint: str
    offsets: dict[str, tuple[tuple[int, int], ...]]
    reason: str
    waited_s: float

    def sentence(self, job: str) -> str:
        """One line for people: what the ``job`` ("recovery", "backfill") yielded to, and why."""
        spans = "; ".join(
            f"partition {p}: {', '.join(f'[{s}, {e})' for s, e in spans)}" for p, spans in self.offsets.items()
        )
        return (
            f"the live job's batch {self.live_batch} reads offsets this {job} claimed ({spans}) and {self.reason}. "
            "Nothing was written but the claim: the live job's next run replays the batch without the claimed "
            f"offsets, and the next run of this {job} writes them"
        )
