"""The stream overview of the watermark page and `tidemark status`, from a generated ledger
history with one stalled and one idle partition (generator.ledger_history), clock injected."""

from __future__ import annotations

from generator.ledger_history import LedgerHistory
from tidemark.stall_rules import StallRules
from tidemark.stream_overview import NO_LEDGER, LedgerPoint, PartitionTotals, build_stream_overview

MINUTE = 60_000
HOUR = 60 * MINUTE
START = 1_795_000_000_000 - (1_795_000_000_000 % HOUR)
RULES = StallRules(window=6, stall_timeout_ms=30 * MINUTE, max_partition_lag_ms=HOUR)
RETENTION = 7 * 24 * HOUR
HISTORY = LedgerHistory(
    "recorded",
    partitions=4,
    start_ms=START,
    end_ms=START + 6 * HOUR,
    stalled_partition=2,
    stalled_since_ms=START + 4 * HOUR,
    idle_partition=3,
)
NOW = START + 6 * HOUR  # the last batch read at NOW - 5 min


def _points(rows) -> list[LedgerPoint]:
    return [LedgerPoint(r[2], int(r[17].timestamp() * 1000), r[5], r[6], _ms(r[13]), _ms(r[14]), r[15]) for r in rows]


def _ms(value) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _overview(**kwargs):
    settings = (
        dict(
            stream="recorded",
            points=_points(HISTORY.rows()),
            totals={0: PartitionTotals(late=5, quarantined=2)},
            partitions=range(4),
            rules=RULES,
            retention_ms=RETENTION,
            now_ms=NOW,
        )
        | kwargs
    )
    return build_stream_overview(**settings)


def test_the_stalled_partition_is_stop_the_ones_held_by_alignment_active_the_idle_one_idle():
    overview = _overview()
    assert [(p.partition, p.status) for p in overview.partitions] == [
        (0, "ACTIVE"),
        (1, "ACTIVE"),
        (2, "STOP"),
        (3, "IDLE"),
    ]
    assert [p.partition for p in overview.partitions if p.needs_attention] == [2]


def test_positions_lags_and_watermarks_are_the_ledgers_newest():
    overview = _overview()
    stalled = overview.partitions[2]
    batches_before_stall = 4 * 12  # 4 hours of 5-minute batches
    batches = 6 * 12
    assert stalled.position == 300 * batches_before_stall
    assert stalled.log_end == 300 * batches
    assert stalled.lag == 300 * (batches - batches_before_stall)
    last_read_before_stall = START + (batches_before_stall - 1) * 5 * MINUTE
    assert stalled.partition_watermark_ms == last_read_before_stall - MINUTE - 30_000 - 1
    # G froze with the stalled partition's W_p: it is the minimum over the ACTIVE partitions.
    assert overview.global_watermark_ms == stalled.partition_watermark_ms
    assert stalled.as_of_ms == START + (batches - 1) * 5 * MINUTE
    assert overview.partitions[0].totals == PartitionTotals(late=5, quarantined=2)
    assert overview.partitions[1].totals == PartitionTotals()


def test_the_log_answer_replaces_the_ledgers_log_end_and_gives_the_retention_deadline():
    oldest = START + 4 * HOUR - 30 * MINUTE
    overview = _overview(log_ends={0: 21_600, 1: 21_600, 2: 30_000, 3: 300}, oldest_unread_ms={2: oldest})
    stalled = overview.partitions[2]
    assert (stalled.log_end, stalled.lag) == (30_000, 30_000 - 300 * 48)
    assert stalled.retention_deadline_ms == oldest + RETENTION
    assert overview.partitions[3].retention_deadline_ms is None  # nothing unread
    assert overview.log_answered


def test_one_watermark_line_per_partition_then_g_and_one_lag_line_per_partition():
    overview = _overview()
    assert [line.label for line in overview.watermark_lines] == [f"partition {p}" for p in range(4)] + ["G"]
    assert [line.label for line in overview.lag_lines] == [f"partition {p}" for p in range(4)]
    g_line = overview.watermark_lines[-1].points
    assert [t for t, _ in g_line] == sorted(t for t, _ in g_line)
    assert g_line[-1] == (START + 71 * 5 * MINUTE, overview.global_watermark_ms)


def test_long_lines_are_thinned_to_the_most_points_keeping_the_newest():
    overview = _overview(max_chart_points=10)
    for line in overview.watermark_lines[:3] + overview.lag_lines:
        assert len(line.points) == 10
        assert line.points[-1][0] == START + 71 * 5 * MINUTE


def test_a_partition_without_ledger_rows_is_shown_as_such():
    overview = _overview(
        points=[p for p in _points(HISTORY.rows()) if p.partition != 1], log_ends={0: 1, 1: 40, 2: 1, 3: 1}
    )
    unread = overview.partitions[1]
    assert (unread.status, unread.position, unread.log_end, unread.lag) == (NO_LEDGER, None, 40, None)


def test_an_empty_ledger_gives_an_overview_that_says_so():
    overview = _overview(points=[])
    assert overview.ledger_rows == 0
    assert [p.status for p in overview.partitions] == [NO_LEDGER] * 4
    assert overview.global_watermark_ms is None
