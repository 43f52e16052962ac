"""Stall of the live reading, per partition (not per hour): tidemark.stall_rules over the last
quality.stall_window live ledger rows, ordered by read time, with the log's readable end now.

Facts, one row per partition: the verdict's status and reason, the read position and the log
end. Rules: the status is OK or WARN (STOP, STALL and LAGGING fail the check), and, as a
warning only, the status is OK (WARN: the lag grew across the whole window).

A Kinesis shard has no log end to subtract its position from (sequence numbers are sparse, and
Kinesis tells no shard's newest sequence number): its lag in the rules is "unread records
exist", 1 or 0 (the ledger's log end past its position; now, the probe at the lake's position,
connectors.log_bounds), and the figure a person reads is MillisBehindLatest (ms). So the rules
that need only "lag > 0" hold as for Kafka (STOP of a silent job, STALL, LAGGING, held by
alignment), while "the log end grew while the position stood still" (STOP (a)) and "the lag grew
across the window" (WARN) cannot be told from the ledger and never fire; a frozen shard is STALL.
A shard whose newest live row is FINISHED (closed, read to its end) is never stalled.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.ledger_entries import LedgerEntry
from expectations.quality_status import QualityStatus
from tidemark.duration import format_duration_ms
from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.stall_rules import LedgerObservation, StallRules, StallStatus, StallVerdict, partition_stall_status

NAME = "stall"


@dataclass(frozen=True)
class StallFacts:
    partition: int
    verdict: StallVerdict
    position: int | None
    log_end: int | None
    positions: PositionType = KAFKA_OFFSETS
    millis_behind_latest: int | None = None  # Kinesis: how far behind the shard's tip, in ms

    def row(self, row_id: int) -> tuple:
        dense = self.positions.dense
        return (
            row_id,
            self.partition,
            self.verdict.status.value,
            self.verdict.observations,
            self.position if dense or self.position is None else str(self.position),
            self.log_end if dense or self.log_end is None else str(self.log_end),
        )


def family(positions: PositionType = KAFKA_OFFSETS) -> CheckFamily:
    import great_expectations.expectations as gxe

    position_sql = "BIGINT" if positions.dense else "STRING"

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("source_partition", "INT"),
            ("status", "STRING"),
            ("observations", "INT"),
            ("position", position_sql),
            ("log_end", position_sql),
        ),
        index_columns=("row_id", "source_partition", "status"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeInSet,
                "reading_progresses",
                "No partition is STOP (position frozen while the log grows), STALL (position constant with "
                "records unread) or LAGGING (W_p too far behind G).",
                column="status",
                value_set=[StallStatus.OK.value, StallStatus.WARN.value],
            ),
            rule(
                gxe.ExpectColumnValuesToBeInSet,
                "lag_not_growing",
                "No partition's lag grew across the whole stall window (warning).",
                column="status",
                value_set=[StallStatus.OK.value],
                severity="warning",
            ),
        ),
    )


def facts(
    entries: list[LedgerEntry],
    partitions: list[int],
    rules: StallRules,
    now_ms: int,
    log_ends: dict[int, int],
    positions: dict[int, int | None],
    position_type: PositionType = KAFKA_OFFSETS,
    bounds: dict | None = None,
    finished: set[int] = frozenset(),
) -> list[StallFacts]:
    """One row per partition. Kinesis (``position_type`` not dense): ``bounds`` are the shards'
    connectors.kinesis_lookups.ShardLogBounds, ``finished`` the partitions the ledger marks FINISHED."""
    if not position_type.dense:
        return [
            _shard_facts(entries, partition, rules, now_ms, positions, position_type, (bounds or {}), finished)
            for partition in partitions
        ]
    rows = []
    for partition in partitions:
        observations = [e.observation() for e in entries if e.partition == partition and e.is_live]
        verdict = partition_stall_status(observations, rules, now_ms, log_ends.get(partition))
        rows.append(StallFacts(partition, verdict, positions.get(partition), log_ends.get(partition)))
    return rows


def _shard_facts(entries, partition, rules, now_ms, positions, position_type, bounds, finished) -> StallFacts:
    shard = bounds.get(partition)
    position = positions.get(partition)
    behind = None if shard is None else shard.millis_behind_latest
    live = [e for e in entries if e.partition == partition and e.is_live]
    if partition in finished or (shard is not None and shard.finished):
        verdict = StallVerdict(
            StallStatus.OK,
            f"shard closed and read to its end (FINISHED) at {position_type.name} {position}",
            min(len(live), rules.window),
        )
        return StallFacts(partition, verdict, position, None if shard is None else shard.end, position_type, behind)
    # Lag 1 or 0: unread records exist or not; never a difference of sequence numbers.
    observations = [
        LedgerObservation(
            e.read_time_ms or 0,
            e.end,
            e.end + 1 if e.log_end is not None and e.log_end > e.end else e.end,
            e.partition_watermark_ms,
            e.global_watermark_ms,
        )
        for e in live
    ]
    newest = max(observations, key=lambda o: o.read_time_ms, default=None)
    now_end = None
    if shard is not None and newest is not None:
        now_end = newest.position + 1 if shard.end > newest.position else newest.position
    verdict = partition_stall_status(observations, rules, now_ms, now_end)
    verdict = StallVerdict(
        verdict.status,
        _shard_reason(verdict, observations, rules, now_ms, position_type, shard, behind),
        verdict.observations,
        verdict.job_silent,
    )
    return StallFacts(partition, verdict, position, None if shard is None else shard.end, position_type, behind)


def _shard_reason(verdict, observations, rules, now_ms, position_type, shard, behind) -> str:
    """The verdict's sentence in a shard's terms: sequence numbers, unread or not, MillisBehindLatest."""
    if not observations:
        return verdict.reason
    rows = sorted(observations, key=lambda o: o.read_time_ms)[-rules.window :]
    newest = rows[-1]
    name = position_type.name
    where = f"shard {shard.shard_id}" if shard is not None else "the shard"
    tip = f"{behind} ms behind the shard's tip (MillisBehindLatest)" if behind is not None else "behind the tip"
    if verdict.status is StallStatus.STOP and verdict.job_silent:
        return (
            f"no ledger row for {format_duration_ms(now_ms - newest.read_time_ms)} (stall timeout "
            f"{format_duration_ms(rules.stall_timeout_ms)}) while {where} has records past the read position, "
            f"{name} {newest.position} ({tip}): the job is not running"
        )
    if verdict.status is StallStatus.STALL:
        return (
            f"read position constant at {name} {newest.position} across {len(rows)} rows "
            f"({format_duration_ms(newest.read_time_ms - rows[0].read_time_ms)}) with records unread "
            f"(now {tip})"
        )
    if verdict.status is StallStatus.OK:
        unread = shard.unread if shard is not None else newest.lag > 0
        if not unread:
            return f"read up to {name} {newest.position}, caught up"
        w, g = newest.partition_watermark_ms, newest.global_watermark_ms
        if w is not None and g is not None and w > g:
            return (
                f"waiting at {name} {newest.position} with records unread ({tip}): its watermark is "
                f"{format_duration_ms(w - g)} ahead of the global watermark, so aligned reading pauses it until "
                "the partition holding the global watermark catches up"
            )
        return f"read up to {name} {newest.position} with records unread ({tip})"
    return verdict.reason  # LAGGING names watermarks only


def findings(outcome: FamilyOutcome, rows: list[StallFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "reading_progresses", rows):
        status = QualityStatus(fact.verdict.status.value)
        found.append(
            Finding(
                fact.partition,
                NAME,
                status,
                f"{status.value}: {fact.verdict.reason}",
                job_silent=fact.verdict.job_silent,
            )
        )
    for fact in unexpected_rows(outcome, "lag_not_growing", rows):
        if fact.verdict.status is StallStatus.WARN:
            found.append(
                Finding(fact.partition, NAME, QualityStatus.WARN, f"WARN: {fact.verdict.reason}", failed=False)
            )
    return found
