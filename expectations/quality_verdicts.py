"""From the checks' findings to the verdicts a person and the recover DAG act on: each
partition's status, holes, lost offsets and reasons; the figures of each hour and partition; and
the recovery request of each partition that needs one.

Holes and lost offsets never overlap: of the offsets a check found missing, those at or after the
partition's earliest retained offset are holes (recovery replays them), those below are lost.
A recovery request replays a partition's holes and, for STOP and STALL, [position, log end)
(not when the whole job is silent: running it is the cure); never lost offsets. It asks the
recover DAG to restart the live job (``restart_live``) whenever a STOP or STALL verdict names the
live job as the cause, whatever else the partition has.

A Kinesis shard's lag is MillisBehindLatest (ms) from the probe at its position, never a
difference of sequence numbers; its log end, for a shard with unread records, is its tip at the
check (connectors.log_bounds), so the range a STOP or STALL asks to replay is everything unread
then, as Kafka's log end gives; ``restart_live`` (the live job reads on from its position) takes
what arrives after.
"""

from __future__ import annotations

from typing import Protocol

from expectations import stall
from expectations.check_family import Finding
from expectations.gaps import GapFacts
from expectations.hour_records import HourCounts
from expectations.hour_scope import hour_text
from expectations.ledger_entries import LedgerEntry, accepted_losses, furthest_live_entry
from expectations.offset_spans import offsets_in, spans_text
from expectations.persisted_offsets import ScopeCount
from expectations.quality_result import PartitionQuality
from expectations.quality_status import QualityStatus, worst
from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.quality_summary import HourSummary
from tidemark.recovery_request import MAX_REASON_CHARS, RecoveryRequest, split_by_retention

NO_COUNT = ScopeCount(0, 0, 0, (), 0)
_RECOVER_STATUSES = (QualityStatus.STOP, QualityStatus.STALL)


class LogBoundsView(Protocol):
    """What the checks need of a partition's log: [earliest, end) retained and readable."""

    earliest: int
    end: int


def partition_quality(
    partition: int,
    found: list[Finding],
    stall_fact: stall.StallFacts,
    position: int | None,
    bounds: LogBoundsView | None,
    entries: list[LedgerEntry],
    hours_ms: list[int],
    hour_counts: dict[tuple[int, int], HourCounts],
    all_hours: ScopeCount,
    positions: PositionType = KAFKA_OFFSETS,
) -> PartitionQuality:
    holes = merge_ranges(span for finding in found for span in finding.holes)
    recoverable, lost_holes = split_by_retention(holes, bounds.earliest) if bounds is not None else (holes, [])
    lost = merge_ranges([span for finding in found for span in finding.lost] + lost_holes)
    hole_ranges = {}
    for finding in found:
        if finding.hole_range is not None:
            hole_ranges.setdefault(
                (finding.hole_range.start, finding.hole_range.end, finding.hole_range.step_id), finding.hole_range
            )
    reasons = list(dict.fromkeys(finding.reason for finding in found)) or [stall_fact.verdict.reason]
    status = worst(finding.status for finding in found)
    reason = next((finding.reason for finding in found if finding.status is status), reasons[0])
    # Accepted as lost: no longer a failure (no alarm, the live job reads on), never out of sight.
    accepted = tuple(a for a in accepted_losses(entries) if a.partition == partition)
    accepted_text = [a.describe(positions.name) for a in accepted]
    reasons += accepted_text
    if status is QualityStatus.OK and accepted_text:
        reason = f"{reason}; {'; '.join(accepted_text)}"
    newest = furthest_live_entry(entries, partition)
    counts = [hour_counts.get((partition, hour_ms), HourCounts(0, 0)) for hour_ms in hours_ms]
    return PartitionQuality(
        partition=partition,
        status=status,
        records=sum(c.events for c in counts),
        late=sum(c.late for c in counts),
        quarantined=all_hours.quarantined,
        position=position,
        log_earliest=None if bounds is None else bounds.earliest,
        log_end=None if bounds is None else bounds.end,
        lag=_lag(bounds, position, positions),
        partition_watermark_ms=None if newest is None else newest.partition_watermark_ms,
        holes=tuple(merge_ranges(recoverable)),
        hole_ranges=tuple(hole_ranges[key] for key in sorted(hole_ranges)),
        lost=tuple(lost),
        failed_checks=tuple(sorted({finding.check for finding in found if finding.failed})),
        reason=reason,
        reasons=tuple(reasons),
        accepted_lost=accepted,
    )


def _lag(bounds, position: int | None, positions: PositionType) -> int | None:
    """Kafka: offsets between the position and the log end. Kinesis: MillisBehindLatest (ms)."""
    if bounds is None or position is None:
        return None
    if not positions.dense:
        return getattr(bounds, "millis_behind_latest", None)
    return max(bounds.end - position, 0)


def recovery_request(
    stream: str, quality: PartitionQuality, found: list[Finding], positions: PositionType = KAFKA_OFFSETS
) -> RecoveryRequest | None:
    """Replay the partition's recoverable holes, and for STOP/STALL [position, log end); never
    what is lost (below the earliest retained offset). A STOP of a silent job (no ledger row at
    all) asks for no replay: the persist job, once it runs, reads from the position itself, and a
    recovery beside it would read the same offsets a second time (seen after a stack restart:
    one recovery run per partition, each inserting nothing). The run still fails with the reason.

    ``restart_live`` is True when any STOP or STALL verdict holds for the partition (a silent
    job's too: running it is the cure), also when the holes' sentence comes first in ``reason``."""
    ranges = list(quality.holes)
    why = []
    if quality.holes:
        if positions.dense:
            why.append(f"{offsets_in(quality.holes)} offsets missing from the lake: {spans_text(quality.holes)}")
        else:
            why.append(
                f"records missing from the lake in {len(quality.holes)} {positions.name} ranges: "
                f"{spans_text(quality.holes)}"
            )
    live_job_stopped = [f for f in found if f.check == stall.NAME and f.status in _RECOVER_STATUSES]
    stalled = [f for f in live_job_stopped if not f.job_silent]
    if stalled and quality.position is not None and quality.log_end is not None and quality.log_end > quality.position:
        unread = [OffsetRange(quality.position, quality.log_end)]
        if quality.log_earliest is not None:
            unread, _ = split_by_retention(unread, quality.log_earliest)
        if unread:
            ranges.extend(unread)
            why.append(stalled[0].reason)
    if not ranges:
        return None
    reason = "; ".join(why)
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 3] + "..."
    return RecoveryRequest(
        stream, quality.partition, tuple(merge_ranges(ranges)), reason, restart_live=bool(live_job_stopped)
    )


def hour_figures(
    hours_ms: list[int],
    partitions: list[int],
    found: list[Finding],
    range_facts: list,
    hour_counts: dict[tuple[int, int], HourCounts],
    span_counts: dict,
    gap_facts: list[GapFacts],
    earliest: dict[int, int],
) -> list[HourSummary]:
    ranges_of: dict[tuple[int, int], list] = {}
    for fact in range_facts:
        ranges_of.setdefault((fact.hour_ms, fact.entry.partition), []).append(fact)
    gap_of = {(fact.hour_ms, fact.partition): fact for fact in gap_facts}
    found_of: dict[tuple[int, int], list[Finding]] = {}
    for finding in found:
        if finding.hour_ms is not None:
            found_of.setdefault((finding.hour_ms, finding.partition), []).append(finding)
    figures = []
    for hour_ms in hours_ms:
        for partition in partitions:
            here = found_of.get((hour_ms, partition), [])
            statuses = [finding.status for finding in here]
            if partition in earliest and any(split_by_retention(f.holes, earliest[partition])[1] for f in here):
                statuses.append(QualityStatus.LOST)
            ranges = ranges_of.get((hour_ms, partition), [])
            counts = hour_counts.get((partition, hour_ms), HourCounts(0, 0))
            gap = gap_of.get((hour_ms, partition))  # none in a sweep (completeness only)
            figures.append(
                HourSummary(
                    hour=hour_text(hour_ms),
                    hour_ms=hour_ms,
                    partition=partition,
                    status=worst(statuses),
                    records=counts.events,
                    late=counts.late,
                    quarantined=span_counts.get((hour_ms, partition), NO_COUNT).quarantined,
                    ranges=len(ranges),
                    data_records=sum(fact.entry.data_records for fact in ranges),
                    persisted=sum(fact.persisted for fact in ranges),
                    duplicated_offsets=span_counts.get((hour_ms, partition), NO_COUNT).duplicated_offsets,
                    active_history_hours=0 if gap is None else gap.active_history_hours,
                    longest_event_time_gap_ms=None
                    if gap is None or gap.longest_gap is None
                    else gap.longest_gap.length_ms,
                    failed_checks=tuple(sorted({finding.check for finding in here if finding.failed})),
                    reasons=tuple(dict.fromkeys(finding.reason for finding in here)),
                )
            )
    return figures
