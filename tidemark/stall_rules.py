"""Is a partition's live reading healthy? Its status over the last K ledger observations.

Burrow's consumer-lag evaluation is the anchor (a sliding window of (position, lag) per
partition, no thresholds on the lag itself), read against the live ledger instead of committed
consumer offsets. The rules, first match wins, over the newest ``window`` observations ordered
by read time (ms since the epoch, UTC), except STOP (a), which looks back over every row given;
lag = log end − position, in offsets:

- STOP, the read position has not moved for at least stall_timeout while the log end moved:
  (a) the position has been constant since a row at least stall_timeout before the newest one,
  and the log end grew over that span: the job kept writing rows, this partition did not move.
  This rule reads every row given, not only the window: a window of K rows written every i ms
  spans only (K − 1)·i, and a freeze longer than the window would otherwise stay STALL for as
  long as the job keeps writing rows. Callers pass the rows of at least the last stall_timeout
  for it to see that far; given only K rows, it sees K. Or
  (b) the newest row is at least stall_timeout old at ``now_ms`` (the job wrote nothing: a dead
  job) and the log end is beyond its position: ``current_log_end`` when the caller read it,
  otherwise the newest row's own log end. (a) is tried first: when both hold, the partition
  was stuck while the job still ran, which a replay of the partition can cure; (b) alone says
  the job is silent (``StallVerdict.job_silent``), which only running the job cures.
- Held by alignment (OK, not a stall): the newest row's W_p is ahead of its G. Aligned reading
  pauses every partition whose next record is at or past T = G + max_drift, so while one
  partition holds G (a stalled one, say) the others stand still with unread data too; they are
  waiting, not stuck, and reporting them would hide the one partition that is the cause (its
  W_p is G). This rule comes first: when the whole job is dead, the partition holding G is
  still reported STOP, and it is the one to look at first.
- STALL, the position is constant across the whole window (>= 2 rows) with lag > 0 in each.
- LAGGING, the newest row's partition watermark W_p is behind its global watermark G by more
  than max_partition_lag (both known). An idle partition (caught up in the newest row, W_p
  unchanged across the window) is not LAGGING: G leaves it behind because it has nothing to
  say, not because it is slow.
- WARN, the lag grew strictly between every consecutive pair of the window (>= 3 rows):
  Burrow's "lag increasing", the reader is alive but slower than the producers.
- OK otherwise; OK ("no ledger rows yet") when there is no row at all.

A row with lag 0 rules out STALL, and WARN unless it is the window's first row (Burrow goes
further: a zero lag anywhere in its window means OK). Burrow's REWIND (position going back) has no status here: live positions
come from one checkpoint and only move forward.

Worst-case detection delays, for rows written every i ms and the check run every q ms:
- STOP (b): stall_timeout + q after the job's last row. Its price: a partition idle for longer
  than stall_timeout that just received records is STOP until the job's next planning writes a
  row (at most one persist interval); from the outside that is what a dead job looks like.
- STOP (a): stall_timeout + i + q after the position stopped, provided the rows given reach back
  to the freeze (otherwise, as with K rows only, it needs (K − 1)·i >= stall_timeout, and a
  frozen partition whose job keeps writing rows stays STALL).
- STALL: (K − 1)·i + q after the position stopped.
- LAGGING: i + q after W_p falls behind G by more than max_partition_lag.
- WARN: (K − 1)·i + q after the lag started to grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from tidemark.duration import format_duration_ms
from tidemark.log_position import KAFKA_OFFSETS, PositionType


class StallStatus(str, Enum):
    OK = "OK"
    WARN = "WARN"
    LAGGING = "LAGGING"
    STALL = "STALL"
    STOP = "STOP"


@dataclass(frozen=True)
class LedgerObservation:
    """One live ledger row of one partition: the batch planned at ``read_time_ms`` read up to
    ``position`` (its end_offset, the next offset to read) while the log's readable end was
    ``log_end``. Watermarks are ms since the epoch, UTC; None means none yet."""

    read_time_ms: int
    position: int
    log_end: int
    partition_watermark_ms: int | None
    global_watermark_ms: int | None

    @property
    def lag(self) -> int:
        """Offsets the partition had left to read after the batch, never negative."""
        return max(self.log_end - self.position, 0)


@dataclass(frozen=True)
class StallRules:
    """The thresholds of the stall rules: ``window`` rows (K >= 2), durations in ms."""

    window: int
    stall_timeout_ms: int
    max_partition_lag_ms: int

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError(f"window must be >= 2 observations, got {self.window}")
        if self.stall_timeout_ms < 1:
            raise ValueError(f"stall_timeout_ms must be > 0, got {self.stall_timeout_ms}")
        if self.max_partition_lag_ms < 0:
            raise ValueError(f"max_partition_lag_ms must be >= 0, got {self.max_partition_lag_ms}")


@dataclass(frozen=True)
class StallVerdict:
    status: StallStatus
    reason: str  # one sentence for a person, with the offsets and durations that decided it
    observations: int  # rows in the window that was evaluated: min(window, rows given)
    # True for STOP (b): the job itself wrote no row for stall_timeout. Its cure is running the
    # live job, which reads from the partition's position; replaying the range beside it is not.
    job_silent: bool = False


def partition_stall_status(
    observations: Sequence[LedgerObservation],
    rules: StallRules,
    now_ms: int,
    current_log_end: int | None = None,
    positions: PositionType = KAFKA_OFFSETS,
) -> StallVerdict:
    """The partition's status at ``now_ms`` from its live ledger rows (any order, any number:
    the newest ``rules.window`` count, STOP (a) reads them all). ``current_log_end`` is the log's readable end now (Kafka:
    the last stable offset, as in the ledger's log_end_offset), when the caller asked the log; it
    is what reveals a dead job on a partition that kept producing after the job's last row.

    ``positions``: the stream's position type. Rules that compare positions use their order only
    and hold for every log; WARN ("the lag grew") needs lags that are counts, which a sparse
    position type (Kinesis sequence numbers) does not give, so it is not judged there; and the
    sentences name positions in the log's own words, unread records without a count."""
    words = _Words(positions)
    history = sorted(observations, key=lambda o: o.read_time_ms)
    rows = history[-rules.window :]
    if not rows:
        return StallVerdict(StallStatus.OK, "no ledger rows yet", 0)
    verdict = (
        _held_by_alignment(rows, words)
        or _frozen_while_log_grows(history, rules, len(rows), words)
        or _dead_job(rows, rules, now_ms, current_log_end, words)
        or _stalled(rows, words)
        or _lagging(rows, rules)
        or (_lag_increasing(rows) if positions.dense else None)
    )
    if verdict is not None:
        return verdict
    newest = rows[-1]
    if not positions.dense:
        unread = "records unread" if newest.lag > 0 else "caught up"
        return StallVerdict(StallStatus.OK, f"read up to {words.at(newest.position)}, {unread}", len(rows))
    return StallVerdict(
        StallStatus.OK, f"read up to offset {newest.position} with a lag of {newest.lag} offsets", len(rows)
    )


@dataclass(frozen=True)
class _Words:
    """How a verdict names positions and unread records in the log's own terms."""

    positions: PositionType

    def at(self, position: int) -> str:
        return f"{self.positions.name} {position}"

    def unread(self, lag: int) -> str:
        return f"{lag} offsets unread" if self.positions.dense else "records unread"


def _dead_job(rows, rules, now_ms, current_log_end, words) -> StallVerdict | None:
    newest = rows[-1]
    silent_ms = now_ms - newest.read_time_ms
    log_end = newest.log_end if current_log_end is None else current_log_end
    if silent_ms < rules.stall_timeout_ms or log_end <= newest.position:
        return None
    return StallVerdict(
        StallStatus.STOP,
        f"no ledger row for {format_duration_ms(silent_ms)} (stall timeout {format_duration_ms(rules.stall_timeout_ms)}) "
        f"while the log reaches {words.at(log_end)} beyond the read position {newest.position}: the job is not running",
        len(rows),
        job_silent=True,
    )


def _held_by_alignment(rows, words) -> StallVerdict | None:
    newest = rows[-1]
    w, g = newest.partition_watermark_ms, newest.global_watermark_ms
    if w is None or g is None or w <= g or newest.lag == 0:
        return None
    return StallVerdict(
        StallStatus.OK,
        f"waiting at {words.at(newest.position)} with {words.unread(newest.lag)}: its watermark is "
        f"{format_duration_ms(w - g)} ahead of the global watermark, so aligned reading pauses it until the "
        "partition holding the global watermark catches up",
        len(rows),
    )


def _frozen_while_log_grows(history, rules, window_rows, words) -> StallVerdict | None:
    newest = history[-1]
    first = len(history) - 1
    while first > 0 and history[first - 1].position == newest.position:
        first -= 1
    since = history[first]
    frozen_ms = newest.read_time_ms - since.read_time_ms
    if frozen_ms < rules.stall_timeout_ms or newest.log_end <= since.log_end:
        return None
    return StallVerdict(
        StallStatus.STOP,
        f"read position stuck at {words.at(newest.position)} for {format_duration_ms(frozen_ms)} "
        f"(stall timeout {format_duration_ms(rules.stall_timeout_ms)}) while the log end grew from "
        f"{since.log_end} to {newest.log_end}",
        window_rows,
    )


def _stalled(rows, words) -> StallVerdict | None:
    if len(rows) < 2 or any(r.position != rows[0].position for r in rows) or any(r.lag == 0 for r in rows):
        return None
    span_ms = rows[-1].read_time_ms - rows[0].read_time_ms
    return StallVerdict(
        StallStatus.STALL,
        f"read position constant at {words.at(rows[0].position)} across {len(rows)} rows "
        f"({format_duration_ms(span_ms)}) with {words.unread(rows[-1].lag)}",
        len(rows),
    )


def _lagging(rows, rules) -> StallVerdict | None:
    newest = rows[-1]
    w, g = newest.partition_watermark_ms, newest.global_watermark_ms
    if w is None or g is None or g - w <= rules.max_partition_lag_ms:
        return None
    if newest.lag == 0 and all(r.partition_watermark_ms == w for r in rows):
        return None  # idle: caught up and nothing new admitted
    return StallVerdict(
        StallStatus.LAGGING,
        f"partition watermark {format_duration_ms(g - w)} behind the global watermark "
        f"(max partition lag {format_duration_ms(rules.max_partition_lag_ms)})",
        len(rows),
    )


def _lag_increasing(rows) -> StallVerdict | None:
    if len(rows) < 3 or any(later.lag <= earlier.lag for earlier, later in zip(rows, rows[1:])):
        return None
    return StallVerdict(
        StallStatus.WARN,
        f"lag grew in each of {len(rows)} rows, from {rows[0].lag} to {rows[-1].lag} offsets, "
        f"while the position moved from {rows[0].position} to {rows[-1].position}",
        len(rows),
    )
